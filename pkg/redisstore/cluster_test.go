package redisstore

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// logBuffer is a slog destination a test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newLoggedStore is newTestStore with a logger, and a timeout of its own.
func newLoggedStore(t *testing.T, url string, cluster bool, timeout time.Duration) (*Store, *logBuffer) {
	t.Helper()
	lb := &logBuffer{}
	st, err := New(t.Context(), Options{
		URL: url, Cluster: cluster, KeyPrefix: testPrefix(t), Timeout: timeout,
		ProbeInterval: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(lb, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, lb
}

// upstreamsOnTwoNodes returns two upstream names whose slots two different nodes own, and
// those nodes.
func upstreamsOnTwoNodes(t *testing.T, cl *redistest.Cluster, st *Store) (a, b string, na, nb int) {
	t.Helper()
	owner := map[int]string{}
	for _, u := range []string{"api.a:443", "api.b:443", "api.c:443", "api.d:443", "api.e:443", "api.f:443", "api.g:443"} {
		n := cl.OwnerOf(st.slot(u))
		if _, ok := owner[n]; !ok {
			owner[n] = u
		}
		if len(owner) == 2 {
			break
		}
	}
	if len(owner) < 2 {
		t.Fatal("seven upstreams all on one node")
	}
	first := true
	for n, u := range owner {
		if first {
			a, na, first = u, n, false
		} else {
			b, nb = u, n
		}
	}
	return a, b, na, nb
}

func TestClusterKeysOfOneAdmissionShareASlotAndUpstreamsSpread(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	st := newTestStore(t, cl, 0)
	l := newLimiter(t, ratelimit.Options{
		Store: recording{st},
		Endpoints: []ratelimit.Endpoint{{ID: "a.get", Upstream: "api.a:443", Interval: time.Second},
			{ID: "b.get", Upstream: "api.b:443", Interval: time.Second}, {ID: "solo", Interval: time.Second}},
		Budgets: []ratelimit.Budget{
			{Match: "api.a:443", Requests: 5, Tokens: 100, MinInterval: time.Millisecond, MaxConcurrent: 2},
			{Match: "api.b:443", Requests: 5, Tokens: 100, MinInterval: time.Millisecond, MaxConcurrent: 2},
		},
	})
	for _, ep := range []string{"a.get", "b.get", "solo"} {
		var at time.Time
		tk, err := l.Acquire(atStore(t.Context(), &at), ratelimit.Request{Endpoint: ep, Tokens: 10})
		if err != nil {
			t.Fatalf("%s: %v", ep, err)
		}
		if at.IsZero() && ep != "solo" {
			t.Errorf("%s admitted on the fallback share: the cluster refused the script", ep)
		}
		tk.ObserveAt(ratelimit.Signal{Status: 429, RateLimited: true, Source: "status"}, time.Now())
		defer tk.Release()
	}
	if down, _, why := st.Degraded(); down {
		t.Fatalf("degraded on a healthy cluster: %s", why)
	}
	opts, _ := redis.ParseClusterURL(cl.URL())
	cc := redis.NewClusterClient(opts)
	defer cc.Close()
	slots := map[string]map[int64]bool{}
	var mu sync.Mutex // ForEachMaster runs on every master at once
	err := cc.ForEachMaster(t.Context(), func(ctx context.Context, c *redis.Client) error {
		keys, err := c.Keys(ctx, testPrefix(t)+"*").Result()
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			group := k[strings.IndexByte(k, '{')+1 : strings.IndexByte(k, '}')]
			if slots[group] == nil {
				slots[group] = map[int64]bool{}
			}
			slots[group][cc.ClusterKeySlot(ctx, k).Val()] = true
			if ttl := c.PTTL(ctx, k).Val(); ttl <= 0 {
				t.Errorf("key %q has no TTL", k)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"plain", "{api.a:443}:req", "specgate:{u}:x", "a{}b", "{", "}{x}", "ünï{cödé}"} {
		if got, want := int64(slotOf(k)), cc.ClusterKeySlot(t.Context(), k).Val(); got != want {
			t.Errorf("slotOf(%q) = %d, Redis says %d", k, got, want)
		}
	}
	for group, s := range slots {
		if len(s) != 1 {
			t.Errorf("keys of %s on %d slots, want 1", group, len(s))
		}
	}
	if len(slots) != 3 {
		t.Errorf("key groups %v, want api.a:443, api.b:443 and solo", slots)
	}
	if st.slot("api.a:443") == st.slot("api.b:443") {
		t.Error("api.a:443 and api.b:443 share a slot: different upstreams should spread")
	}
}

// TestClusterNodeKilledOnlyItsUpstreamsFallBack: with one master of three dead, calls to
// an upstream on it run on the fallback share (and the log says so), calls to an upstream
// on another node still go through the cluster; once the node is back, so do the first.
func TestClusterNodeKilledOnlyItsUpstreamsFallBack(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	st, logs := newLoggedStore(t, cl.URL(), true, 150*time.Millisecond)
	a, b, na, _ := upstreamsOnTwoNodes(t, cl, st)
	const share, limit = 0.34, 9
	l := newLimiter(t, ratelimit.Options{
		Store:     recording{st},
		Endpoints: []ratelimit.Endpoint{{ID: "a.get", Upstream: a}, {ID: "b.get", Upstream: b}},
		Budgets: []ratelimit.Budget{{Match: a, Requests: limit, Window: time.Minute, OnLimit: ratelimit.Reject},
			{Match: b, Requests: limit, Window: time.Minute, OnLimit: ratelimit.Reject}},
	})
	call := func(ep string) (shared bool, err error) {
		var at time.Time
		tk, err := l.Acquire(atStore(t.Context(), &at), ratelimit.Request{Endpoint: ep})
		if err == nil {
			tk.Release()
		}
		return !at.IsZero(), err
	}
	for _, ep := range []string{"a.get", "b.get"} {
		if shared, err := call(ep); err != nil || !shared {
			t.Fatalf("%s before the kill: shared %v, %v", ep, shared, err)
		}
	}
	cl.Node(na).Stop()
	// a's upstream: its fallback share of 9 is 3, one of which it spent through the
	// cluster just before; the requests window was seen with 1 of 9, so 2 more at most
	admittedA := 0
	for range limit {
		if _, err := call("a.get"); err == nil {
			admittedA++
		}
	}
	if admittedA > part(share, limit) {
		t.Errorf("%s on the fallback: %d admitted, want at most the share %d", a, admittedA, part(share, limit))
	}
	if st.Available(a) || !st.Available(b) {
		t.Errorf("Available(%s) = %v, Available(%s) = %v; want only the dead node's upstream down", a, st.Available(a), b, st.Available(b))
	}
	for i := range 3 {
		if shared, err := call("b.get"); err != nil || !shared {
			t.Errorf("%s call %d with another node dead: shared %v, %v; want through the cluster\nlog:\n%s", b, i, shared, err, logs)
		}
	}
	for _, u := range l.StatusAt(time.Now(), nil).Upstreams {
		if want := u.Key == a; u.Fallback != want {
			t.Errorf("status of %s: fallback %v, want %v", u.Key, u.Fallback, want)
		}
	}
	down, _, why := l.Degraded()
	if !down || !strings.Contains(why, "slots unreachable") {
		t.Errorf("Degraded() = %v, %q; want the unreachable slots named", down, why)
	}
	if !strings.Contains(logs.String(), "redis cluster slot unreachable") {
		t.Errorf("no log line for the dead slot; got:\n%s", logs)
	}
	cl.Node(na).Restart()
	cl.WaitOK()
	waitUntil(t, 5*time.Second, func() bool { return st.Available(a) })
	// the limiter still checks its own fallback calls for a window; the store answers
	d, err := st.Admit(t.Context(), &ratelimit.Admission{Endpoint: "a.get", Upstream: a,
		Budget: ratelimit.Budget{Requests: limit, Window: time.Minute}, Charge: true})
	if err != nil || !d.OK {
		t.Errorf("%s after the node came back: %+v, %v; want admitted by the cluster", a, d, err)
	}
	if !strings.Contains(logs.String(), "answers again") {
		t.Errorf("no log line for the recovery; got:\n%s", logs)
	}
}

// TestClusterSlotMigrationKeepsTheBudget: the slot of an upstream moves to another node
// between admissions (MOVED, and ASK while it moves); the client follows, every
// admission still goes through the cluster, and the window moved with its keys.
func TestClusterSlotMigrationKeepsTheBudget(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	st, _ := newLoggedStore(t, cl.URL(), true, 0)
	const up, limit = "api.move:443", 6
	l := newLimiter(t, ratelimit.Options{
		Store:     recording{st},
		Endpoints: []ratelimit.Endpoint{{ID: "m.get", Upstream: up}},
		Budgets:   []ratelimit.Budget{{Match: up, Requests: limit, Window: time.Minute, OnLimit: ratelimit.Reject}},
	})
	call := func() (bool, error) {
		var at time.Time
		tk, err := l.Acquire(atStore(t.Context(), &at), ratelimit.Request{Endpoint: "m.get"})
		if err == nil {
			tk.Release()
		}
		return !at.IsZero(), err
	}
	for i := range limit / 2 {
		if shared, err := call(); err != nil || !shared {
			t.Fatalf("call %d: shared %v, %v", i, shared, err)
		}
	}
	slot := st.slot(up)
	cl.MoveSlot(slot, (cl.OwnerOf(slot)+1)%3)
	for i := range limit / 2 {
		if shared, err := call(); err != nil || !shared {
			t.Fatalf("call %d after the move: shared %v, %v", i, shared, err)
		}
	}
	_, err := call()
	var le *ratelimit.LimitError
	if !errors.As(err, &le) || le.Kind != ratelimit.KindRequests || le.Limit != limit {
		t.Errorf("call past the budget after the move: %v, want a requests refusal of %d (the window moved with the slot)", err, limit)
	}
	if down, _, why := st.Degraded(); down {
		t.Errorf("degraded by a slot migration: %s", why)
	}
}

func TestClusterURLWithNoSeedIsAnError(t *testing.T) {
	for _, u := range []string{"redis://?addr=:7001", "redis://h:7000?addr=:7001", "http://x"} {
		if _, err := New(t.Context(), Options{URL: u, Cluster: true}); err == nil {
			t.Errorf("New(%q) succeeded, want an error", u)
		} else if strings.Contains(err.Error(), "7001") {
			t.Errorf("error %q echoes the URL", err)
		}
	}
}

func TestClusterSeedNotAClusterNodeDegradesWithAReason(t *testing.T) {
	srv := redistest.Start(t)
	st, logs := newLoggedStore(t, srv.URL(), true, 0)
	down, _, why := st.Degraded()
	if !down || !strings.Contains(why, "not a cluster node") {
		t.Errorf("Degraded() = %v, %q; want degraded, naming a seed that is not a cluster node", down, why)
	}
	if !strings.Contains(logs.String(), "not a cluster node") {
		t.Errorf("log:\n%s\nwant a line saying the seed is not a cluster node", logs)
	}
	l := newLimiter(t, ratelimit.Options{Store: st, Endpoints: []ratelimit.Endpoint{{ID: "s.a", Upstream: "up"}},
		Budgets: []ratelimit.Budget{{Match: "up", Requests: 6, Window: time.Minute}}})
	n := 0
	for range 6 {
		if _, err := l.AdmitAt(ratelimit.Request{Endpoint: "s.a"}, time.Now()); err == nil {
			n++
		}
	}
	if n != part(DefaultFallbackShare, 6) {
		t.Errorf("admitted %d, want the fallback share %d", n, part(DefaultFallbackShare, 6))
	}
}

// TestScriptRejectedFallsBackAndRecovers: the server refuses EVAL and EVALSHA (an ACL, as
// a misconfigured managed Redis might): each admission falls back to the share, the log
// names the refusal, and the shared limits return when scripts run again.
func TestScriptRejectedFallsBackAndRecovers(t *testing.T) {
	srv := redistest.Start(t)
	st, logs := newLoggedStore(t, srv.URL(), false, 0)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "default", "-eval", "-evalsha").Err(); err != nil {
		t.Fatal(err)
	}
	l := newLimiter(t, ratelimit.Options{Store: st, Endpoints: []ratelimit.Endpoint{{ID: "s.a", Upstream: "up"}},
		Budgets: []ratelimit.Budget{{Match: "up", Requests: 6, Window: time.Minute}}})
	n := 0
	for range 6 {
		if _, err := l.AdmitAt(ratelimit.Request{Endpoint: "s.a"}, time.Now()); err == nil {
			n++
		}
	}
	if n > part(DefaultFallbackShare, 6) {
		t.Errorf("admitted %d with scripts refused, want at most the share %d", n, part(DefaultFallbackShare, 6))
	}
	if !strings.Contains(logs.String(), "redis refused the script") {
		t.Errorf("log:\n%s\nwant a line saying the script was refused", logs)
	}
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "default", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, func() bool { return st.Available("up") })
	if _, err := st.Admit(t.Context(), &ratelimit.Admission{Endpoint: "s.b", Upstream: "up2", Charge: true}); err != nil {
		t.Errorf("admission after scripts are allowed again: %v", err)
	}
	if !strings.Contains(logs.String(), "answers again") {
		t.Errorf("log:\n%s\nwant a line for the recovery", logs)
	}
}

// TestSlowRedisFallsBackWithinTheTimeoutAndCancelReachesTheStore: Redis paused past the
// store's timeout and the probe's deadline after it: an admission falls back within about
// the two, on the share (a timeout alone is not an outage: the probe after it must get no
// answer either); a call whose context is cancelled returns at once with that error, and
// a cancelled call does not mark the store down.
func TestSlowRedisFallsBackWithinTheTimeoutAndCancelReachesTheStore(t *testing.T) {
	srv := redistest.Start(t)
	const timeout = 200 * time.Millisecond
	st, logs := newLoggedStore(t, srv.URL(), false, timeout)
	l := newLimiter(t, ratelimit.Options{Store: st, Endpoints: []ratelimit.Endpoint{{ID: "s.a", Upstream: "up"}},
		Budgets: []ratelimit.Budget{{Match: "up", Requests: 6, Window: time.Minute, OnLimit: ratelimit.Reject}}})
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	pause := func(d time.Duration) {
		t.Helper()
		if err := admin.Do(t.Context(), "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err(); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := l.Acquire(t.Context(), ratelimit.Request{Endpoint: "s.a"}); err != nil {
		t.Fatal(err) // the fallback counts from what the store last said of the window
	}
	// cancelled while Redis is slow: back at once, with the context's error, store not down
	pause(3 * time.Second) // past the cancelled call, the timeout and the probe after it
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := l.Acquire(ctx, ratelimit.Request{Endpoint: "s.a"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Acquire: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d >= timeout {
		t.Errorf("cancelled Acquire returned after %v, want before the store timeout %v", d, timeout)
	}
	if !st.Available("up") {
		t.Error("a cancelled call marked the store down")
	}

	// not cancelled: the timeout ends the call, the probe after it gets no answer within
	// its deadline either, and the fallback decides
	start = time.Now()
	if _, err := l.Acquire(t.Context(), ratelimit.Request{Endpoint: "s.a"}); err != nil {
		t.Errorf("Acquire with Redis slow: %v, want admitted on the fallback share", err)
	}
	if d, want := time.Since(start), timeout+ConfirmTimeout(timeout); d > want+150*time.Millisecond {
		t.Errorf("Acquire with Redis slow took %v, want about the timeout and the probe's deadline %v", d, want)
	}
	if st.Available("up") || !strings.Contains(logs.String(), "no answer within the store timeout") {
		t.Errorf("store available %v, log:\n%s\nwant degraded with a line naming the timeout", st.Available("up"), logs)
	}
	// while Redis stays slow, the replica never admits more than its share of the budget
	fallback := 1
	for range 6 {
		if tk, err := l.Acquire(t.Context(), ratelimit.Request{Endpoint: "s.a"}); err == nil {
			tk.Release()
			fallback++
		}
	}
	if fallback > part(DefaultFallbackShare, 6) {
		t.Errorf("%d admitted with Redis slow, want at most the share %d", fallback, part(DefaultFallbackShare, 6))
	}
	if err := admin.Do(t.Context(), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, func() bool { return st.Available("up") })
	if !strings.Contains(logs.String(), "answers again") {
		t.Errorf("log:\n%s\nwant a line for the recovery", logs)
	}
}

// TestClusterFailoverIsFollowedWhenTheReplicaTakesOver kills the master that serves an
// upstream's slot in a cluster with a replica per master: the upstream falls back to its
// share, and returns to the shared limits as soon as the replica has taken the slot, not
// at the client's periodic slot-map refresh. The probe runs at its default interval.
func TestClusterFailoverIsFollowedWhenTheReplicaTakesOver(t *testing.T) {
	cl := redistest.StartClusterReplicas(t, 3, 1)
	lb := &logBuffer{}
	st, err := New(t.Context(), Options{URL: cl.URL(), Cluster: true, KeyPrefix: testPrefix(t), Timeout: 150 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(lb, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const up = "api.a:443"
	admit := func() error {
		d, err := st.Admit(t.Context(), &ratelimit.Admission{Endpoint: "a.get", Upstream: up,
			Budget: ratelimit.Budget{Requests: 100, Window: time.Minute}, Charge: true})
		if err == nil && !d.OK {
			t.Fatalf("refused by the budget: %+v", d)
		}
		return err
	}
	if err := admit(); err != nil {
		t.Fatal(err)
	}
	master := cl.OwnerOf(st.slot(up))
	cl.Node(master).Stop()
	killed := time.Now()
	if err := admit(); err == nil {
		t.Fatal("an admission went through a killed master")
	}
	if st.Available(up) {
		t.Fatal("the upstream is still available after its master died")
	}
	// the replica takes over after cluster-node-timeout (1s) and an election
	waitUntil(t, 20*time.Second, func() bool { return cl.OwnerOf(st.slot(up)) != master })
	promoted := time.Since(killed)
	waitUntil(t, 20*time.Second, func() bool { return st.Available(up) })
	back := time.Since(killed)
	t.Logf("master killed: replica serves the slot after %v, the store is back on it after %v", promoted.Round(10*time.Millisecond), back.Round(10*time.Millisecond))
	if err := admit(); err != nil {
		t.Fatalf("after the failover: %v\nlog:\n%s", err, lb)
	}
	// a few probe intervals and a slot-map reload after the promotion; the client's
	// periodic refresh took 34.5 s under load, 57 s after the promotion in this test
	if lag := back - promoted; lag > 5*time.Second {
		t.Errorf("the store followed the failover %v after the replica took the slot, want within 5s", lag)
	}
}
