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
	if le.Kind != KindLearned || le.Scope != ScopeUpstream || le.Code() != CodeUpstreamRateLimit {
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
