package ratelimit

import (
	"net/http"
	"testing"
	"time"
)

// observed admits one call to e at now, feeds it the answer and releases it.
func observed(t *testing.T, l *Limiter, e string, now time.Time, status int, h http.Header, body string) {
	t.Helper()
	tk, err := l.AdmitAt(Request{Endpoint: e}, now)
	if err != nil {
		t.Fatalf("admit %s at %v: %v", e, now.Sub(t0), err)
	}
	tk.ObserveAt(ParseHeaders(status, h, []byte(body), now), now)
	tk.ReleaseAt(now)
}

func learnedLimiter(t *testing.T) *Limiter {
	return newLimiter(t, Options{Endpoints: []Endpoint{
		{ID: "a", Upstream: "api.example.com:443"},
		{ID: "b", Upstream: "api.example.com:443"},
		{ID: "other", Upstream: "elsewhere:443"},
	}})
}

func wantLearned(t *testing.T, l *Limiter, e string, now time.Time, wait time.Duration, source string) {
	t.Helper()
	_, err := l.AdmitAt(Request{Endpoint: e}, now)
	le := limitErr(t, err)
	if le.Kind != KindLearned || le.Scope != ScopeUpstream {
		t.Fatalf("got %s/%s, want upstream learned", le.Scope, le.Kind)
	}
	if le.RetryAfter != wait || le.Source != source {
		t.Fatalf("got wait %v source %q, want %v %q", le.RetryAfter, le.Source, wait, source)
	}
	if _, err := l.AdmitAt(Request{Endpoint: e}, now.Add(le.RetryAfter)); err != nil {
		t.Fatalf("waiting exactly RetryAfter: %v", err)
	}
}

func Test429BlocksUpstreamUntilRetry(t *testing.T) {
	l := learnedLimiter(t)
	observed(t, l, "a", at(0), 429, hdr("Retry-After", "30"), "")
	// another endpoint on the same upstream is held too: the same 429 is not hit twice
	wantLearned(t, l, "b", at(time.Second), 29*time.Second, "retry-after")
	if _, err := l.AdmitAt(Request{Endpoint: "other"}, at(time.Second)); err != nil {
		t.Fatalf("another upstream was held: %v", err)
	}
	st := l.StatusAt(at(time.Second), func(id string) bool { return id == "a" })
	if u := st.Upstreams[0]; u.RateLimitedAnswers != 1 || u.Learned[0].BlockSource != "retry-after" {
		t.Fatalf("status %+v", u)
	}
}

func Test429WithoutRetryAfterBlocksOneSecond(t *testing.T) {
	l := learnedLimiter(t)
	observed(t, l, "a", at(0), 429, hdr(), "")
	wantLearned(t, l, "b", at(0), time.Second, "status")
}

func TestGitHub403RateLimitBlocksUntilReset(t *testing.T) {
	l := learnedLimiter(t)
	reset := itoa(at(10 * time.Minute).Unix())
	observed(t, l, "a", at(0), 403, hdr("X-RateLimit-Limit", "60", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset), `{"message":"API rate limit exceeded"}`)
	wantLearned(t, l, "b", at(time.Minute), 9*time.Minute, "x-ratelimit-remaining")
}

