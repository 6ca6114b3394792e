package redisstore

import (
	"slices"
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
	if per[0]+per[1] < 2*limit {
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
