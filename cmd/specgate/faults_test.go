package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/internal/upstreamtest"
)

// The fault tests run three specgate processes over one real redis-server, as the
// replicas tests do, and break something under them: Redis restarts empty, calls leave
// while they are admitted, a replica is killed.

// TestReplicasKeepTheBudgetThroughAnEmptyRestart: the agents call past the budget, Redis
// dies, two replicas run on their fallback shares while the third has no calls, and Redis
// comes back empty within a window of the calls admitted on the shares; then the third
// replica's agent calls again. The calls on the shares were never in Redis, and the
// third replica, which had not run on its share, spent the whole budget against the empty
// store (23 to 26 requests in a window of 20). The upstream, which counts what it
// receives, must see no window over its quota and answer no 429.
func TestReplicasKeepTheBudgetThroughAnEmptyRestart(t *testing.T) {
	rd := redistest.Start(t)
	const window = 3 * time.Second
	up := newCountingUpstreamWindow(t, window)
	rs := startReplicas(t, replicaCount, up, rd)
	var agents []*agent
	for _, r := range rs {
		agents = append(agents, newAgent(t, r))
	}
	busy, idle := agents[:2], agents[2:]
	stop, stopIdle := make(chan struct{}), make(chan struct{})
	wait := runAgents(t.Context(), busy, stop, "quota.getB")
	waitIdle := runAgents(t.Context(), idle, stopIdle, "quota.getB")
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wait()
		}
	}()
	time.Sleep(window / 2) // every replica calls through Redis for a while
	close(stopIdle)
	waitIdle()
	rd.Stop()
	poll(t, replicaTimeout, "the busy replicas on their fallback shares", func() bool {
		for _, r := range rs[:2] {
			if _, body := getStatus(r.base + "/readyz"); !strings.Contains(body, "degraded") {
				return false
			}
		}
		return true
	})
	time.Sleep(window + window/2) // the shares spent, then Redis back within their window
	rd.Restart()
	restarted := time.Now()
	stopIdle = make(chan struct{})
	waitIdle = runAgents(t.Context(), idle, stopIdle, "quota.getB")
	poll(t, replicaTimeout, "every replica back on Redis", func() bool {
		for _, r := range rs {
			if code, body := getStatus(r.base + "/readyz"); code != http.StatusOK || strings.Contains(body, "degraded") {
				return false
			}
		}
		return true
	})
	back := time.Since(restarted)
	time.Sleep(2 * window) // the windows that hold calls from both sides of the restart
	close(stop)
	close(stopIdle)
	wait()
	waitIdle()
	out := checkOutcomes(t, "through the restart", agents)
	if out["quota.getB ok"] == 0 {
		t.Fatal("no call admitted: the test proves nothing")
	}
	after := up.admitted(inSpan(restarted, time.Now()))
	t.Logf("every replica back on Redis %v after the restart; %d upstream admissions since, most in any %s: %d",
		back.Round(10*time.Millisecond), len(after), window, upstreamtest.MaxInWindow(after, window))
	if len(after) == 0 {
		t.Error("no call reached the upstream after Redis came back")
	}
	checkBudget(t, up)
}

// slowUpstream answers /b after delay (or, while hold is set, when the caller leaves),
// counting the calls in flight.
type slowUpstream struct {
	ts    *httptest.Server
	delay time.Duration
	hold  atomic.Bool

	mu       sync.Mutex
	inFlight int
	most     int
	arrivals []time.Time
	answered [][2]time.Time // from arrival to answer, of the requests answered
}

func newSlowUpstream(t *testing.T, delay time.Duration) *slowUpstream {
	u := &slowUpstream{delay: delay}
	u.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.inFlight++
		u.most = max(u.most, u.inFlight)
		u.arrivals = append(u.arrivals, time.Now())
		u.mu.Unlock()
		defer func() {
			u.mu.Lock()
			u.inFlight--
			u.mu.Unlock()
		}()
		d := u.delay
		if u.hold.Load() {
			d = time.Hour // until the caller leaves
		}
		arrived := time.Now()
		select {
		case <-time.After(d): // the upstream's own work
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
		u.mu.Lock()
		u.answered = append(u.answered, [2]time.Time{arrived, time.Now()})
		u.mu.Unlock()
	}))
	t.Cleanup(u.ts.Close)
	return u
}

