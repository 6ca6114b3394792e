package upstreamtest

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// t0 is on a whole minute, so fixed windows start on it.
var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// clock is a settable test clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func TestSlidingWindowNeverMoreThanLimitInAnyWindow(t *testing.T) {
	for _, tt := range []struct {
		limit  int
		window time.Duration
	}{{1, time.Second}, {5, time.Second}, {20, 2 * time.Second}, {100, time.Minute}} {
		t.Run(strconv.Itoa(tt.limit)+"/"+tt.window.String(), func(t *testing.T) {
			s := New(Options{Model: SlidingWindow, Limit: tt.limit, Window: tt.window})
			rng := rand.New(rand.NewPCG(7, uint64(tt.limit)))
			now := t0
			var admits []time.Time
			for range 20 * tt.limit {
				// bursts and gaps: mostly steps that average half the quota's spacing, so
				// the quota is always pressed, now and then a long one
				step := time.Duration(rng.Int64N(int64(tt.window) / int64(tt.limit)))
				if rng.IntN(4*tt.limit) == 0 {
					step = time.Duration(rng.Int64N(int64(tt.window)))
				}
				now = now.Add(step)
				d := s.AdmitAt(now)
				if d.Admitted {
					admits = append(admits, now)
					continue
				}
				if d.RetryAfter <= 0 || d.RetryAfter > tt.window {
					t.Fatalf("at %v: RetryAfter %v", now.Sub(t0), d.RetryAfter)
				}
				// the wait is exact: a nanosecond earlier is refused, at the time it is admitted
				if early := s.AdmitAt(now.Add(d.RetryAfter - 1)); early.Admitted {
					t.Fatalf("at %v: admitted 1ns before RetryAfter %v", now.Sub(t0), d.RetryAfter)
				}
				now = now.Add(d.RetryAfter)
				if !s.AdmitAt(now).Admitted {
					t.Fatalf("at %v: refused after waiting RetryAfter", now.Sub(t0))
				}
				admits = append(admits, now)
			}
			if got := MaxInWindow(admits, tt.window); got != tt.limit {
				t.Errorf("most admissions in a rolling %v = %d, want exactly %d", tt.window, got, tt.limit)
			}
		})
	}
}

func TestSlidingWindowRemainingAndReset(t *testing.T) {
	s := New(Options{Model: SlidingWindow, Limit: 3, Window: time.Second})
	tests := []struct {
		at        time.Duration
		admitted  bool
		remaining int
		retry     time.Duration
		reset     time.Duration
	}{
		{0, true, 2, 0, time.Second},
		{100 * time.Millisecond, true, 1, 0, 1100 * time.Millisecond},
		{200 * time.Millisecond, true, 0, 0, 1200 * time.Millisecond},
		{300 * time.Millisecond, false, 0, 700 * time.Millisecond, 1200 * time.Millisecond},
		// the first admission leaves the window at exactly 1s
		{999 * time.Millisecond, false, 0, time.Millisecond, 1200 * time.Millisecond},
		{time.Second, true, 0, 0, 2 * time.Second},
		{1050 * time.Millisecond, false, 0, 50 * time.Millisecond, 2 * time.Second},
	}
	for _, tt := range tests {
		d := s.AdmitAt(t0.Add(tt.at))
		want := Decision{Admitted: tt.admitted, Remaining: tt.remaining, RetryAfter: tt.retry, Reset: t0.Add(tt.reset)}
		if d != want {
			t.Errorf("at %v: %+v, want %+v", tt.at, d, want)
		}
	}
}

