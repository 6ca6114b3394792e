package redisstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// admission is one admitted call, as the replicas test records it.
type admission struct {
	replica  int
	endpoint string
	local    time.Time // the now the replica decided with
	server   time.Time // Redis's clock when it admitted; zero on the fallback share
}

// replicas runs n limiters, each with its own Store on b (as n processes would
// have), with goroutines per replica calling each endpoint in a loop until stop closes.
type replicas struct {
	ls  []*ratelimit.Limiter
	sts []*Store
	mu  sync.Mutex
	got []admission
	wg  sync.WaitGroup
}

func newReplicas(t *testing.T, b backend, n int, share float64, opts ratelimit.Options) *replicas {
	r := &replicas{}
	for range n {
		st := newTestStore(t, b, share)
		o := opts
		o.Store = recording{st}
		r.sts = append(r.sts, st)
		r.ls = append(r.ls, newLimiter(t, o))
	}
	return r
}

func (r *replicas) run(stop <-chan struct{}, endpoints ...string) {
	for i := range r.ls {
		for _, ep := range endpoints {
			r.runOne(i, stop, ep)
		}
	}
}

// runOne runs replica i's calls to ep in a loop until stop closes, as run does for all.
func (r *replicas) runOne(i int, stop <-chan struct{}, ep string) {
	l := r.ls[i]
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			now := time.Now()
			var at time.Time
			// Acquire, for its context to reach the store; every budget here
			// rejects, so it decides at once as AdmitAt would
			tk, err := l.Acquire(atStore(context.Background(), &at), ratelimit.Request{Endpoint: ep})
			if err == nil {
				// The replica's windows count the now it decided with, which can
				// be later than the one taken before the call (a goroutine waits
				// for a core, a store call times out): windows are measured on
				// it, not on the caller's clock.
				if d := tk.Admitted(); !d.IsZero() {
					now = d
				}
				a := admission{replica: i, endpoint: ep, local: now, server: at}
				tk.ReleaseAt(time.Now())
				r.mu.Lock()
				r.got = append(r.got, a)
				r.mu.Unlock()
			}
			time.Sleep(200 * time.Microsecond) // an agent's pace, not a wait for time
		}
	}()
}

// overAdmissions counts the times, sorted, where more than n fall within a window d:
// t[i+n] - t[i] < d.
func overAdmissions(times []time.Time, n int, d time.Duration) int {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	over := 0
	for i := 0; i+n < len(times); i++ {
		if times[i+n].Sub(times[i]) < d {
			over++
		}
	}
	return over
}

func TestReplicasShareCooldownAndBudget(t *testing.T) {
	srv := redistest.Start(t)
	const (
		interval = 100 * time.Millisecond
		limit    = 5
		window   = 300 * time.Millisecond
		pad      = 20 * time.Millisecond
		ping     = 50 * time.Millisecond
	)
	r := newReplicas(t, srv, 3, 0, ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up", Interval: interval}, {ID: "svc.list", Upstream: "up"},
			{ID: "svc.ping", Interval: ping}}, // a cooldown with no upstream
		Budgets: []ratelimit.Budget{{Match: "up", Requests: limit, Window: window, WindowPad: pad, OnLimit: ratelimit.Reject}},
	})
	stop := make(chan struct{})
	r.run(stop, "svc.get", "svc.get", "svc.list", "svc.ping", "svc.ping")
	time.Sleep(1500 * time.Millisecond) // let the replicas race for real
	close(stop)
	r.wg.Wait()

	var all, gets, pings []time.Time
	perReplica := map[int]int{}
	for _, a := range r.got {
		if a.server.IsZero() {
			t.Fatalf("replica %d admitted on its fallback share with Redis up", a.replica)
		}
		switch a.endpoint {
		case "svc.ping":
			pings = append(pings, a.server)
			continue
		case "svc.get":
			gets = append(gets, a.server)
		}
		all = append(all, a.server)
		perReplica[a.replica]++
	}
	if len(all) < 2*limit || len(perReplica) < 2 {
		t.Fatalf("only %d admissions from %d replicas: the test proves nothing", len(all), len(perReplica))
	}
	if len(pings) < 10 {
		t.Errorf("only %d admissions of svc.ping", len(pings))
	}
	if n := overAdmissions(pings, 1, ping); n != 0 {
		t.Errorf("cooldown without an upstream: %d over-admissions across replicas", n)
	}
	if n := overAdmissions(gets, 1, interval); n != 0 {
		t.Errorf("cooldown: %d over-admissions across replicas", n)
	}
	if n := overAdmissions(all, limit, window+pad); n != 0 {
		t.Errorf("requests budget: %d over-admissions across replicas", n)
	}
	t.Logf("%d budget admissions (%d of svc.get), %d of svc.ping, per replica %v", len(all), len(gets), len(pings), perReplica)
}

