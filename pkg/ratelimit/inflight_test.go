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