func TestFixedWindowResetsAtBoundaries(t *testing.T) {
	s := New(Options{Model: FixedWindow, Limit: 3, Window: time.Second})
	end := t0.Add(time.Second)
	for i, at := range []time.Duration{500 * time.Millisecond, 800 * time.Millisecond, 900 * time.Millisecond} {
		d := s.AdmitAt(t0.Add(at))
		if !d.Admitted || d.Remaining != 2-i || !d.Reset.Equal(end) {
			t.Fatalf("call %d at %v: %+v", i, at, d)
		}
	}
	d := s.AdmitAt(t0.Add(950 * time.Millisecond))
	if d.Admitted || d.RetryAfter != 50*time.Millisecond || !d.Reset.Equal(end) {
		t.Fatalf("fourth call in the window: %+v, want refused for 50ms", d)
	}
	if d := s.AdmitAt(end.Add(-1)); d.Admitted {
		t.Fatal("admitted 1ns before the boundary")
	}
	// At the boundary the count starts again: the fixed window's known burst of 2×Limit
	// within one rolling window.
	var admits []time.Time
	for _, at := range []time.Duration{500, 800, 900} {
		admits = append(admits, t0.Add(at*time.Millisecond))
	}
	for i := range 3 {
		at := end.Add(time.Duration(i) * 10 * time.Millisecond)
		d := s.AdmitAt(at)
		if !d.Admitted || d.Remaining != 2-i || !d.Reset.Equal(end.Add(time.Second)) {
			t.Fatalf("call %d after the boundary: %+v", i, d)
		}
		admits = append(admits, at)
	}
	if d := s.AdmitAt(end.Add(999 * time.Millisecond)); d.Admitted || d.RetryAfter != time.Millisecond {
		t.Fatalf("fourth call in the second window: %+v", d)
	}
	if got := MaxInWindow(admits, time.Second); got != 6 {
		t.Errorf("most in a rolling second = %d, want 6 across the boundary", got)
	}
	// A window with no calls leaves no trace.
	if d := s.AdmitAt(end.Add(5*time.Second + 1)); !d.Admitted || d.Remaining != 2 {
		t.Errorf("after idle windows: %+v", d)
	}
}

func TestGCRASpacing(t *testing.T) {
	s := New(Options{Model: GCRA, Limit: 4, Window: time.Second})
	const spacing = 250 * time.Millisecond
	// Idle, it takes a burst of Limit at once.
	for i := range 4 {
		d := s.AdmitAt(t0)
		if !d.Admitted || d.Remaining != 3-i {
			t.Fatalf("burst call %d: %+v", i, d)
		}
	}
	d := s.AdmitAt(t0)
	if d.Admitted || d.RetryAfter != spacing || !d.Reset.Equal(t0.Add(time.Second)) {
		t.Fatalf("fifth call: %+v, want refused for one spacing, whole again at 1s", d)
	}
	// Then one call per spacing, exactly: a nanosecond early is refused.
	now := t0
	var admits []time.Time
	for i := range 12 {
		now = now.Add(spacing)
		if early := s.AdmitAt(now.Add(-1)); early.Admitted {
			t.Fatalf("call %d admitted 1ns early", i)
		}
		d := s.AdmitAt(now)
		if !d.Admitted || d.Remaining != 0 {
			t.Fatalf("call %d at %v: %+v", i, now.Sub(t0), d)
		}
		admits = append(admits, now)
		if again := s.AdmitAt(now); again.Admitted || again.RetryAfter != spacing {
			t.Fatalf("second call at %v: %+v, want refused for %v", now.Sub(t0), again, spacing)
		}
	}
	if got := MaxInWindow(admits, time.Second); got != 4 {
		t.Errorf("paced calls in a rolling second = %d, want 4", got)
	}
	// Idle for half a window, it regains half its burst.
	now = now.Add(500 * time.Millisecond)
	for i := range 2 {
		if d := s.AdmitAt(now); !d.Admitted {
			t.Fatalf("after half a window idle, call %d refused: %+v", i, d)
		}
	}
	if d := s.AdmitAt(now); d.Admitted {
		t.Fatalf("a third call after half a window idle was admitted: %+v", d)
	}
}

func TestNoLimitRefusesAll(t *testing.T) {
	s := New(Options{})
	if d := s.AdmitAt(t0); d.Admitted || d.RetryAfter != time.Second {
		t.Errorf("zero Options: %+v", d)
	}
}

