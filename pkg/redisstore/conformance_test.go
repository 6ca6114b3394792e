package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// storeHarness runs the conformance suite on one store. The memory store runs on a fake
// clock and its waits are exact; Redis decides with its server's clock, so its waits are
// checked against real time elapsed and the suite really waits them out (short windows).
type storeHarness struct {
	name  string
	opts  func(t *testing.T) ratelimit.Options // ratelimit.Options with the store set
	now   func() time.Time
	sleep func(time.Duration)
}

// harnesses returns the memory, Redis and Redis Cluster harnesses; the Redis server and
// the cluster, each started on first use, live as long as parent.
func harnesses(parent *testing.T) []storeHarness {
	clock := time.Unix(1_700_000_000, 0)
	mem := storeHarness{
		name:  "memory",
		opts:  func(*testing.T) ratelimit.Options { return ratelimit.Options{} },
		now:   func() time.Time { return clock },
		sleep: func(d time.Duration) { clock = clock.Add(d) },
	}
	var srv *redistest.Server
	red := storeHarness{
		name: "redis",
		opts: func(t *testing.T) ratelimit.Options {
			if srv == nil {
				srv = redistest.Start(parent)
			}
			return ratelimit.Options{Store: newTestStore(t, srv, 0)}
		},
		now:   time.Now,
		sleep: time.Sleep, // Redis keeps time with its own clock: the suite waits for real
	}
	var cl *redistest.Cluster
	cluster := storeHarness{
		name: "redis_cluster",
		opts: func(t *testing.T) ratelimit.Options {
			if cl == nil {
				cl = redistest.StartCluster(parent, 3)
			}
			return ratelimit.Options{Store: newTestStore(t, cl, 0)}
		},
		now:   time.Now,
		sleep: time.Sleep,
	}
	return []storeHarness{mem, red, cluster}
}

// limitView is what must be identical whatever the store: every field of the ratelimit.LimitError
// but the wait, checked apart.
type limitView struct {
	Scope     ratelimit.Scope
	Kind      ratelimit.Kind
	Key       string
	Interval  time.Duration
	Limit     int64
	Window    time.Duration
	Source    string
	Estimated bool
}

func view(le *ratelimit.LimitError) limitView {
	return limitView{le.Scope, le.Kind, le.Key, le.Interval, le.Limit, le.Window, le.Source, le.Estimated}
}

// step is one admission in a scenario.
type step struct {
	endpoint string
	key      string // Request.CooldownKey: the cooldown kept per endpoint and arguments
	tokens   int64
	retry    bool
	keep     string            // keep the ticket under this name
	release  string            // release the kept ticket of this name first
	settle   int64             // settle the admitted call to this many tokens (when > 0)
	observe  *ratelimit.Signal // observe on the admitted call (times relative to now)
	sleep    bool              // wait out the previous refusal first
	want     *limitView
	wantWait time.Duration // the longest the wait may be (exact for the memory store)
	slack    time.Duration // how much shorter than wantWait, beyond the time elapsed, it may be
}