func TestReplicasSurviveRedisKilledAndBack(t *testing.T) {
	srv := redistest.Start(t)
	const (
		share    = 0.34
		limit    = 9 // share: 3 per replica
		window   = 400 * time.Millisecond
		interval = 100 * time.Millisecond
	)
	r := newReplicas(t, srv, 3, share, ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up", Interval: interval}, {ID: "svc.list", Upstream: "up"}},
		Budgets:   []ratelimit.Budget{{Match: "up", Requests: limit, Window: window, WindowPad: -1, OnLimit: ratelimit.Reject}},
	})
	stop := make(chan struct{})
	r.run(stop, "svc.get", "svc.list")
	time.Sleep(500 * time.Millisecond)
	srv.Stop()
	killed := time.Now()
	time.Sleep(1000 * time.Millisecond)
	for i, l := range r.ls {
		if down, _, _ := l.Degraded(); !down {
			t.Errorf("replica %d does not report degraded with Redis down", i)
		}
	}
	srv.Restart()
	restarted := time.Now()
	for _, st := range r.sts {
		waitUntil(t, 3*time.Second, func() bool { return st.Available("") })
	}
	recovered := time.Now()
	time.Sleep(800 * time.Millisecond)
	close(stop)
	r.wg.Wait()

	perReplica := map[int][]admission{}
	var fallback, afterShared int
	var shared []time.Time
	for _, a := range r.got {
		perReplica[a.replica] = append(perReplica[a.replica], a)
		switch {
		case a.server.IsZero():
			fallback++
		case a.local.After(restarted):
			afterShared++
			shared = append(shared, a.server)
		}
	}
	if fallback == 0 {
		t.Fatal("no admission ran on the fallback share while Redis was down")
	}
	if afterShared == 0 {
		t.Fatal("no admission went through Redis after it came back")
	}
	part := part(share, limit)
	stretched := stretched(interval, share)
	for i, as := range perReplica {
		slices.SortFunc(as, func(a, b admission) int { return a.local.Compare(b.local) })
		var lastGet time.Time
		for j, a := range as {
			if a.server.IsZero() {
				// on the fallback share: with this replica's own earlier calls, at most its
				// share in the window, and its cooldown stretched
				n := 0
				for _, b := range as[:j+1] {
					if b.local.After(a.local.Add(-window)) {
						n++
					}
				}
				if n > part {
					t.Errorf("replica %d: %d calls in a window at %v on the fallback share, want <= %d",
						i, n, a.local.Sub(killed), part)
				}
				if a.endpoint == "svc.get" && !lastGet.IsZero() && a.local.Sub(lastGet) < stretched {
					t.Errorf("replica %d: svc.get %v after the last one on the fallback share, want >= %v",
						i, a.local.Sub(lastGet), stretched)
				}
			}
			if a.endpoint == "svc.get" {
				lastGet = a.local
			}
		}
	}
	// back on Redis (which restarted empty): the shared budget holds again
	if n := overAdmissions(shared, limit, window); n != 0 {
		t.Errorf("after recovery: %d over-admissions of the shared budget", n)
	}
	t.Logf("%d admissions, %d on the fallback share, %d through Redis after restart; recovered %v after restart",
		len(r.got), fallback, afterShared, recovered.Sub(restarted))
}