func TestServeHTTPHeadersAndCounters(t *testing.T) {
	base := t0.Add(400 * time.Millisecond) // 1.6s before the window's reset at 2s
	tests := []struct {
		name    string
		headers Headers
		ok      map[string]string // on the last admitted answer
		limited map[string]string // on the 429
	}{
		{"none", 0,
			map[string]string{"Retry-After": "", "X-RateLimit-Remaining": "", "RateLimit": ""},
			map[string]string{"Retry-After": "", "X-RateLimit-Remaining": "", "RateLimit": ""}},
		{"retry-after seconds", RetryAfterSeconds,
			map[string]string{"Retry-After": ""},
			map[string]string{"Retry-After": "2"}},
		{"retry-after date", RetryAfterDate,
			map[string]string{"Retry-After": ""},
			map[string]string{"Retry-After": "Mon, 30 Nov 2026 10:00:03 GMT"}},
		{"x-ratelimit", XRateLimit,
			map[string]string{"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(t0.Unix()+3, 10)},
			map[string]string{"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(t0.Unix()+3, 10), "Retry-After": ""}},
		{"ietf", IETF,
			map[string]string{"RateLimit": `"default";r=0;t=2`, "RateLimit-Policy": `"default";q=2;w=2`},
			map[string]string{"RateLimit": `"default";r=0;t=2`, "RateLimit-Policy": `"default";q=2;w=2`}},
		{"all", RetryAfterSeconds | XRateLimit | IETF,
			map[string]string{"Retry-After": "", "X-RateLimit-Remaining": "0"},
			map[string]string{"Retry-After": "2", "X-RateLimit-Remaining": "0", "RateLimit": `"default";r=0;t=2`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{now: base}
			s := New(Options{Model: SlidingWindow, Limit: 2, Window: 2 * time.Second, Headers: tt.headers, Clock: c.Now})
			serve := func() *http.Response {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest("GET", "/items", nil))
				return rec.Result()
			}
			serve()
			c.now = c.now.Add(100 * time.Millisecond)
			res := serve()
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("second call: %d %v", res.StatusCode, res.Header)
			}
			checkHeaders(t, "200", res.Header, tt.ok)
			c.now = c.now.Add(100 * time.Millisecond) // 1.6s before the first admission leaves
			res = serve()
			if res.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("third call: %d, want 429", res.StatusCode)
			}
			checkHeaders(t, "429", res.Header, tt.limited)
			if s.Requests() != 3 || s.Admitted() != 2 || s.Limited() != 1 {
				t.Errorf("counters: requests %d admitted %d limited %d, want 3 2 1", s.Requests(), s.Admitted(), s.Limited())
			}
			if a, r := s.Admissions(), s.Refusals(); len(a) != 2 || !a[1].Equal(base.Add(100*time.Millisecond)) || len(r) != 1 || !r[0].Equal(c.now) {
				t.Errorf("admissions %v, refusals %v", a, r)
			}
		})
	}
}

func checkHeaders(t *testing.T, what string, h http.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s %s = %q, want %q", what, k, got, v)
		}
	}
}

// Latency and jitter are applied after counting, and a seed repeats the jitter.
func TestLatencyJitterIsSeeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		delays := func(seed uint64) []time.Duration {
			s := New(Options{Limit: 100, Window: time.Second, Latency: 100 * time.Millisecond, Jitter: 50 * time.Millisecond, Seed: seed})
			var out []time.Duration
			for range 5 {
				start := time.Now()
				s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
				d := time.Since(start)
				if d < 100*time.Millisecond || d >= 150*time.Millisecond {
					t.Errorf("delay %v outside [100ms, 150ms)", d)
				}
				out = append(out, d)
			}
			return out
		}
		a, b, c := delays(3), delays(3), delays(4)
		same := func(x, y []time.Duration) bool {
			for i := range x {
				if x[i] != y[i] {
					return false
				}
			}
			return true
		}
		if !same(a, b) {
			t.Errorf("same seed, different delays: %v %v", a, b)
		}
		if same(a, c) {
			t.Errorf("different seeds, same delays: %v", a)
		}
	})
}

func TestMaxInWindow(t *testing.T) {
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	tests := []struct {
		times []time.Time
		want  int
	}{
		{nil, 0},
		{at(0), 1},
		{at(0, 999), 2},
		{at(0, 1000), 1}, // half-open: the first has left when the second comes
		{at(0, 1, 2, 999, 1000), 4},
		{at(0, 1, 2, 1500, 1999), 3},
	}
	for _, tt := range tests {
		if got := MaxInWindow(tt.times, time.Second); got != tt.want {
			t.Errorf("MaxInWindow(%v) = %d, want %d", tt.times, got, tt.want)
		}
	}
}