func TestStoreConformance(t *testing.T) {
	const pad = 50 * time.Millisecond
	upRefusal := func(k ratelimit.Kind, limit int64, window time.Duration) *limitView {
		return &limitView{Scope: ratelimit.ScopeProxy, Kind: k, Key: "up", Limit: limit, Window: window}
	}
	scenarios := []struct {
		name    string
		eps     []ratelimit.Endpoint
		budgets []ratelimit.Budget
		steps   []step
	}{
		{
			name: "cooldown then admission after the wait",
			eps:  []ratelimit.Endpoint{{ID: "s.a", Interval: 300 * time.Millisecond}},
			steps: []step{
				{endpoint: "s.a"},
				{endpoint: "s.a", want: &limitView{Scope: ratelimit.ScopeProxy, Kind: ratelimit.KindCooldown, Key: "s.a",
					Interval: 300 * time.Millisecond}, wantWait: 300 * time.Millisecond},
				{endpoint: "s.a", sleep: true},
			},
		},
		{
			// A script's loop: distinct arguments pass the cooldown and the budget
			// paces them; an identical repeat is the cooldown's, named by the
			// endpoint; the endpoint's own cooldown is neither charged nor checked.
			name:    "cooldown keyed on arguments: distinct ones paced by the budget, a repeat refused",
			eps:     []ratelimit.Endpoint{{ID: "s.a", Upstream: "up", Interval: time.Hour}},
			budgets: []ratelimit.Budget{{Match: "up", Requests: 3, Window: 300 * time.Millisecond, WindowPad: pad}},
			steps: []step{
				{endpoint: "s.a", key: "n=1"}, {endpoint: "s.a", key: "n=2"},
				{endpoint: "s.a", key: "n=1", want: &limitView{Scope: ratelimit.ScopeProxy, Kind: ratelimit.KindCooldown, Key: "s.a",
					Interval: time.Hour}, wantWait: time.Hour},
				{endpoint: "s.a"},
				{endpoint: "s.a", key: "n=3", want: upRefusal(ratelimit.KindRequests, 3, 300*time.Millisecond), wantWait: 300*time.Millisecond + pad},
				{endpoint: "s.a", key: "n=3", sleep: true},
			},
		},
		{
			name:    "requests: N in a window, then the wait to the oldest's expiry",
			eps:     []ratelimit.Endpoint{{ID: "s.a", Upstream: "up"}, {ID: "s.b", Upstream: "up"}, {ID: "s.c", Upstream: "up"}},
			budgets: []ratelimit.Budget{{Match: "up", Requests: 3, Window: 300 * time.Millisecond, WindowPad: pad}},
			steps: []step{
				{endpoint: "s.a"}, {endpoint: "s.b"}, {endpoint: "s.c"},
				{endpoint: "s.a", want: upRefusal(ratelimit.KindRequests, 3, 300*time.Millisecond), wantWait: 300*time.Millisecond + pad},
				{endpoint: "s.a", sleep: true},
			},
		},
		{
			name:    "tokens: estimates charged, settle refunds",
			eps:     []ratelimit.Endpoint{{ID: "s.a", Upstream: "up"}},
			budgets: []ratelimit.Budget{{Match: "up", Tokens: 1000, Window: 640 * time.Millisecond, WindowPad: -1}},
			steps: []step{
				{endpoint: "s.a", tokens: 900, settle: 100},
				{endpoint: "s.a", tokens: 800},
				{endpoint: "s.a", tokens: 200, want: upRefusal(ratelimit.KindTokens, 1000, 640*time.Millisecond),
					wantWait: 650 * time.Millisecond, slack: 10 * time.Millisecond},
				{endpoint: "s.a", tokens: 200, sleep: true},
			},
		},
		{
			name:    "minimum interval",
			eps:     []ratelimit.Endpoint{{ID: "s.a", Upstream: "up"}, {ID: "s.b", Upstream: "up"}},
			budgets: []ratelimit.Budget{{Match: "up", MinInterval: 200 * time.Millisecond}},
			steps: []step{
				{endpoint: "s.a"},
				{endpoint: "s.b", want: &limitView{Scope: ratelimit.ScopeProxy, Kind: ratelimit.KindInterval, Key: "up",
					Interval: 200 * time.Millisecond}, wantWait: 200 * time.Millisecond},
				{endpoint: "s.b", sleep: true},
			},
		},
		{
			name:    "concurrency: a released call frees its slot",
			eps:     []ratelimit.Endpoint{{ID: "s.a", Upstream: "up"}, {ID: "s.b", Upstream: "up"}},
			budgets: []ratelimit.Budget{{Match: "up", MaxConcurrent: 1}},
			steps: []step{
				{endpoint: "s.a", keep: "a"},
				{endpoint: "s.b", want: &limitView{Scope: ratelimit.ScopeProxy, Kind: ratelimit.KindConcurrency, Key: "up", Limit: 1,
					Estimated: true}, wantWait: time.Second, slack: time.Second},
				{endpoint: "s.b", release: "a"},
			},
		},
		{
			name:    "cooldown and interval: the longest wait is reported",
			eps:     []ratelimit.Endpoint{{ID: "s.a", Upstream: "up", Interval: 300 * time.Millisecond}},
			budgets: []ratelimit.Budget{{Match: "up", MinInterval: 100 * time.Millisecond}},
			steps: []step{
				{endpoint: "s.a"},
				{endpoint: "s.a", want: &limitView{Scope: ratelimit.ScopeProxy, Kind: ratelimit.KindCooldown, Key: "s.a",
					Interval: 300 * time.Millisecond}, wantWait: 300 * time.Millisecond},
			},
		},
		{
			name:    "a retry skips the cooldown, not the budget",
			eps:     []ratelimit.Endpoint{{ID: "s.a", Upstream: "up", Interval: 300 * time.Millisecond}},
			budgets: []ratelimit.Budget{{Match: "up", Requests: 2, Window: 300 * time.Millisecond, WindowPad: pad}},
			steps: []step{
				{endpoint: "s.a"},
				{endpoint: "s.a", retry: true},
				{endpoint: "s.a", retry: true, want: upRefusal(ratelimit.KindRequests, 2, 300*time.Millisecond), wantWait: 300*time.Millisecond + pad},
			},
		},
		{
			name: "a 429 blocks the upstream for every endpoint until its retry time",
			eps:  []ratelimit.Endpoint{{ID: "s.a", Upstream: "up"}, {ID: "s.b", Upstream: "up"}},
			steps: []step{
				{endpoint: "s.a", observe: &ratelimit.Signal{Status: 429, RateLimited: true, RetryAt: time.Unix(0, int64(time.Second)),
					Source: "retry-after"}},
				{endpoint: "s.b", want: &limitView{Scope: ratelimit.ScopeUpstream, Kind: ratelimit.KindLearned, Key: "up", Source: "retry-after"}, wantWait: time.Second},
				{endpoint: "s.b", sleep: true},
			},
		},
		{
			name: "a block on one quota leaves the others",
			eps:  []ratelimit.Endpoint{{ID: "s.a", Upstream: "up"}, {ID: "s.b", Upstream: "up"}},
			steps: []step{
				{endpoint: "s.a", observe: &ratelimit.Signal{Status: 429, RateLimited: true, Resource: "search", Source: "status"}},
				{endpoint: "s.a", want: &limitView{Scope: ratelimit.ScopeUpstream, Kind: ratelimit.KindLearned, Key: "up", Source: "status"}, wantWait: time.Second},
				{endpoint: "s.b"},
			},
		},
	}
	for _, h := range harnesses(t) {
		t.Run(h.name, func(t *testing.T) {
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					opts := h.opts(t)
					opts.Endpoints, opts.Budgets = sc.eps, sc.budgets
					l := newLimiter(t, opts)
					kept := map[string]*ratelimit.Ticket{}
					var lastWait time.Duration
					// the first admission of the scenario: whichever admission a wait
					// runs from (the last one for a cooldown, the oldest in the window
					// for a budget), it came no earlier than this one, so the time since
					// bounds how much the wait has run down
					var firstCharge time.Time
					for i, s := range sc.steps {
						if s.sleep {
							h.sleep(lastWait)
						}
						if s.release != "" {
							kept[s.release].ReleaseAt(h.now())
						}
						before := h.now()
						tk, err := l.AdmitAt(ratelimit.Request{Endpoint: s.endpoint, CooldownKey: s.key, Tokens: s.tokens, Retry: s.retry}, before)
						if s.want == nil {
							if err != nil {
								t.Fatalf("step %d: got %v, want admitted", i, err)
							}
							if firstCharge.IsZero() {
								firstCharge = before
							}
							if s.settle > 0 {
								tk.SettleAt(s.settle, h.now())
							}
							if s.observe != nil {
								sig := *s.observe
								if !sig.RetryAt.IsZero() {
									sig.RetryAt = h.now().Add(time.Duration(sig.RetryAt.UnixNano()))
								}
								tk.ObserveAt(sig, h.now())
							}
							if s.keep != "" {
								kept[s.keep] = &tk
							} else {
								tk.ReleaseAt(h.now())
							}
							continue
						}
						if err == nil {
							t.Fatalf("step %d: admitted, want %s refused", i, s.want.Kind)
						}
						le := limitErr(t, err)
						if diff := cmp.Diff(*s.want, view(le)); diff != "" {
							t.Errorf("step %d: ratelimit.LimitError (-want +got):\n%s", i, diff)
						}
						elapsed := h.now().Sub(firstCharge)
						if le.RetryAfter > s.wantWait || le.RetryAfter < s.wantWait-elapsed-s.slack-time.Millisecond {
							t.Errorf("step %d: RetryAfter = %v, want in [%v - %v elapsed - %v, %v]", i, le.RetryAfter,
								s.wantWait, elapsed, s.slack, s.wantWait)
						}
						lastWait = le.RetryAfter
					}
				})
			}
		})
	}
}

