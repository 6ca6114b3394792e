package ratelimit

import (
	"errors"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func newLimiter(t testing.TB, opts Options) *Limiter {
	t.Helper()
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// limitErr asserts err is a *LimitError and returns it.
func limitErr(t testing.TB, err error) *LimitError {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) {
		t.Fatalf("got error %v, want a *LimitError", err)
	}
	if le.RetryAfter <= 0 {
		t.Fatalf("RetryAfter = %v, want > 0", le.RetryAfter)
	}
	return le
}

func TestAdmitAtBudgets(t *testing.T) {
	type call struct {
		at       time.Duration
		endpoint string
		tokens   int64
		release  bool // release the ticket right after
		wantKind Kind // empty: admitted
		wantWait time.Duration
	}
	const pad = 250 * time.Millisecond
	tests := []struct {
		name   string
		budget Budget
		iv     time.Duration
		calls  []call
	}{
		{
			name:   "requests: N in the window then the exact wait",
			budget: Budget{Requests: 3, Window: 10 * time.Second},
			calls: []call{
				{at: 0, endpoint: "a"}, {at: time.Second, endpoint: "b"}, {at: 2 * time.Second, endpoint: "c"},
				{at: 3 * time.Second, endpoint: "d", wantKind: KindRequests, wantWait: 7*time.Second + pad},
				{at: 10*time.Second + pad, endpoint: "d"},
				{at: 10*time.Second + pad, endpoint: "e", wantKind: KindRequests, wantWait: time.Second},
				{at: 11*time.Second + pad, endpoint: "e"},
			},
		},
		{
			name:   "negative pad means none",
			budget: Budget{Requests: 1, Window: time.Second, WindowPad: -1},
			calls: []call{
				{at: 0, endpoint: "a"},
				{at: 0, endpoint: "b", wantKind: KindRequests, wantWait: time.Second},
				{at: time.Second, endpoint: "b"},
			},
		},
		{
			name:   "min interval",
			budget: Budget{MinInterval: 200 * time.Millisecond},
			calls: []call{
				{at: 0, endpoint: "a"},
				{at: 50 * time.Millisecond, endpoint: "b", wantKind: KindInterval, wantWait: 150 * time.Millisecond},
				{at: 200 * time.Millisecond, endpoint: "b"},
			},
		},
		{
			name:   "tokens: estimate charged, exact wait to the bucket's expiry",
			budget: Budget{Tokens: 1000, Window: 64 * time.Second, WindowPad: -1},
			calls: []call{
				{at: 0, endpoint: "a", tokens: 600},
				{at: 500 * time.Millisecond, endpoint: "b", tokens: 400},
				// bucket width is 1s: the first charge counts until 1s+64s
				{at: 2 * time.Second, endpoint: "c", tokens: 1, wantKind: KindTokens, wantWait: 63 * time.Second},
				{at: 65 * time.Second, endpoint: "c", tokens: 600},
			},
		},
		{
			name:   "tokens: a call larger than the budget goes when the window is empty",
			budget: Budget{Tokens: 100, Window: 64 * time.Second, WindowPad: -1},
			calls: []call{
				{at: 0, endpoint: "a", tokens: 5000},
				{at: time.Second, endpoint: "b", tokens: 5000, wantKind: KindTokens, wantWait: 64 * time.Second},
				{at: 65 * time.Second, endpoint: "b", tokens: 5000},
			},
		},
		{
			name:   "concurrency: estimate of one second before any call ended",
			budget: Budget{MaxConcurrent: 1},
			calls: []call{
				{at: 0, endpoint: "a"},
				{at: 0, endpoint: "b", wantKind: KindConcurrency, wantWait: time.Second},
			},
		},
		{
			name:   "concurrency: a released call frees its slot",
			budget: Budget{MaxConcurrent: 1},
			calls: []call{
				{at: 0, endpoint: "a", release: true},
				{at: 0, endpoint: "b", release: true},
				{at: 0, endpoint: "c"},
			},
		},
		{
			name:   "cooldown with a budget: the longest wait is reported",
			budget: Budget{Requests: 1, Window: time.Minute, WindowPad: -1},
			iv:     10 * time.Second,
			calls: []call{
				{at: 0, endpoint: "a"},
				{at: time.Second, endpoint: "a", wantKind: KindRequests, wantWait: 59 * time.Second},
			},
		},
		{
			name:   "cooldown longer than the budget's wait",
			budget: Budget{MinInterval: time.Second},
			iv:     10 * time.Second,
			calls: []call{
				{at: 0, endpoint: "a"},
				{at: 500 * time.Millisecond, endpoint: "a", wantKind: KindCooldown, wantWait: 9500 * time.Millisecond},
				{at: 500 * time.Millisecond, endpoint: "b", wantKind: KindInterval, wantWait: 500 * time.Millisecond},
				{at: 10 * time.Second, endpoint: "a"},
			},
		},
		{
			name:   "a refusal charges nothing",
			budget: Budget{Requests: 2, Window: 10 * time.Second, WindowPad: -1, MinInterval: time.Second},
			iv:     time.Hour,
			calls: []call{
				{at: 0, endpoint: "a"},
				{at: 500 * time.Millisecond, endpoint: "b", wantKind: KindInterval, wantWait: 500 * time.Millisecond},
				{at: 600 * time.Millisecond, endpoint: "a", wantKind: KindCooldown, wantWait: time.Hour - 600*time.Millisecond},
				{at: time.Second, endpoint: "b"},
				{at: 2 * time.Second, endpoint: "c", wantKind: KindRequests, wantWait: 8 * time.Second},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.budget.Match = "api.example.com:443"
			var eps []Endpoint
			for _, id := range []string{"a", "b", "c", "d", "e"} {
				eps = append(eps, Endpoint{ID: id, Upstream: "api.example.com:443", Interval: tt.iv})
			}
			l := newLimiter(t, Options{Endpoints: eps, Budgets: []Budget{tt.budget}})
			for i, c := range tt.calls {
				tk, err := l.AdmitAt(Request{Endpoint: c.endpoint, Tokens: c.tokens}, at(c.at))
				if c.wantKind == "" {
					if err != nil {
						t.Fatalf("call %d (%s at %v): %v", i, c.endpoint, c.at, err)
					}
					if c.release {
						tk.ReleaseAt(at(c.at))
					}
					continue
				}
				le := limitErr(t, err)
				if le.Kind != c.wantKind || le.RetryAfter != c.wantWait {
					t.Fatalf("call %d (%s at %v): got %s %v, want %s %v", i, c.endpoint, c.at, le.Kind, le.RetryAfter, c.wantKind, c.wantWait)
				}
				if le.Scope != ScopeProxy {
					t.Fatalf("call %d: scope %s, want proxy", i, le.Scope)
				}
				if !le.RetryAt.Equal(at(c.at).Add(le.RetryAfter)) {
					t.Fatalf("call %d: RetryAt %v", i, le.RetryAt)
				}
			}
		})
	}
}

func TestLimitErrorFields(t *testing.T) {
	l := newLimiter(t, Options{
		Endpoints: []Endpoint{{ID: "petstore.getPetById", Upstream: "petstore:8080", Interval: 10 * time.Second}},
	})
	if _, err := l.AdmitAt(Request{Endpoint: "petstore.getPetById"}, at(0)); err != nil {
		t.Fatal(err)
	}
	_, err := l.AdmitAt(Request{Endpoint: "petstore.getPetById"}, at(1800*time.Millisecond))
	le := limitErr(t, err)
	want := &LimitError{Scope: ScopeProxy, Kind: KindCooldown, Key: "petstore.getPetById", Interval: 10 * time.Second,
		RetryAfter: 8200 * time.Millisecond, RetryAt: at(10 * time.Second)}
	if diff := cmp.Diff(want, le); diff != "" {
		t.Fatalf("LimitError (-want +got):\n%s", diff)
	}
	if got, want := le.Error(), "endpoint petstore.getPetById is cooling down: try again in 8.2 seconds"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if got := (&LimitError{RetryAfter: 1}).RetryAfterSeconds(); got != 0.001 {
		t.Fatalf("1ns rounds to %v seconds, want 0.001", got)
	}
	if got := (&LimitError{RetryAfter: 1500*time.Millisecond + 1}).RetryAfterSeconds(); got != 1.501 {
		t.Fatalf("1.5s+1ns rounds to %v seconds, want 1.501", got)
	}
}

func TestUnknownEndpointHoldsNoState(t *testing.T) {
	l := newLimiter(t, Options{Endpoints: []Endpoint{{ID: "a", Interval: time.Hour}}})
	for i := range 1000 {
		if _, err := l.AdmitAt(Request{Endpoint: "x" + time.Duration(i).String()}, at(0)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(*l.endpoints.Load()); n != 1 {
		t.Fatalf("%d endpoints hold state, want 1", n)
	}
}

func TestBareHostBudgetCoversAllPorts(t *testing.T) {
	l := newLimiter(t, Options{
		Budgets: []Budget{{Match: "api.example.com", Requests: 1, Window: time.Minute}},
		Endpoints: []Endpoint{
			{ID: "a", Upstream: "api.example.com:443"},
			{ID: "b", Upstream: "api.example.com:8443"},
			{ID: "c", Upstream: "other.example.com:443"},
		},
	})
	if _, err := l.AdmitAt(Request{Endpoint: "a"}, at(0)); err != nil {
		t.Fatal(err)
	}
	le := limitErr(t, func() error { _, err := l.AdmitAt(Request{Endpoint: "b"}, at(0)); return err }())
	if le.Key != "api.example.com" || le.Kind != KindRequests {
		t.Fatalf("got %s on %s, want requests on api.example.com", le.Kind, le.Key)
	}
	if _, err := l.AdmitAt(Request{Endpoint: "c"}, at(0)); err != nil {
		t.Fatalf("another host was limited: %v", err)
	}
}

// TestPropertyRollingWindow admits at random times and checks that no rolling window of
// length window+pad ever holds more than N admissions, and that waiting exactly RetryAfter
// then admits.
func TestPropertyRollingWindow(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 7))
		n := 1 + r.IntN(20)
		window := time.Duration(1+r.IntN(5000)) * time.Millisecond
		pad := time.Duration(r.IntN(300)) * time.Millisecond
		b := Budget{Match: "u", Requests: n, Window: window, WindowPad: pad}
		if pad == 0 {
			b.WindowPad = -1
		}
		if r.IntN(3) == 0 {
			b.MinInterval = time.Duration(r.IntN(100)) * time.Millisecond
		}
		l := newLimiter(t, Options{Budgets: []Budget{b}})
		span := window + pad
		var admitted []time.Time
		now := t0
		for range 2000 {
			now = now.Add(time.Duration(r.Int64N(int64(span) / int64(n) * 2)))
			tk, err := l.AdmitAt(Request{Upstream: "u"}, now)
			if err != nil {
				le := limitErr(t, err)
				if r.IntN(2) == 0 {
					continue
				}
				now = now.Add(le.RetryAfter)
				tk, err = l.AdmitAt(Request{Upstream: "u"}, now)
				if err != nil {
					t.Fatalf("seed %d: waited exactly %v (%s) and was refused: %v", seed, le.RetryAfter, le.Kind, err)
				}
			}
			tk.ReleaseAt(now)
			admitted = append(admitted, now)
		}
		for i := n; i < len(admitted); i++ {
			if d := admitted[i].Sub(admitted[i-n]); d < span {
				t.Fatalf("seed %d: %d admissions within %v (< %v)", seed, n+1, d, span)
			}
		}
	}
}