func TestRemainingZeroHoldsUntilReset(t *testing.T) {
	l := learnedLimiter(t)
	observed(t, l, "a", at(0), 200, hdr("X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "20"), "")
	wantLearned(t, l, "b", at(5*time.Second), 15*time.Second, "x-ratelimit-remaining")
}

func TestRemainingCountsDownWithInFlightCalls(t *testing.T) {
	l := learnedLimiter(t)
	// two calls in flight when the first answer says 3 remain
	t1, err := l.AdmitAt(Request{Endpoint: "a"}, at(0))
	if err != nil {
		t.Fatal(err)
	}
	t2, err := l.AdmitAt(Request{Endpoint: "b"}, at(0))
	if err != nil {
		t.Fatal(err)
	}
	t1.ObserveAt(ParseHeaders(200, hdr("X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "3", "X-RateLimit-Reset", "60"), nil, at(time.Second)), at(time.Second))
	t1.ReleaseAt(at(time.Second))
	// 3 remain, one of them may be t2's: two more go, the third is held
	for i := range 2 {
		tk, err := l.AdmitAt(Request{Endpoint: "a"}, at(2*time.Second))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		tk.ReleaseAt(at(2 * time.Second))
	}
	wantLearned(t, l, "a", at(2*time.Second), 59*time.Second, "x-ratelimit-remaining")
	// a late answer claiming more room in the same window does not loosen the count
	t2.ObserveAt(ParseHeaders(200, hdr("X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "8", "X-RateLimit-Reset", "59"), nil, at(2*time.Second)), at(2*time.Second))
	t2.ReleaseAt(at(2 * time.Second))
}

func TestLearnedBudgetRollsOver(t *testing.T) {
	l := learnedLimiter(t)
	// a fresh window of 3 per 10s, stated by the IETF policy
	observed(t, l, "a", at(0), 200, hdr("RateLimit", `"default";r=2;t=10`, "RateLimit-Policy", `"default";q=3;w=10`), "")
	observed(t, l, "a", at(time.Second), 200, hdr(), "")
	observed(t, l, "a", at(2*time.Second), 200, hdr(), "")
	wantLearned(t, l, "b", at(3*time.Second), 7*time.Second, "ratelimit")
	// the next window (10s..20s) has the full limit again, counted down locally; the
	// wantLearned above took one at 10s
	for i := range 2 {
		observed(t, l, "a", at(11*time.Second+time.Duration(i)), 200, hdr(), "")
	}
	wantLearned(t, l, "a", at(12*time.Second), 8*time.Second, "ratelimit")
}

func TestLearnedWindowInferredFromReset(t *testing.T) {
	l := learnedLimiter(t)
	// 5 per window, reset in 58s: the window is taken as one minute
	observed(t, l, "a", at(0), 200, hdr("X-RateLimit-Limit", "5", "X-RateLimit-Remaining", "4", "X-RateLimit-Reset", "58"), "")
	st := l.StatusAt(at(0), func(id string) bool { return id == "a" })
	if got := st.Upstreams[0].Learned[0].Requests.Window; got != time.Minute {
		t.Fatalf("inferred window %v, want 1m", got)
	}
}

func TestGitHubResourcesLearnedApart(t *testing.T) {
	l := learnedLimiter(t)
	reset := itoa(at(time.Minute).Unix())
	// "a" is a search endpoint and spends the search quota; "b" calls core
	observed(t, l, "a", at(0), 200, hdr("X-RateLimit-Limit", "30", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset, "X-RateLimit-Resource", "search"), "")
	observed(t, l, "b", at(0), 200, hdr("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", reset, "X-RateLimit-Resource", "core"), "")
	wantLearned(t, l, "a", at(time.Second), 59*time.Second, "x-ratelimit-remaining")
	if _, err := l.AdmitAt(Request{Endpoint: "b"}, at(time.Second)); err != nil {
		t.Fatalf("core endpoint held by the search quota: %v", err)
	}
}

func TestLearnedLimitsOnlyTighten(t *testing.T) {
	l := newLimiter(t, Options{
		Budgets:   []Budget{{Match: "u", Requests: 2, Window: time.Minute, WindowPad: -1}},
		Endpoints: []Endpoint{{ID: "a", Upstream: "u"}},
	})
	observed(t, l, "a", at(0), 200, hdr("X-RateLimit-Limit", "1000", "X-RateLimit-Remaining", "999", "X-RateLimit-Reset", "60"), "")
	observed(t, l, "a", at(time.Second), 200, hdr(), "")
	_, err := l.AdmitAt(Request{Endpoint: "a"}, at(2*time.Second))
	if le := limitErr(t, err); le.Kind != KindRequests || le.Scope != ScopeProxy {
		t.Fatalf("got %s/%s, want the configured budget to hold", le.Scope, le.Kind)
	}
}

func TestLearnedTokens(t *testing.T) {
	l := learnedLimiter(t)
	tk, err := l.AdmitAt(Request{Endpoint: "a", Tokens: 100}, at(0))
	if err != nil {
		t.Fatal(err)
	}
	tk.ObserveAt(ParseHeaders(200, hdr("X-Ratelimit-Limit-Tokens", "1000", "X-Ratelimit-Remaining-Tokens", "150", "X-Ratelimit-Reset-Tokens", "6s"), nil, at(0)), at(0))
	tk.ReleaseAt(at(0))
	if _, err := l.AdmitAt(Request{Endpoint: "a", Tokens: 100}, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = l.AdmitAt(Request{Endpoint: "b", Tokens: 100}, at(time.Second))
	if le := limitErr(t, err); le.Kind != KindLearned || le.RetryAfter != 5*time.Second || le.Source != "x-ratelimit-remaining-tokens" {
		t.Fatalf("got %s %v %q", le.Kind, le.RetryAfter, le.Source)
	}
}

func TestRemainingNotDoubleCountedForCallsAdmittedBefore(t *testing.T) {
	l := learnedLimiter(t)
	var tks []Ticket
	for i := range 3 {
		tk, err := l.AdmitAt(Request{Endpoint: "a"}, at(0))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		tks = append(tks, tk)
	}
	// the last call admitted answers first; the two admitted before it reached the
	// upstream first and are in the remaining it advertised already
	h := hdr("X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "7", "X-RateLimit-Reset", "60")
	tks[2].ObserveAt(ParseHeaders(200, h, nil, at(time.Second)), at(time.Second))
	tks[2].ReleaseAt(at(time.Second))
	for i := range 7 {
		tk, err := l.AdmitAt(Request{Endpoint: "a"}, at(2*time.Second))
		if err != nil {
			t.Fatalf("call %d of the 7 remaining: %v", i, err)
		}
		tk.ReleaseAt(at(2 * time.Second))
	}
	wantLearned(t, l, "a", at(2*time.Second), 59*time.Second, "x-ratelimit-remaining")
}

func TestLearnedWindowNotStretchedByWholeSecondReset(t *testing.T) {
	tests := []struct {
		name       string
		sent, seen time.Duration
		reset      time.Duration // from t0, sent as epoch seconds
		want       time.Duration
	}{
		// a sliding 2s window counted the call at 0.3s and said ceil(2.3s): 3s
		{"2s rounded up to the second", 300 * time.Millisecond, 310 * time.Millisecond, 3 * time.Second, 2 * time.Second},
		{"2s answered slowly", 300 * time.Millisecond, 900 * time.Millisecond, 3 * time.Second, 2 * time.Second},
		{"1m rounded up to the second", 300 * time.Millisecond, 320 * time.Millisecond, 61 * time.Second, time.Minute},
		{"1h rounded up to the second", 500 * time.Millisecond, 510 * time.Millisecond, time.Hour + time.Second, time.Hour},
		// never shorter than the reset allows
		{"reset just ahead", 900 * time.Millisecond, 910 * time.Millisecond, time.Second, time.Second},
		{"not a usual length", 0, 10 * time.Millisecond, 43 * time.Second, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := learnedLimiter(t)
			tk, err := l.AdmitAt(Request{Endpoint: "a"}, at(tt.sent))
			if err != nil {
				t.Fatal(err)
			}
			h := hdr("X-RateLimit-Limit", "20", "X-RateLimit-Remaining", "19", "X-RateLimit-Reset", itoa(at(tt.reset).Unix()))
			tk.ObserveAt(ParseHeaders(200, h, nil, at(tt.seen)), at(tt.seen))
			tk.ReleaseAt(at(tt.seen))
			st := l.StatusAt(at(tt.seen), func(id string) bool { return id == "a" })
			if got := st.Upstreams[0].Learned[0].Requests.Window; got != tt.want {
				t.Fatalf("inferred window %v, want %v", got, tt.want)
			}
		})
	}
}

// wantProbeHold checks that a call to e at now waits for the probe's answer.
func wantProbeHold(t *testing.T, l *Limiter, e string, now time.Time) {
	t.Helper()
	_, err := l.AdmitAt(Request{Endpoint: e}, now)
	le := limitErr(t, err)
	if le.Kind != KindLearned || le.Scope != ScopeUpstream || !le.Estimated {
		t.Fatalf("got %s/%s estimated %v, want an upstream learned hold for the probe", le.Scope, le.Kind, le.Estimated)
	}
}

func TestAllQueuedCallsGoAtOnceAfter429Block(t *testing.T) {
	answer := func(t *testing.T, tk *Ticket, now time.Time, status int, h http.Header) {
		t.Helper()
		tk.ObserveAt(ParseHeaders(status, h, nil, now), now)
		tk.ReleaseAt(now)
	}
	setup := func(t *testing.T) (*Limiter, Ticket) {
		t.Helper()
		l := learnedLimiter(t)
		observed(t, l, "a", at(0), 429, hdr("Retry-After", "2"), "")
		wantLearned0 := func() {
			_, err := l.AdmitAt(Request{Endpoint: "b"}, at(time.Second))
			if le := limitErr(t, err); le.Kind != KindLearned || le.RetryAfter != time.Second || le.Estimated {
				t.Fatalf("during the block: got %s %v estimated %v", le.Kind, le.RetryAfter, le.Estimated)
			}
		}
		wantLearned0()
		probe, err := l.AdmitAt(Request{Endpoint: "a"}, at(2*time.Second))
		if err != nil {
			t.Fatalf("the probe after the block: %v", err)
		}
		wantProbeHold(t, l, "b", at(2*time.Second))
		if st := l.StatusAt(at(2*time.Second), nil); !st.Upstreams[0].Learned[0].Probing {
			t.Fatal("status does not say a probe is in flight")
		}
		if _, err := l.AdmitAt(Request{Endpoint: "other"}, at(2*time.Second)); err != nil {
			t.Fatalf("another upstream waits for the probe: %v", err)
		}
		return l, probe
	}
	t.Run("probe answered", func(t *testing.T) {
		l, probe := setup(t)
		answer(t, &probe, at(2100*time.Millisecond), 200, hdr())
		for i := range 5 {
			tk, err := l.AdmitAt(Request{Endpoint: "b"}, at(2100*time.Millisecond))
			if err != nil {
				t.Fatalf("call %d after the probe's answer: %v", i, err)
			}
			tk.ReleaseAt(at(2100 * time.Millisecond))
		}
	})
	t.Run("probe refused", func(t *testing.T) {
		l, probe := setup(t)
		answer(t, &probe, at(2100*time.Millisecond), 429, hdr("Retry-After", "1"))
		wantLearned(t, l, "b", at(2100*time.Millisecond), time.Second, "retry-after") // b is the next probe
		wantProbeHold(t, l, "a", at(3100*time.Millisecond))
	})
	t.Run("probe ended without an answer", func(t *testing.T) {
		l, probe := setup(t)
		probe.ReleaseAt(at(2100 * time.Millisecond)) // say, the connection was refused
		next, err := l.AdmitAt(Request{Endpoint: "b"}, at(2100*time.Millisecond))
		if err != nil {
			t.Fatalf("the next probe: %v", err)
		}
		wantProbeHold(t, l, "a", at(2100*time.Millisecond))
		answer(t, &next, at(2200*time.Millisecond), 200, hdr())
		if _, err := l.AdmitAt(Request{Endpoint: "a"}, at(2200*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRetryAfterOnlyUpstreamHit429EveryWindow(t *testing.T) {
	l := learnedLimiter(t)
	// five calls pass in 0.4s, the sixth is refused with only Retry-After: 2
	for i := range 5 {
		observed(t, l, "a", at(time.Duration(i)*100*time.Millisecond), 200, hdr(), "")
	}
	observed(t, l, "a", at(500*time.Millisecond), 429, hdr("Retry-After", "2"), "")
	// the block ends at 2.5s; at 5s, when the old calls left every window, the probe and
	// four more go: five per 2s (plus the 250ms pad) was learned
	probe, err := l.AdmitAt(Request{Endpoint: "a"}, at(5*time.Second))
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	probe.ObserveAt(ParseHeaders(200, hdr(), nil, at(5*time.Second)), at(5*time.Second))
	probe.ReleaseAt(at(5 * time.Second))
	for i := range 4 {
		observed(t, l, "b", at(5*time.Second), 200, hdr(), "")
		_ = i
	}
	_, err = l.AdmitAt(Request{Endpoint: "b"}, at(5*time.Second))
	le := limitErr(t, err)
	if le.Kind != KindLearned || le.Scope != ScopeUpstream || le.Limit != 5 || le.Window != 2*time.Second ||
		le.RetryAfter != 2250*time.Millisecond || le.Source != "retry-after" || le.Estimated {
		t.Fatalf("got %s/%s limit %d per %v, wait %v, source %q", le.Scope, le.Kind, le.Limit, le.Window, le.RetryAfter, le.Source)
	}
	st := l.StatusAt(at(5*time.Second), nil)
	if inf := st.Upstreams[0].Learned[0].Inferred; inf.Limit != 5 || inf.Window != 2*time.Second || !inf.Until.Equal(at(20500*time.Millisecond)) {
		t.Fatalf("status %+v", inf)
	}
	if _, err := l.AdmitAt(Request{Endpoint: "other"}, at(5*time.Second)); err != nil {
		t.Fatalf("another upstream held: %v", err)
	}
	// ten windows after the 429 with no other, the inferred budget is dropped
	for i := range 8 {
		tk, err := l.AdmitAt(Request{Endpoint: "a"}, at(21*time.Second))
		if err != nil {
			t.Fatalf("call %d after the inferred budget lapsed: %v", i, err)
		}
		tk.ReleaseAt(at(21 * time.Second))
	}
}

func TestInferredBudgetOnlyTightens(t *testing.T) {
	l := learnedLimiter(t)
	for i := range 5 {
		observed(t, l, "a", at(time.Duration(i)*100*time.Millisecond), 200, hdr(), "")
	}
	// two refused calls in flight: the later one, with more calls before it, answers first
	t1, _ := l.AdmitAt(Request{Endpoint: "a"}, at(500*time.Millisecond))
	t2, _ := l.AdmitAt(Request{Endpoint: "a"}, at(600*time.Millisecond))
	t2.ObserveAt(ParseHeaders(429, hdr("Retry-After", "2"), nil, at(700*time.Millisecond)), at(700*time.Millisecond))
	t1.ObserveAt(ParseHeaders(429, hdr("Retry-After", "2"), nil, at(710*time.Millisecond)), at(710*time.Millisecond))
	t1.ReleaseAt(at(time.Second))
	t2.ReleaseAt(at(time.Second))
	st := l.StatusAt(at(time.Second), nil)
	if got := st.Upstreams[0].Learned[0].Inferred.Limit; got != 5 {
		t.Fatalf("inferred limit %d, want 5 (the calls before the first refused one)", got)
	}
}

// A Retry-After far beyond any sane wait (a long ban, or garbage) blocks the upstream for
// MaxRetryAfter, not for the one-second minimum: the ban is not hit again every second.
// A negative one is read as absent.
func TestRetryAfterFarFutureBlocks(t *testing.T) {
	for _, v := range []string{"999999999", "1e26", "1e400", "Fri, 31 Dec 9999 23:59:59 GMT"} {
		t.Run(v, func(t *testing.T) {
			l := learnedLimiter(t)
			observed(t, l, "a", at(0), 429, hdr("Retry-After", v), "")
			wantLearned(t, l, "b", at(time.Second), MaxRetryAfter-time.Second, "retry-after")
			st := l.StatusAt(at(time.Second), func(string) bool { return true })
			if got := st.Upstreams[0].Learned[0].BlockedUntil; !got.Equal(at(MaxRetryAfter)) {
				t.Errorf("blocked until %v, want %v", got, at(MaxRetryAfter))
			}
		})
	}
	t.Run("-5", func(t *testing.T) {
		l := learnedLimiter(t)
		observed(t, l, "a", at(0), 429, hdr("Retry-After", "-5"), "")
		wantLearned(t, l, "b", at(0), time.Second, "status")
	})
}