// TestStoreConformanceReadyAt checks ReadyAt charges nothing on either store.
func TestStoreConformanceReadyAt(t *testing.T) {
	for _, h := range harnesses(t) {
		t.Run(h.name, func(t *testing.T) {
			opts := h.opts(t)
			opts.Endpoints = []ratelimit.Endpoint{{ID: "s.a", Upstream: "up", Interval: 300 * time.Millisecond}}
			opts.Budgets = []ratelimit.Budget{{Match: "up", Requests: 1, Window: time.Second}}
			l := newLimiter(t, opts)
			for range 3 {
				if w := l.ReadyAt("s.a", h.now()); w != 0 {
					t.Fatalf("ReadyAt before any call = %v, want 0", w)
				}
			}
			if _, err := l.AdmitAt(ratelimit.Request{Endpoint: "s.a"}, h.now()); err != nil {
				t.Fatal(err)
			}
			if w := l.ReadyAt("s.a", h.now()); w <= 300*time.Millisecond || w > time.Second+ratelimit.DefaultWindowPad {
				t.Errorf("ReadyAt after a call = %v, want the request window's wait", w)
			}
			_, err := l.AdmitAt(ratelimit.Request{Endpoint: "s.a"}, h.now())
			var le *ratelimit.LimitError
			if !errors.As(err, &le) || le.Kind != ratelimit.KindRequests {
				t.Errorf("second call: got %v, want a requests refusal", err)
			}
		})
	}
}
