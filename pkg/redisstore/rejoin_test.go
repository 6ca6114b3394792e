package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// TestReplicaBackLaterThanTheOthersIsLeftItsShare: three replicas share a budget of 10
// per second through one Redis, each on a link of its own. Redis goes away for all of
// them; two keep calling on their fallback shares and come back; the third, idle
// through the outage, calls only once they are back, while its own link is still down
// (in a Cluster failover: its slot map still names the dead master), so it runs on its
// share for a while. The two that came back kept to their shares for one window (the
// grace after the switch), then spent the whole shared window, while the third's calls
// on its share were written nowhere until it came back: one call over the budget in 1
// of 10 runs of a failover with a 1 s window. The hand-over now keeps the share of each
// replica that called the upstream and is not back, until it is (or a window and a few
// probe intervals pass).
func TestReplicaBackLaterThanTheOthersIsLeftItsShare(t *testing.T) {
	srv := redistest.Start(t)
	const (
		share  = 0.34
		limit  = 10
		window = time.Second
		probe  = DefaultProbeInterval // a hand-over keeps a share for a window and 4 of these
	)
	opts := ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
		Budgets:   []ratelimit.Budget{{Match: "up", Requests: limit, Window: window, WindowPad: -1, OnLimit: ratelimit.Reject}},
	}
	r := &replicas{}
	var links []*proxy
	for range 3 {
		px := newProxy(t, srv.Addr())
		st, err := New(t.Context(), Options{URL: px.URL(), KeyPrefix: testPrefix(t), FallbackShare: share,
			ProbeInterval: probe, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		o := opts
		o.Store = recording{st}
		links = append(links, px)
		r.sts = append(r.sts, st)
		r.ls = append(r.ls, newLimiter(t, o))
	}
	// the third replica calls once through Redis, then is idle
	var at time.Time
	tk, err := r.ls[2].Acquire(atStore(context.Background(), &at), ratelimit.Request{Endpoint: "svc.get"})
	if err != nil {
		t.Fatal(err)
	}
	tk.Release()
	r.got = append(r.got, admission{replica: 2, endpoint: "svc.get", local: tk.Admitted(), server: at})
	stop := make(chan struct{})
	r.runOne(0, stop, "svc.get")
	r.runOne(1, stop, "svc.get")
	time.Sleep(window / 2) // the two call through Redis for a while

	for _, px := range links {
		px.setCut(true)
	}
	time.Sleep(3 * window / 2) // on their fallback shares: held a window, then their shares
	for _, px := range links[:2] {
		px.setCut(false)
	}
	for _, st := range r.sts[:2] {
		waitUntil(t, 5*time.Second, func() bool { return st.Available("up") })
	}
	back := time.Now()
	r.runOne(2, stop, "svc.get") // on its share: its link is still down
	time.Sleep(window + probe)   // past the grace of the two that came back
	links[2].setCut(false)
	waitUntil(t, 5*time.Second, func() bool { return r.sts[2].Available("up") })
	late := time.Since(back)
	time.Sleep(window) // all three on the shared window again
	close(stop)
	r.wg.Wait()

	var times []time.Time
	fallback := map[int]int{}
	for _, a := range r.got {
		at := a.server
		if at.IsZero() {
			at = a.local
			fallback[a.replica]++
		}
		times = append(times, at)
	}
	if fallback[2] == 0 || fallback[0]+fallback[1] == 0 {
		t.Fatalf("fallback admissions by replica %v: the third replica, or the other two, never ran on its share; the test proves nothing", fallback)
	}
	// a call on a share is timed by its replica's clock, one through Redis by Redis's, on
	// one machine; a few milliseconds either way are not an over-admission
	const jitter = 20 * time.Millisecond
	if n := overAdmissions(times, limit, window-jitter); n != 0 {
		t.Errorf("%d over-admissions of the budget across the replicas, want 0", n)
	}
	t.Logf("the third replica back %v after the others; fallback admissions by replica %v; %d in all, at most %d in any window of %d",
		late.Round(time.Millisecond), fallback, len(times), mostInWindow(times, window-jitter), limit)
}

// TestHandOverKeepsTheShareOfEachReplicaNotBack: after a replica comes back from its
// fallback share, the requests window keeps the share of each other replica that called
// the upstream and has not called since, at most ceil(1/share) - 1 of them: floor(0.34 ×
// 10) = 3 each here. A replica's first call through the store frees its share.
func TestHandOverKeepsTheShareOfEachReplicaNotBack(t *testing.T) {
	srv := redistest.Start(t)
	const limit = 10
	var sts []*Store
	for range 3 {
		sts = append(sts, newTestStore(t, srv, 0.34))
	}
	admit := func(i int, rejoin bool) ratelimit.Decision {
		t.Helper()
		d, err := sts[i].Admit(t.Context(), &ratelimit.Admission{Endpoint: "s.get", Upstream: "up",
			Budget: ratelimit.Budget{Requests: limit, Window: time.Minute}, Charge: true, Rejoin: rejoin})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for i := range sts {
		if d := admit(i, false); !d.OK {
			t.Fatalf("replica %d's first call refused: %+v", i, d)
		}
	}
	// replica 0 comes back from its share: 3 in the window, 2 × 3 kept, 1 left
	if d := admit(0, true); !d.OK {
		t.Fatalf("the call that comes back refused: %+v", d)
	}
	if d := admit(0, false); d.OK || d.Kind != ratelimit.KindRequests {
		t.Fatalf("a call into the shares kept for replicas 1 and 2: %+v, want refused by the requests window", d)
	} else if d.Wait <= 0 || d.Wait > time.Minute {
		t.Errorf("its wait %v, want until a share is freed or the window has room, within a window", d.Wait)
	}
	// replica 1 calls: its share is freed
	if d := admit(1, false); !d.OK {
		t.Fatalf("replica 1 back: %+v", d)
	}
	for range 2 {
		if d := admit(0, false); !d.OK {
			t.Fatalf("replica 0 with replica 1 back: %+v, want admitted up to 7 (one share kept)", d)
		}
	}
	if d := admit(0, false); d.OK {
		t.Fatalf("replica 0 past the share kept for replica 2: %+v, want refused", d)
	}
	// replica 2 calls: nothing is kept
	if d := admit(2, false); !d.OK || d.Requests != 8 {
		t.Fatalf("replica 2 back: %+v, want admitted, the 8th in the window", d)
	}
	// (replica 0 has taken its part of the hand-over, ceil(7/3) = 3, for this third of it)
	if d := admit(1, false); !d.OK || d.Requests != 9 {
		t.Fatalf("replica 1 with every replica back: %+v, want admitted, the 9th in the window", d)
	}
}