// TestReplicasFallbackAfterUnevenLoadStaysInBudget: one replica spends the whole shared
// budget, then Redis dies. The fallback used to count only each replica's own calls, so
// the two idle replicas each admitted their share at once while the upstream's window
// was still full. The fallback decides with explicit times: no sleeping.
func TestReplicasFallbackAfterUnevenLoadStaysInBudget(t *testing.T) {
	srv := redistest.Start(t)
	const (
		share  = 0.34
		limit  = 9 // share: 3 per replica
		window = time.Minute
	)
	r := newReplicas(t, srv, 3, share, ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
		Budgets:   []ratelimit.Budget{{Match: "up", Requests: limit, Window: window, WindowPad: -1}},
	})
	busy := r.ls[0]
	t0 := time.Now()
	for i := range limit {
		if _, err := busy.AdmitAt(ratelimit.Request{Endpoint: "svc.get"}, t0); err != nil {
			t.Fatalf("call %d through Redis: %v", i, err)
		}
	}
	srv.Stop()
	switched := t0.Add(time.Millisecond)
	admitted := func(at time.Time) int {
		n := 0
		for _, l := range r.ls {
			for range limit {
				if _, err := l.AdmitAt(ratelimit.Request{Endpoint: "svc.get"}, at); err != nil {
					break
				}
				n++
			}
		}
		return n
	}
	if n := admitted(switched); n != 0 {
		t.Errorf("%d calls admitted on the fallback while the window was full, want 0", n)
	}
	for i, l := range r.ls {
		if down, _, _ := l.Degraded(); !down {
			t.Errorf("replica %d does not report degraded with Redis down", i)
		}
	}
	// a window after the switch, each replica has its share again
	part := part(share, limit)
	if got, want := admitted(switched.Add(window)), 3*part; got != want {
		t.Errorf("a window later: %d calls admitted on the fallback, want %d (the shares)", got, want)
	}
}

// TestReplicasFallbackAfterUnevenTokensStaysInBudget: the replicas spend the shared tokens
// budget unevenly, then Redis dies. The fallback counted the shared requests window but not
// the tokens window, so every replica admitted its share of tokens at once while the
// upstream's tokens window was still full. The fallback decides with explicit times.
func TestReplicasFallbackAfterUnevenTokensStaysInBudget(t *testing.T) {
	srv := redistest.Start(t)
	const (
		share  = 0.34
		tokens = 900 // share: 306 per replica
		call   = 100 // tokens per call
		window = time.Minute
	)
	r := newReplicas(t, srv, 3, share, ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
		Budgets:   []ratelimit.Budget{{Match: "up", Tokens: tokens, Window: window, WindowPad: -1}},
	})
	// replica 1 spends all but one call, then replica 0, which spends little itself, sees
	// the window full; replica 2 stays idle
	t0 := time.Now()
	for i := range tokens/call - 1 {
		if _, err := r.ls[1].AdmitAt(ratelimit.Request{Endpoint: "svc.get", Tokens: call}, t0); err != nil {
			t.Fatalf("call %d through Redis: %v", i, err)
		}
	}
	if _, err := r.ls[0].AdmitAt(ratelimit.Request{Endpoint: "svc.get", Tokens: call}, t0); err != nil {
		t.Fatalf("the last call through Redis: %v", err)
	}
	srv.Stop()
	switched := t0.Add(time.Millisecond)
	admitted := func(at time.Time) int {
		n := 0
		for _, l := range r.ls {
			for range tokens / call {
				if _, err := l.AdmitAt(ratelimit.Request{Endpoint: "svc.get", Tokens: call}, at); err != nil {
					break
				}
				n++
			}
		}
		return n
	}
	if n := admitted(switched); n != 0 {
		t.Errorf("%d calls admitted on the fallback while the tokens window was full, want 0", n)
	}
	// a window after the switch (and a token bucket, which local charges count whole),
	// each replica has its share again
	part := part(share, tokens) / call
	if got, want := admitted(switched.Add(window+ratelimit.TokenBucketWidth(window))), 3*part; got != want {
		t.Errorf("a window later: %d calls admitted on the fallback, want %d (the shares)", got, want)
	}
}