// TestPropertyTokens checks that the tokens charged within any rolling window never exceed
// the budget.
func TestPropertyTokens(t *testing.T) {
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 11))
		limit := int64(100 + r.IntN(10000))
		window := time.Duration(1+r.IntN(60)) * time.Second
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Tokens: limit, Window: window}}})
		span := window + DefaultWindowPad
		type charge struct {
			at time.Time
			n  int64
		}
		var charges []charge
		now := t0
		for range 1000 {
			now = now.Add(time.Duration(r.Int64N(int64(window) / 20)))
			tokens := 1 + r.Int64N(limit/4)
			tk, err := l.AdmitAt(Request{Upstream: "u", Tokens: tokens}, now)
			if err != nil {
				le := limitErr(t, err)
				now = now.Add(le.RetryAfter)
				if tk, err = l.AdmitAt(Request{Upstream: "u", Tokens: tokens}, now); err != nil {
					t.Fatalf("seed %d: waited exactly %v and was refused: %v", seed, le.RetryAfter, err)
				}
			}
			actual := max(tokens+r.Int64N(limit/8)-limit/16, 0)
			tk.SettleAt(actual, now)
			tk.ReleaseAt(now)
			charges = append(charges, charge{now, actual})
		}
		for i := range charges {
			var sum int64
			for j := i; j < len(charges) && charges[j].at.Sub(charges[i].at) < span; j++ {
				sum += charges[j].n
			}
			// settling more than estimated may overshoot by the difference, never the
			// estimates themselves
			if sum > limit+limit/8 {
				t.Fatalf("seed %d: %d tokens in a window, limit %d", seed, sum, limit)
			}
		}
	}
}