// mostAnswered is the most requests in flight at once among those answered: a request
// whose caller gave up (its call_timeout ended during the exchange) is over for specgate,
// which gives its slot to the next call, before the upstream notices the connection
// closed.
func (u *slowUpstream) mostAnswered() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	most := 0
	for _, a := range u.answered {
		n := 0
		for _, b := range u.answered {
			if !b[0].After(a[0]) && b[1].After(a[0]) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// state returns the calls in flight, the most ever in flight and the arrivals so far.
func (u *slowUpstream) state() (inFlight, most int, arrivals []time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.inFlight, u.most, append([]time.Time(nil), u.arrivals...)
}

// startLeaseReplicas starts n specgate processes over rd in front of u with the upstream
// section given (its match and the budget keys) and call_timeout, and returns the key
// prefix they share.
func startLeaseReplicas(t *testing.T, n int, u *slowUpstream, rd *redistest.Server, upstream, callTimeout string) ([]*replica, string) {
	t.Helper()
	bin := specgateBinary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "quota.yaml"), []byte(replicaSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("e2e:%s:%d:", t.Name(), time.Now().UnixNano())
	var rs []*replica
	for i := range n {
		cfg := fmt.Sprintf(`max_retries: 0
call_timeout: %s
specs:
  - name: quota
    location: quota.yaml
    base_url: %s
    upstream: quota-group
    endpoints:
      getB: {disable_ratelimiter: true}
upstreams:
  - match: quota-group
%s
http:
  inbound:
    requests_per_window: 1000000
    tool_calls_per_window: 1000000
store:
  backend: redis
  redis_url: %s
  key_prefix: "%s"
  timeout: %s
`, callTimeout, u.ts.URL, upstream, rd.URL(), prefix, replicaStoreTimeout)
		path := filepath.Join(dir, fmt.Sprintf("replica%d.yaml", i))
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, startReplica(t, bin, i, path))
	}
	waitReady(t, rs...)
	return rs, prefix
}

// liveLeases counts the concurrency leases of quota-group in Redis that have not expired.
func liveLeases(t *testing.T, rd *redistest.Server, prefix string) int64 {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: rd.Addr()})
	defer c.Close()
	now, err := c.Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.ZCount(t.Context(), prefix+"{quota-group}:lease", fmt.Sprint(now.UnixMicro()), "+inf").Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReplicasLeaveNoLeaseBehindCallsThatTimedOutWhileQueued: max_concurrent 2 over three
// replicas, a slow upstream, and a call_timeout shorter than the queue_timeout, so that
// many calls end while queued, some while their admission runs in Redis. Such a call
// left its lease in Redis for max(2 min, 2 × call_timeout): two leaks stopped the
// upstream for every replica (24 callers here: 8.6 s without a request, 17 requests in
// 10 s). Now the upstream never stops, never has more than 2 calls
// in flight that specgate waits for, and once the calls are over no lease is left.
func TestReplicasLeaveNoLeaseBehindCallsThatTimedOutWhileQueued(t *testing.T) {
	rd := redistest.Start(t)
	u := newSlowUpstream(t, 200*time.Millisecond)
	rs, prefix := startLeaseReplicas(t, replicaCount, u, rd, `    max_concurrent: 2
    on_limit: wait
    queue_depth: 64
    queue_timeout: 20s`, "700ms")
	const callers = 8
	var agents []*agent
	for _, r := range rs {
		for range callers { // per replica: far more than the two slots keep busy
			agents = append(agents, newAgent(t, r))
		}
	}
	const run = 8 * time.Second
	start := time.Now()
	runFor(t.Context(), agents, run, "quota.getB")
	end := time.Now()
	total := map[string]int{}
	for _, a := range agents {
		for k, n := range a.outcomes() {
			total[k] += n
		}
	}
	_, most, arrivals := u.state()
	t.Logf("%s of %d callers on 2 slots, calls ending after 700ms: outcomes %v; %d upstream requests, most in flight %d (%d of those answered)",
		run, len(agents), total, len(arrivals), most, u.mostAnswered())
	if total["quota.getB ok"] == 0 || total["quota.getB timeout"]+total["quota.getB rate_limit"] == 0 {
		t.Fatalf("outcomes %v: the run needs calls answered and calls that timed out while queued", total)
	}
	if n := u.mostAnswered(); n > 2 {
		t.Errorf("%d answered calls in flight at the upstream at once, max_concurrent 2", n)
	}
	// the upstream is never idle for long: each second of the run has its calls
	gap, last := time.Duration(0), start
	for _, at := range append(arrivals, end) {
		gap, last = max(gap, at.Sub(last)), at
	}
	t.Logf("longest time without an upstream request during the run: %v", gap.Round(time.Millisecond))
	if gap > 2*time.Second {
		t.Errorf("the upstream went %v without a request: leases held its slots", gap.Round(time.Millisecond))
	}
	poll(t, 3*time.Second, "no lease left once the calls are over", func() bool { return liveLeases(t, rd, prefix) == 0 })
	for i := 0; i < len(agents); i += callers { // one per replica
		a := agents[i]
		if _, code := a.callFor(t.Context(), 10*time.Second, "invoke", map[string]any{"endpointId": "quota.getB"}); code != "ok" {
			t.Errorf("replica %d: a call after the run: %s, want ok", a.replica, code)
		}
	}
}