// TestReplicasFallbackAfterAnAgedSpentWindowAdmitsTheShares: three replicas spend an
// upstream budget of 10 per 3s; Redis dies 3.8s later. The fallback used to forget that
// time had passed: each replica held every call for a whole window more ("request budget
// (0 per 3s) is spent: try again in 3.25 seconds") though the upstream was idle. What a
// replica saw in Redis ages with the clock: each admits its share at once. The fallback
// decides with explicit times: no sleeping.
func TestReplicasFallbackAfterAnAgedSpentWindowAdmitsTheShares(t *testing.T) {
	srv := redistest.Start(t)
	const (
		share  = 0.34
		limit  = 10
		window = 3 * time.Second
	)
	r := newReplicas(t, srv, 3, share, ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
		Budgets:   []ratelimit.Budget{{Match: "up", Requests: limit, Window: window}},
	})
	t0 := time.Now()
	spent := 0
	for i := range limit + 2 {
		if _, err := r.ls[i%3].AdmitAt(ratelimit.Request{Endpoint: "svc.get"}, t0); err == nil {
			spent++
		}
	}
	if spent != limit {
		t.Fatalf("%d admitted through Redis, want the budget %d", spent, limit)
	}
	srv.Stop()
	at := t0.Add(3800 * time.Millisecond)
	admitted := 0
	for i := range 15 {
		_, err := r.ls[i%3].AdmitAt(ratelimit.Request{Endpoint: "svc.get"}, at)
		if err == nil {
			admitted++
		}
	}
	if want := 3 * part(share, limit); admitted != want {
		t.Errorf("%d of 15 admitted on the fallback 3.8s after the spent window, want each replica's share, %d in all", admitted, want)
	}
}

// TestReplicasSurviveClusterNodeKilledAndBack: three replicas under load on a Redis
// Cluster, two upstreams on different masters. One master is killed and restarted: calls
// to the upstream on it run on each replica's fallback share meanwhile, calls to the
// other never leave the cluster, and the shared budget holds again once the node is back.
func TestReplicasSurviveClusterNodeKilledAndBack(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	probe := newTestStore(t, cl, 0)
	a, b, na, _ := upstreamsOnTwoNodes(t, cl, probe)
	const (
		share  = 0.34
		limit  = 9 // share: 3 per replica
		window = 400 * time.Millisecond
	)
	r := newReplicas(t, cl, 3, share, ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "a.get", Upstream: a}, {ID: "b.get", Upstream: b}},
		Budgets: []ratelimit.Budget{
			{Match: a, Requests: limit, Window: window, WindowPad: -1, OnLimit: ratelimit.Reject},
			{Match: b, Requests: limit, Window: window, WindowPad: -1, OnLimit: ratelimit.Reject},
		},
	})
	stop := make(chan struct{})
	r.run(stop, "a.get", "b.get")
	time.Sleep(500 * time.Millisecond) // the replicas under load for real
	cl.Node(na).Stop()
	killed := time.Now()
	time.Sleep(time.Second)
	cl.Node(na).Restart()
	restarted := time.Now()
	for _, st := range r.sts {
		waitUntil(t, 10*time.Second, func() bool { return st.Available(a) })
	}
	t.Logf("back on the cluster %v after the restart", time.Since(restarted).Round(time.Millisecond))
	time.Sleep(800 * time.Millisecond)
	close(stop)
	r.wg.Wait()

	var fallbackA, fallbackB int
	var sharedA, sharedB []time.Time
	perReplica := map[int][]admission{}
	for _, x := range r.got {
		switch {
		case x.endpoint == "b.get" && x.server.IsZero():
			fallbackB++
		case x.endpoint == "b.get":
			sharedB = append(sharedB, x.server)
		case x.server.IsZero():
			fallbackA++
			perReplica[x.replica] = append(perReplica[x.replica], x)
		case x.local.After(restarted):
			sharedA = append(sharedA, x.server)
		}
	}
	if fallbackA == 0 {
		t.Fatal("no call to the dead node's upstream ran on the fallback share")
	}
	if fallbackB != 0 {
		t.Errorf("%d calls to the upstream on a live node ran on the fallback share, want 0", fallbackB)
	}
	for i, as := range perReplica {
		for j, x := range as {
			n := 0
			for _, y := range as[:j+1] {
				if y.local.After(x.local.Add(-window)) {
					n++
				}
			}
			if n > part(share, limit) {
				t.Errorf("replica %d: %d fallback calls in a window at %v, want <= %d", i, n, x.local.Sub(killed), part(share, limit))
			}
		}
	}
	if n := overAdmissions(sharedB, limit, window); n != 0 {
		t.Errorf("upstream on a live node: %d over-admissions", n)
	}
	if len(sharedA) == 0 {
		t.Error("no call to the restarted node's upstream went through the cluster after it came back")
	}
	if n := overAdmissions(sharedA, limit, window); n != 0 {
		t.Errorf("after the node came back: %d over-admissions", n)
	}
	t.Logf("%s on the dead node: %d on the fallback, %d shared after restart; %s: %d shared",
		a, fallbackA, len(sharedA), b, len(sharedB))
}