func TestStressSharedKeys(t *testing.T) {
	const n = 10
	l := newLimiter(t, Options{
		Budgets:   []Budget{{Match: "u", Requests: n, Window: time.Second, MaxConcurrent: 4}},
		Endpoints: []Endpoint{{ID: "a", Upstream: "u", Interval: 100 * time.Millisecond}, {ID: "b", Upstream: "u"}},
	})
	var mu sync.Mutex
	var times []time.Time
	var clock atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				now := t0.Add(time.Duration(clock.Add(int64(time.Millisecond))))
				ep := "b"
				if (g+i)%3 == 0 {
					ep = "a"
				}
				tk, err := l.AdmitAt(Request{Endpoint: ep}, now)
				if err != nil {
					continue
				}
				mu.Lock()
				times = append(times, now)
				mu.Unlock()
				if i%5 == 0 {
					l.StatusAt(now, nil)
				}
				tk.ReleaseAt(now)
			}
		})
	}
	wg.Wait()
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	for i := n; i < len(times); i++ {
		if d := times[i].Sub(times[i-n]); d < time.Second {
			// the log records max(now, newest), so admissions out of order are still safe
			t.Fatalf("%d admissions within %v", n+1, d)
		}
	}
	if len(times) == 0 {
		t.Fatal("nothing admitted")
	}
}

