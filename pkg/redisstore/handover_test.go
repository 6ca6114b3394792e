package redisstore

import (
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// TestHandOverSharesTheRemainderBetweenReplicas: two of three replicas run on their
// fallback shares while the store is away; when it answers again, all three call at
// once. The replica that had not noticed (or, after a reset, the one that had spent
// least of its share) took the window's remainder as fast as its queue woke: 7 of the 11
// left after a flap, 6 of 14 after a restart, where a third is fair. The store hands the
// remainder over in parts, ceil(remainder / replicas) each.
func TestHandOverSharesTheRemainderBetweenReplicas(t *testing.T) {
	const (
		share    = 0.34
		limit    = 20
		window   = time.Minute
		fallback = 3 // admitted by replicas 0 and 1 on their shares
	)
	opts := ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
		Budgets:   []ratelimit.Budget{{Match: "up", Requests: limit, Window: window, WindowPad: -1}},
	}
	admitAt := func(l *ratelimit.Limiter, at time.Time) bool {
		tk, err := l.AdmitAt(ratelimit.Request{Endpoint: "svc.get"}, at)
		if err != nil {
			return false
		}
		tk.ReleaseAt(at)
		return true
	}
	for _, tc := range []struct {
		name string
		// away takes the store away, and returns the calls admitted through it before
		// that still in the window
		away  func(t *testing.T, srv *redistest.Server, px *proxy, ls []*ratelimit.Limiter) int
		back  func(srv *redistest.Server, px *proxy)
		store func(t *testing.T, srv *redistest.Server, px *proxy) *Store
	}{
		{
			name: "restart empty",
			away: func(t *testing.T, srv *redistest.Server, _ *proxy, ls []*ratelimit.Limiter) int {
				// each replica learns the store's epoch with a call a window ago on its
				// own clock: out of the window the restart starts
				for _, l := range ls {
					if !admitAt(l, time.Now().Add(-2*window)) {
						t.Fatal("first call refused")
					}
				}
				srv.Stop()
				return 0
			},
			back:  func(srv *redistest.Server, _ *proxy) { srv.Restart() },
			store: func(t *testing.T, srv *redistest.Server, _ *proxy) *Store { return newTestStore(t, srv, share) },
		},
		{
			// Redis keeps its data, the replicas lose it for a moment (a slow answer is
			// not such a flap: see TestReplicaWhoseStoreCallsTimeOutKeepsOffItsFallbackShare)
			name: "flap",
			away: func(t *testing.T, _ *redistest.Server, px *proxy, ls []*ratelimit.Limiter) int {
				for _, l := range ls {
					if !admitAt(l, time.Now()) {
						t.Fatal("first call refused")
					}
				}
				px.setCut(true)
				return len(ls)
			},
			back: func(_ *redistest.Server, px *proxy) { px.setCut(false) },
			store: func(t *testing.T, _ *redistest.Server, px *proxy) *Store {
				st, err := New(t.Context(), Options{URL: px.URL(), KeyPrefix: testPrefix(t), FallbackShare: share,
					Timeout: 100 * time.Millisecond, ProbeInterval: 20 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			px := newProxy(t, srv.Addr())
			var sts []*Store
			var ls []*ratelimit.Limiter
			for range 3 {
				st := tc.store(t, srv, px)
				o := opts
				o.Store = st
				sts = append(sts, st)
				ls = append(ls, newLimiter(t, o))
			}
			before := tc.away(t, srv, px, ls)
			for _, l := range ls[:2] {
				for range fallback {
					if !admitAt(l, time.Now()) {
						t.Fatal("a call on the fallback share was refused")
					}
				}
			}
			for _, st := range sts[:2] {
				if st.Available("up") {
					t.Fatal("a replica that called with the store away did not fall back")
				}
			}
			tc.back(srv, px)
			for _, st := range sts {
				waitUntil(t, 5*time.Second, func() bool { return st.Available("") })
			}
			remainder := limit - before - 2*fallback

			// every replica calls in turn, as their queues would, until none is admitted
			got := make([]int, len(ls))
			for more := true; more; {
				more = false
				for i, l := range ls {
					if admitAt(l, time.Now()) {
						got[i]++
						more = true
					}
				}
			}
			total := got[0] + got[1] + got[2]
			t.Logf("remainder %d after the store came back: taken %v", remainder, got)
			for i, n := range got {
				// at most a fair share of the remainder, and one
				if n*len(ls) > remainder+len(ls) {
					t.Errorf("replica %d took %d of the remainder %d, want at most %d/%d + 1", i, n, remainder, remainder, len(ls))
				}
			}
			if total > remainder {
				t.Errorf("%d admitted of a remainder of %d", total, remainder)
			}
			if got[2] == 0 {
				t.Error("the replica that had not run on its share was given nothing")
			}
		})
	}
}

// TestHandOverLeavesALoneReplicaTheWholeRemainder: after a flap only one replica has
// calls to make. It gets its part of the remainder at once and the rest part by part
// over the window: sharing the remainder starves no one.
func TestHandOverLeavesALoneReplicaTheWholeRemainder(t *testing.T) {
	const (
		share  = 0.34
		limit  = 12
		window = 3 * time.Second // three parts of 1s for three replicas
	)
	srv := redistest.Start(t)
	px := newProxy(t, srv.Addr()) // replica 0's link to Redis
	var sts []*Store
	var ls []*ratelimit.Limiter
	for i := range 3 {
		url := srv.URL()
		if i == 0 {
			url = px.URL()
		}
		st, err := New(t.Context(), Options{URL: url, KeyPrefix: testPrefix(t), FallbackShare: share,
			Timeout: 100 * time.Millisecond, ProbeInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		sts = append(sts, st)
		ls = append(ls, newLimiter(t, ratelimit.Options{Store: st,
			Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
			Budgets:   []ratelimit.Budget{{Match: "up", Requests: limit, Window: window, WindowPad: -1}}}))
	}
	admit := func(l *ratelimit.Limiter) bool {
		now := time.Now()
		tk, err := l.AdmitAt(ratelimit.Request{Endpoint: "svc.get"}, now)
		if err != nil {
			return false
		}
		tk.ReleaseAt(now)
		return true
	}
	for _, l := range ls {
		if !admit(l) {
			t.Fatal("first call refused")
		}
	}
	px.setCut(true)
	before := len(ls)
	if admit(ls[0]) { // replica 0 loses Redis for a moment: it runs on its share
		before++
	}
	if sts[0].Available("") {
		t.Fatal("replica 0 did not fall back with its link to Redis cut")
	}
	px.setCut(false)
	waitUntil(t, 5*time.Second, func() bool { return sts[0].Available("") })
	if admit(ls[0]) { // back on the store: the hand-over starts
		before++
	}
	// from now only replica 1, which never left the store, calls, as fast as it may
	remainder := limit - before
	first := 0
	for admit(ls[1]) {
		first++
	}
	t.Logf("remainder %d after the flap: replica 1 took %d at once", remainder, first)
	if first == 0 || first*len(ls) > remainder+len(ls) {
		t.Errorf("replica 1 took %d of the remainder %d at once, want its part, at most %d/%d + 1",
			first, remainder, remainder, len(ls))
	}
	// and is not held for want of the others: it takes the rest part by part
	got := first
	waitUntil(t, 3*window, func() bool {
		for admit(ls[1]) {
			got++
		}
		return got >= remainder
	})
}