// A principal's share of an upstream (Budget.PerPrincipal) is one across replicas: ada's
// calls on two replicas count in one window in Redis, and bob keeps his own.
func TestReplicasSharePerPrincipal(t *testing.T) {
	srv := redistest.Start(t)
	r := newReplicas(t, srv, 2, 0, ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
		Budgets:   []ratelimit.Budget{{Match: "up", Requests: 100, Window: time.Minute, PerPrincipal: 3, OnLimit: ratelimit.Reject}},
	})
	call := func(replica int, who string) error {
		tk, err := r.ls[replica].Acquire(t.Context(), ratelimit.Request{Endpoint: "svc.get", Principal: who})
		if err == nil {
			tk.Release()
		}
		return err
	}
	for i, replica := range []int{0, 1, 0} {
		if err := call(replica, "ada"); err != nil {
			t.Fatalf("ada's call %d on replica %d: %v", i, replica, err)
		}
	}
	var le *ratelimit.LimitError
	if err := call(1, "ada"); !errors.As(err, &le) || le.Key != "up per principal" {
		t.Fatalf("ada's fourth call, on the other replica: %v; want her share spent", err)
	}
	for _, replica := range []int{1, 1, 0} {
		if err := call(replica, "bob"); err != nil {
			t.Fatalf("bob on replica %d: %v", replica, err)
		}
	}
}

// An endpoint's cost charges the shared requests window that many units, on every
// replica alike.
func TestReplicasShareCostUnits(t *testing.T) {
	srv := redistest.Start(t)
	r := newReplicas(t, srv, 2, 0, ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "svc.search", Upstream: "up", Cost: 3}, {ID: "svc.get", Upstream: "up"}},
		Budgets:   []ratelimit.Budget{{Match: "up", Requests: 7, Window: time.Minute, OnLimit: ratelimit.Reject}},
	})
	call := func(replica int, id string) error {
		tk, err := r.ls[replica].Acquire(t.Context(), ratelimit.Request{Endpoint: id})
		if err == nil {
			tk.Release()
		}
		return err
	}
	if err := call(0, "svc.search"); err != nil {
		t.Fatal(err)
	}
	if err := call(1, "svc.search"); err != nil {
		t.Fatal(err)
	}
	var le *ratelimit.LimitError
	if err := call(0, "svc.search"); !errors.As(err, &le) || le.Kind != ratelimit.KindRequests {
		t.Fatalf("a third search with 1 unit left: %v", err)
	}
	if err := call(1, "svc.get"); err != nil {
		t.Fatalf("a get with 1 unit left: %v", err)
	}
	if err := call(0, "svc.get"); err == nil {
		t.Fatal("a get went through a spent window")
	}
}
