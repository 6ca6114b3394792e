package ratelimit

import (
	"testing"
	"time"
)

// TestRateLimitedWithOthersInFlightLearnsInFlightLimit: a 429 with only Retry-After, to a
// call sent while 2 others were in flight, inferred a requests budget of 2 a window, which
// paced an upstream allowing 2 in flight to a fraction of what it serves, and the burst
// after it lapsed met a 429 again. Now it teaches at most 2 in flight (a later refusal
// only lowers it), for a minute; no requests budget.
func TestRateLimitedWithOthersInFlightLearnsInFlightLimit(t *testing.T) {
	l := learnedLimiter(t)
	var held []Ticket
	for range 3 {
		tk, err := l.AdmitAt(Request{Endpoint: "a"}, at(0))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	held[2].ObserveAt(ParseHeaders(429, hdr("Retry-After", "1"), nil, at(10*time.Millisecond)), at(10*time.Millisecond))
	for i := range held {
		held[i].ReleaseAt(at(200 * time.Millisecond))
	}
	st := l.StatusAt(at(time.Second), nil).Upstreams[0].Learned[0]
	if st.InFlight != 2 || !st.InFlightUntil.Equal(at(10*time.Millisecond+time.Minute)) || st.Inferred.Limit != 0 {
		t.Fatalf("learned %d in flight until %v, inferred %+v: want 2 until a minute after the 429, no requests budget",
			st.InFlight, st.InFlightUntil.Sub(t0), st.Inferred)
	}
	// after the block the probe goes, then one more: 2 in flight, the third waits
	probe, err := l.AdmitAt(Request{Endpoint: "a"}, at(1100*time.Millisecond))
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	probe.ObserveAt(ParseHeaders(200, hdr(), nil, at(1200*time.Millisecond)), at(1200*time.Millisecond))
	second, err := l.AdmitAt(Request{Endpoint: "b"}, at(1200*time.Millisecond))
	if err != nil {
		t.Fatalf("second in flight: %v", err)
	}
	_, err = l.AdmitAt(Request{Endpoint: "b"}, at(1200*time.Millisecond))
	if le := limitErr(t, err); le.Kind != KindLearned || le.Scope != ScopeUpstream || le.Limit != 2 || !le.Estimated {
		t.Fatalf("third in flight: %s/%s limit %d estimated %v, want learned, upstream, 2, estimated", le.Scope, le.Kind, le.Limit, le.Estimated)
	}
	// a refusal with one other in flight lowers it to 1
	second.ObserveAt(ParseHeaders(429, hdr("Retry-After", "1"), nil, at(1300*time.Millisecond)), at(1300*time.Millisecond))
	probe.ReleaseAt(at(1300 * time.Millisecond))
	second.ReleaseAt(at(1300 * time.Millisecond))
	if got := l.StatusAt(at(1400*time.Millisecond), nil).Upstreams[0].Learned[0].InFlight; got != 1 {
		t.Fatalf("after a refusal with 1 other in flight: %d in flight, want 1", got)
	}
	// a minute after the last refusal it lapses: after the probe's answer, 3 in flight
	later := at(1300*time.Millisecond + time.Minute)
	for i := range 3 {
		tk, err := l.AdmitAt(Request{Endpoint: "a"}, later)
		if err != nil {
			t.Fatalf("call %d after the learned limit lapsed: %v", i, err)
		}
		if i == 0 {
			tk.ObserveAt(ParseHeaders(200, hdr(), nil, later), later)
		}
	}
}

// TestBurstRefusalsTeachTheLeastInFlightWhateverOrderTheyAreHeard: four calls sent at
// once to an upstream allowing 2 in flight, the third and fourth refused. When the
// fourth's refusal (3 ahead of it) was heard before the third's (2 ahead), the limit
// learned was 3 and the third's could not lower it, being of the same burst; the next
// burst then met a 429 again, and that one taught a requests budget that paced the
// upstream to 3 calls a second for ten seconds (a script of 100 calls took 20 s, not 11).
// Every refusal of the burst says the upstream allows no more than were ahead of it.
func TestBurstRefusalsTeachTheLeastInFlightWhateverOrderTheyAreHeard(t *testing.T) {
	l := learnedLimiter(t)
	var held []Ticket
	for range 4 {
		tk, err := l.AdmitAt(Request{Endpoint: "a"}, at(0))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	refused := ParseHeaders(429, hdr("Retry-After", "1"), nil, at(10*time.Millisecond))
	held[3].ObserveAt(refused, at(10*time.Millisecond))
	held[2].ObserveAt(refused, at(10*time.Millisecond))
	for i := range held {
		held[i].ReleaseAt(at(200 * time.Millisecond))
	}
	st := l.StatusAt(at(time.Second), nil).Upstreams[0].Learned[0]
	if st.InFlight != 2 || st.Inferred.Limit != 0 {
		t.Fatalf("learned %d in flight, inferred %+v: want 2 in flight, no requests budget", st.InFlight, st.Inferred)
	}
}

// TestRefusalUnderAHeldInFlightLimitLowersIt: with 3 in flight learned, a call refused
// with 2 ahead of it, after a probe that had ended in the same second, taught a requests
// budget of 3 a second (the probe and the two counted in the window) and kept the limit
// of 3; the upstream allowing 2 in flight was paced to a third of what it serves for ten
// seconds. The refusal lowers the limit on calls in flight to 2 instead.
func TestRefusalUnderAHeldInFlightLimitLowersIt(t *testing.T) {
	l := learnedLimiter(t)
	var held []Ticket
	for range 4 {
		tk, err := l.AdmitAt(Request{Endpoint: "a"}, at(0))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	held[3].ObserveAt(ParseHeaders(429, hdr("Retry-After", "1"), nil, at(10*time.Millisecond)), at(10*time.Millisecond))
	for i := range held {
		held[i].ReleaseAt(at(200 * time.Millisecond))
	}
	if got := l.StatusAt(at(time.Second), nil).Upstreams[0].Learned[0].InFlight; got != 3 {
		t.Fatalf("learned %d in flight, want 3", got)
	}
	probe, err := l.AdmitAt(Request{Endpoint: "a"}, at(1100*time.Millisecond))
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	probe.ObserveAt(ParseHeaders(200, hdr(), nil, at(1200*time.Millisecond)), at(1200*time.Millisecond))
	probe.ReleaseAt(at(1200 * time.Millisecond))
	var burst []Ticket
	for i := range 3 {
		tk, err := l.AdmitAt(Request{Endpoint: "b"}, at(1200*time.Millisecond))
		if err != nil {
			t.Fatalf("call %d of 3 in flight: %v", i, err)
		}
		burst = append(burst, tk)
	}
	burst[2].ObserveAt(ParseHeaders(429, hdr("Retry-After", "1"), nil, at(1210*time.Millisecond)), at(1210*time.Millisecond))
	st := l.StatusAt(at(1300*time.Millisecond), nil).Upstreams[0].Learned[0]
	if st.InFlight != 2 || st.Inferred.Limit != 0 {
		t.Fatalf("learned %d in flight, inferred %+v: want 2 in flight, no requests budget", st.InFlight, st.Inferred)
	}
}

// TestRefusalCountsCallsThatReachedTheUpstreamFirst: three calls sent at once to an
// upstream allowing 2 in flight, the third admitted reaching it before the second, which
// was refused with 1 ahead of it. The limit learned was 1, and a script of 100 calls
// took 20 s, not 11. The two calls still waiting for their answers as the refusal came
// are what the upstream held: it learns 2.
func TestRefusalCountsCallsThatReachedTheUpstreamFirst(t *testing.T) {
	l := learnedLimiter(t)
	var held []Ticket
	for range 3 {
		tk, err := l.AdmitAt(Request{Endpoint: "a"}, at(0))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	held[1].ObserveAt(ParseHeaders(429, hdr("Retry-After", "1"), nil, at(10*time.Millisecond)), at(10*time.Millisecond))
	for i := range held {
		held[i].ReleaseAt(at(200 * time.Millisecond))
	}
	st := l.StatusAt(at(time.Second), nil).Upstreams[0].Learned[0]
	if st.InFlight != 2 || st.Inferred.Limit != 0 {
		t.Fatalf("learned %d in flight, inferred %+v: want 2 in flight, no requests budget", st.InFlight, st.Inferred)
	}
}
