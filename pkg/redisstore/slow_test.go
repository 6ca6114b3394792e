package redisstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// TestReplicaWhoseStoreCallsTimeOutKeepsOffItsFallbackShare: three replicas share a
// budget of 10 per second through one Redis; the third reaches it through a link on which
// its scripts get no answer within its store timeout while its pings go through (a loaded
// machine tripped the 250ms default with Redis up). A timeout marked the store down, as a refused
// connection does: the third replica ran on its fallback share while the other two still
// spent the whole shared window, and the replicas admitted more than the budget in a
// window. A slow answer is not an outage now: the probe after the timeout answers, so the
// third replica holds its calls rather than take its share on top.
func TestReplicaWhoseStoreCallsTimeOutKeepsOffItsFallbackShare(t *testing.T) {
	srv := redistest.Start(t)
	const (
		share  = 0.34
		limit  = 10
		window = time.Second
	)
	opts := ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
		Budgets:   []ratelimit.Budget{{Match: "up", Requests: limit, Window: window, WindowPad: -1, OnLimit: ratelimit.Reject}},
	}
	r := newReplicas(t, srv, 2, share, opts)
	px := newProxy(t, srv.Addr())
	slow, err := New(t.Context(), Options{URL: px.URL(), KeyPrefix: testPrefix(t), FallbackShare: share,
		ProbeInterval: 20 * time.Millisecond, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slow.Close() })
	o := opts
	o.Store = recording{slow}
	r.sts = append(r.sts, slow)
	r.ls = append(r.ls, newLimiter(t, o))
	px.setStall(true)

	stop := make(chan struct{})
	r.run(stop, "svc.get")
	time.Sleep(3 * window) // the replicas race for real
	close(stop)
	r.wg.Wait()

	var times []time.Time
	per, fallback := map[int]int{}, 0
	for _, a := range r.got {
		at := a.server
		if at.IsZero() {
			at = a.local
			fallback++
		}
		times = append(times, at)
		per[a.replica]++
	}
	if per[0]+per[1] <= limit {
		t.Fatalf("the two replicas that reach Redis admitted only %d: the test proves nothing", per[0]+per[1])
	}
	if fallback != 0 {
		t.Errorf("%d calls admitted on a fallback share while Redis answered, want 0", fallback)
	}
	if n := overAdmissions(times, limit, window); n != 0 {
		t.Errorf("%d over-admissions of the budget across the replicas, want 0", n)
	}
	if down, _, reason := slow.Degraded(); down {
		t.Errorf("the slow replica's store is degraded (%s): a slow answer is not an outage", reason)
	}
	t.Logf("admitted per replica %v, %d on a fallback share; at most %d in any window of %d", per, fallback,
		mostInWindow(times, window), limit)
}

// mostInWindow is the most of times, sorted, that fall within any window d.
func mostInWindow(times []time.Time, d time.Duration) int {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	most, j := 0, 0
	for i := range times {
		for times[i].Sub(times[j]) >= d {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// TestCallerLeavingWhileTheStoreIsProbedGetsItsContextError: Redis hangs (every command
// swallowed, the connection open): an admission times out and the probe after it waits
// for its longer deadline. A caller whose deadline ends meanwhile gets its context's error
// at once, nothing admitted; the probe, which gets no answer either, then marks the store
// unreachable, and the next call runs on the fallback share.
func TestCallerLeavingWhileTheStoreIsProbedGetsItsContextError(t *testing.T) {
	srv := redistest.Start(t)
	px := newProxy(t, srv.Addr())
	const timeout = 100 * time.Millisecond
	st, err := New(t.Context(), Options{URL: px.URL(), KeyPrefix: testPrefix(t), Timeout: timeout,
		ProbeInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l := newLimiter(t, ratelimit.Options{Store: st, Endpoints: []ratelimit.Endpoint{{ID: "s.a", Upstream: "up"}},
		Budgets: []ratelimit.Budget{{Match: "up", Requests: 6, Window: time.Minute}}})
	if _, err := l.Acquire(t.Context(), ratelimit.Request{Endpoint: "s.a"}); err != nil {
		t.Fatal(err)
	}
	px.setMute(true)
	ctx, cancel := context.WithTimeout(t.Context(), 3*timeout)
	defer cancel()
	start := time.Now()
	_, err = l.Acquire(ctx, ratelimit.Request{Endpoint: "s.a"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire whose deadline ends during the probe: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*timeout+150*time.Millisecond {
		t.Errorf("Acquire returned %v after its start, want at its deadline %v", d, 3*timeout)
	}
	if !st.Available("up") {
		t.Error("the store is unreachable before its probe's deadline")
	}
	waitUntil(t, 2*ConfirmTimeout(timeout), func() bool { return !st.Available("up") })
	if _, err := l.Acquire(t.Context(), ratelimit.Request{Endpoint: "s.a"}); err != nil {
		t.Errorf("Acquire with the store unreachable: %v, want admitted on the fallback share", err)
	}
	if down, _, reason := l.Degraded(); !down || !strings.Contains(reason, "a probe after it") {
		t.Errorf("degraded %v (%s), want degraded naming the timeout and the probe after it", down, reason)
	}
}