// TestReplicasGetAKilledReplicasSlotsBack: a replica holds both slots of max_concurrent 2
// with two calls in flight and is SIGKILLed. Its leases held the shared concurrency for
// two minutes (2 of 6 slots for 119.5 s); they are renewed while their calls run and
// live 10 s past the last renewal, so the other replicas get the slots back within 15 s.
func TestReplicasGetAKilledReplicasSlotsBack(t *testing.T) {
	rd := redistest.Start(t)
	u := newSlowUpstream(t, 10*time.Millisecond)
	rs, prefix := startLeaseReplicas(t, 2, u, rd, `    max_concurrent: 2
    on_limit: reject`, "2m")
	doomed, other := newAgent(t, rs[0]), newAgent(t, rs[1])
	u.hold.Store(true)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var calls sync.WaitGroup
	for range 2 {
		calls.Go(func() { doomed.callFor(ctx, time.Minute, "invoke", map[string]any{"endpointId": "quota.getB"}) })
	}
	poll(t, replicaTimeout, "both slots held by the replica's calls", func() bool {
		n, _, _ := u.state()
		return n == 2
	})
	if _, code := other.call(t.Context(), "invoke", map[string]any{"endpointId": "quota.getB"}); code != "rate_limit" {
		t.Fatalf("a call on the other replica with both slots held: %s, want rate_limit", code)
	}
	rs[0].cmd.Process.Kill()
	<-rs[0].exited
	killed := time.Now()
	cancel()
	calls.Wait()
	u.hold.Store(false)
	if n := liveLeases(t, rd, prefix); n != 2 {
		t.Fatalf("%d leases live right after the kill, want the 2 of the killed replica", n)
	}
	poll(t, 20*time.Second, "a call admitted on the other replica", func() bool {
		_, code := other.call(t.Context(), "invoke", map[string]any{"endpointId": "quota.getB"})
		return code == "ok"
	})
	back := time.Since(killed)
	t.Logf("the killed replica's slots came back %v after the kill", back.Round(10*time.Millisecond))
	if back > 15*time.Second {
		t.Errorf("the slots came back %v after the kill, want within 15s", back.Round(10*time.Millisecond))
	}
}

// TestReplicasKeepTheBudgetThroughAClusterFailover: three specgate processes on a Redis
// Cluster with a replica per master; the agents call past the budget, the master that
// serves the upstream's slot is killed, two replicas run on their fallback shares until
// the cluster's replica takes the slot, and the third, idle meanwhile, calls again as
// soon as it has. The calls on the shares were never in the cluster, and the promoted
// replica may lack the last writes its master took: the upstream must see no window over
// its quota and answer no 429. Both windows are shorter than the failover (about 2.7 to
// 3.5 s), so the fallback shares are spent; with 1 s, the replicas that came back spend
// the shared window while the third may still be on its share.
func TestReplicasKeepTheBudgetThroughAClusterFailover(t *testing.T) {
	for _, window := range []time.Duration{replicaWindow, time.Second} {
		t.Run("window="+window.String(), func(t *testing.T) { keepTheBudgetThroughAClusterFailover(t, window) })
	}
}

func keepTheBudgetThroughAClusterFailover(t *testing.T, window time.Duration) {
	cl := redistest.StartClusterReplicas(t, 3, 1)
	up := newCountingUpstreamWindow(t, window)
	rs := startReplicas(t, replicaCount, up, cl)
	var agents []*agent
	for _, r := range rs {
		agents = append(agents, newAgent(t, r))
	}
	busy, idle := agents[:2], agents[2:]
	stop, stopIdle := make(chan struct{}), make(chan struct{})
	wait := runAgents(t.Context(), busy, stop, "quota.getB")
	waitIdle := runAgents(t.Context(), idle, stopIdle, "quota.getB")
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wait()
		}
	}()
	time.Sleep(window / 2) // every replica calls through the cluster for a while
	close(stopIdle)
	waitIdle()
	slot := cl.SlotOf("{quota-group}")
	master := cl.OwnerOf(slot)
	cl.Node(master).Stop()
	killed := time.Now()
	poll(t, 30*time.Second, "the cluster's replica to take the slot", func() bool { return cl.OwnerOf(slot) != master })
	promoted := time.Since(killed)
	stopIdle = make(chan struct{})
	waitIdle = runAgents(t.Context(), idle, stopIdle, "quota.getB")
	poll(t, 30*time.Second, "every replica back on the shared limits", func() bool {
		for _, r := range rs {
			if code, body := getStatus(r.base + "/readyz"); code != http.StatusOK || strings.Contains(body, "degraded") {
				return false
			}
		}
		return true
	})
	back := time.Since(killed)
	time.Sleep(2 * window) // the windows that hold calls from both sides of the failover
	close(stop)
	close(stopIdle)
	wait()
	waitIdle()
	out := checkOutcomes(t, "through the failover", agents)
	if out["quota.getB ok"] == 0 {
		t.Fatal("no call admitted: the test proves nothing")
	}
	t.Logf("master killed: the slot promoted after %v, every replica back on the shared limits after %v",
		promoted.Round(10*time.Millisecond), back.Round(10*time.Millisecond))
	checkBudget(t, up)
	if t.Failed() {
		up.mu.Lock()
		for _, h := range up.hits {
			t.Logf("upstream hit %v after the kill from replica %d, admitted %v", h.at.Sub(killed).Round(time.Millisecond), h.replica, h.admitted)
		}
		up.mu.Unlock()
	}
}