func TestRuntimeTuningKeepsState(t *testing.T) {
	l := newLimiter(t, Options{
		Budgets:   []Budget{{Match: "u", Requests: 2, Window: 10 * time.Second, WindowPad: -1}},
		Endpoints: []Endpoint{{ID: "a", Upstream: "u", Interval: time.Second}, {ID: "b", Upstream: "u"}},
	})
	for _, ep := range []string{"a", "b"} {
		if _, err := l.AdmitAt(Request{Endpoint: ep}, at(0)); err != nil {
			t.Fatal(err)
		}
	}
	// lowering the budget keeps the two calls counted
	if err := l.SetBudget(Budget{Match: "u", Requests: 1, Window: 20 * time.Second, WindowPad: -1}); err != nil {
		t.Fatal(err)
	}
	le := limitErr(t, func() error { _, err := l.AdmitAt(Request{Endpoint: "b"}, at(5*time.Second)); return err }())
	if le.Kind != KindRequests || le.RetryAfter != 15*time.Second || le.Limit != 1 {
		t.Fatalf("got %s %v limit %d, want requests 15s limit 1", le.Kind, le.RetryAfter, le.Limit)
	}
	// raising it frees room at once
	if err := l.SetBudget(Budget{Match: "u", Requests: 5, Window: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AdmitAt(Request{Endpoint: "b"}, at(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	// the cooldown keeps its last admission across an interval change
	if err := l.SetCooldown("a", time.Minute); err != nil {
		t.Fatal(err)
	}
	le = limitErr(t, func() error { _, err := l.AdmitAt(Request{Endpoint: "a"}, at(30*time.Second)); return err }())
	if le.Kind != KindCooldown || le.RetryAfter != 30*time.Second {
		t.Fatalf("got %s %v, want cooldown 30s", le.Kind, le.RetryAfter)
	}
	if err := l.SetCooldown("nope", time.Second); !errors.Is(err, ErrUnknownEndpoint) {
		t.Fatalf("SetCooldown on an unknown id: %v", err)
	}
}

func TestNewRejectsBadBudgets(t *testing.T) {
	for _, b := range []Budget{
		{Match: "u", Requests: -1},
		{Match: "u", MinInterval: -time.Second},
		{Match: "u", OnLimit: 7},
		{Requests: 1},
	} {
		if _, err := New(Options{Budgets: []Budget{b}}); err == nil {
			t.Errorf("New accepted %+v", b)
		}
	}
	if _, err := New(Options{Budgets: []Budget{{Match: "u"}, {Match: "u"}}}); err == nil {
		t.Error("New accepted a duplicate match")
	}
}

func TestStatus(t *testing.T) {
	l := newLimiter(t, Options{
		Budgets:   []Budget{{Match: "u", Requests: 3, Window: 10 * time.Second, Tokens: 1000}},
		Endpoints: []Endpoint{{ID: "s.a", Upstream: "u", Interval: 5 * time.Second}, {ID: "t.b", Upstream: "v"}},
	})
	tk, err := l.AdmitAt(Request{Endpoint: "s.a", Tokens: 100}, at(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AdmitAt(Request{Endpoint: "s.a"}, at(time.Second)); err == nil {
		t.Fatal("cooldown did not refuse")
	}
	st := l.StatusAt(at(2*time.Second), func(id string) bool { return id == "s.a" })
	if len(st.Endpoints) != 1 || len(st.Upstreams) != 1 {
		t.Fatalf("filtered status has %d endpoints and %d upstreams, want 1 and 1", len(st.Endpoints), len(st.Upstreams))
	}
	e := st.Endpoints[0]
	if e.Upstream != "u" || !e.CooldownUntil.Equal(at(5*time.Second)) || e.Wait != 3*time.Second || e.Admitted != 1 || e.Refused != 1 {
		t.Fatalf("endpoint status %+v", e)
	}
	u := st.Upstreams[0]
	if u.RequestsUsed != 1 || u.RequestsRemaining != 2 || u.TokensUsed != 100 || u.InFlight != 1 || u.Admitted != 1 {
		t.Fatalf("upstream status %+v", u)
	}
	if u.Refused[KindCooldown] != 1 || u.RefusedByScope[ScopeProxy] != 1 || len(u.QueueRefused) != 0 {
		t.Fatalf("refusal counts %v %v %v", u.Refused, u.RefusedByScope, u.QueueRefused)
	}
	tk.ReleaseAt(at(2 * time.Second))
	all := l.StatusAt(at(2*time.Second), nil)
	if len(all.Endpoints) != 2 || len(all.Upstreams) != 2 {
		t.Fatalf("status has %d endpoints and %d upstreams, want 2 and 2", len(all.Endpoints), len(all.Upstreams))
	}
}

func BenchmarkAdmitAtCooldownAndRequests(b *testing.B) {
	var eps []Endpoint
	for i := range 1000 {
		eps = append(eps, Endpoint{ID: "github.op" + time.Duration(i).String(), Upstream: "api.github.com:443", Interval: 10 * time.Second})
	}
	opts := Options{
		Endpoints: eps,
		Budgets:   []Budget{{Match: "api.github.com", Requests: 5000, Window: time.Hour}},
	}
	b.Run("admitted", func(b *testing.B) {
		l := newLimiter(b, opts)
		b.ReportAllocs()
		now := t0
		i := 0
		for b.Loop() {
			now = now.Add(time.Second) // inside the budget: 3600 an hour
			tk, err := l.AdmitAt(Request{Endpoint: eps[i%len(eps)].ID}, now)
			if err != nil {
				b.Fatal(err)
			}
			tk.ReleaseAt(now)
			i++
		}
	})
	b.Run("refused", func(b *testing.B) {
		l := newLimiter(b, opts)
		b.ReportAllocs()
		now := t0
		if _, err := l.AdmitAt(Request{Endpoint: eps[0].ID}, now); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := l.AdmitAt(Request{Endpoint: eps[0].ID}, now); err == nil {
				b.Fatal("admitted")
			}
		}
	})
}

func TestAdmitAtConcurrentOnOneEndpointAdmitsOne(t *testing.T) {
	l := newLimiter(t, Options{
		Budgets:   []Budget{{Match: "u", Requests: 1000, Window: time.Minute}},
		Endpoints: []Endpoint{{ID: "a", Upstream: "u", Interval: 10 * time.Second}},
	})
	var admitted atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 64 {
		wg.Go(func() {
			<-start
			if tk, err := l.AdmitAt(Request{Endpoint: "a"}, at(0)); err == nil {
				admitted.Add(1)
				tk.ReleaseAt(at(0))
			}
		})
	}
	close(start)
	wg.Wait()
	if got := admitted.Load(); got != 1 {
		t.Fatalf("%d admitted, want 1", got)
	}
}

// A retry of an admitted call is not refused by the cooldown its first
// attempt charged, but still pays the upstream's budget.
func TestRetrySkipsCooldownNotBudget(t *testing.T) {
	l := newLimiter(t, Options{
		Endpoints: []Endpoint{{ID: "api.get", Upstream: "api:443", Interval: 10 * time.Second}, {ID: "api.solo", Interval: 10 * time.Second}},
		Budgets:   []Budget{{Match: "api:443", Requests: 2, Window: time.Minute}},
	})
	now := time.Unix(1000, 0)
	first, err := l.AdmitAt(Request{Endpoint: "api.get"}, now)
	if err != nil {
		t.Fatal(err)
	}
	first.ReleaseAt(now)
	if _, err := l.AdmitAt(Request{Endpoint: "api.get"}, now.Add(time.Second)); err == nil {
		t.Fatal("a second call within the cooldown was admitted")
	}
	retry, err := l.AdmitAt(Request{Endpoint: "api.get", Retry: true}, now.Add(time.Second))
	if err != nil {
		t.Fatalf("retry refused: %v", err)
	}
	retry.ReleaseAt(now.Add(time.Second))
	_, err = l.AdmitAt(Request{Endpoint: "api.get", Retry: true}, now.Add(2*time.Second))
	var le *LimitError
	if !errors.As(err, &le) || le.Kind != KindRequests {
		t.Fatalf("third call: err = %v, want the requests budget to refuse", err)
	}
	// Without an upstream, too.
	if _, err := l.AdmitAt(Request{Endpoint: "api.solo"}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AdmitAt(Request{Endpoint: "api.solo", Retry: true}, now.Add(time.Second)); err != nil {
		t.Fatalf("retry without upstream refused: %v", err)
	}
}

func TestRegisteringEndpointsOneByOneCopiesMaps(t *testing.T) {
	l := newLimiter(t, Options{Endpoints: []Endpoint{{ID: "s.a", Upstream: "u", Interval: 10 * time.Second}}})
	if _, err := l.AdmitAt(Request{Endpoint: "s.a"}, at(0)); err != nil {
		t.Fatal(err)
	}
	err := l.SetEndpoints([]Endpoint{
		{ID: "s.a", Upstream: "u", Interval: 5 * time.Second}, // keeps its last admission
		{ID: "s.b", Upstream: "u", Interval: time.Second},
		{ID: "t.c", Upstream: "v:443"},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.AdmitAt(Request{Endpoint: "s.a"}, at(time.Second))
	if le := limitErr(t, err); le.Kind != KindCooldown || le.RetryAfter != 4*time.Second {
		t.Fatalf("got %s %v, want the cooldown of the new interval from the kept admission", le.Kind, le.RetryAfter)
	}
	st := l.StatusAt(at(time.Second), nil)
	ups := map[string]string{}
	for _, e := range st.Endpoints {
		ups[e.ID] = e.Upstream
	}
	if ups["s.b"] != "u" || ups["t.c"] != "v:443" || len(ups) != 3 {
		t.Fatalf("endpoints and their upstreams: %v", ups)
	}
	if iv, ok := l.cooldown.Interval("s.b"); !ok || iv != time.Second {
		t.Fatalf("cooldown of s.b: %v %v", iv, ok)
	}
	// a bad endpoint anywhere registers none of them
	if err := l.SetEndpoints([]Endpoint{{ID: "s.d"}, {ID: "s.e", Interval: -1}}); err == nil {
		t.Fatal("negative interval accepted")
	}
	if _, ok := l.cooldown.Interval("s.d"); ok {
		t.Fatal("s.d registered although the call failed")
	}
}

// BenchmarkRegisterEndpoints registers 5,000 endpoints on 10 upstreams in a new Limiter:
// one SetEndpoints (what New and cmd do) against 5,000 SetEndpoint calls.
func BenchmarkRegisterEndpoints(b *testing.B) {
	eps := make([]Endpoint, 5000)
	for i := range eps {
		eps[i] = Endpoint{ID: "spec" + strconv.Itoa(i%10) + ".op" + strconv.Itoa(i), Upstream: "api" + strconv.Itoa(i%10) + ".example.com:443", Interval: 10 * time.Second}
	}
	b.Run("bulk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l := newLimiter(b, Options{})
			if err := l.SetEndpoints(eps); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-by-one", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l := newLimiter(b, Options{})
			for _, e := range eps {
				if err := l.SetEndpoint(e); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
