package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// leaving is a caller that gives up while its admission is on its way to Redis: the hook
// ends its context, waits until it has returned, and only then lets the script run.
type leaving struct {
	cancel context.CancelFunc
	gone   chan struct{}
}

type leavingKey struct{}

// leaveBeforeScript is a go-redis hook that plays leaving's part for the commands whose
// context carries one.
type leaveBeforeScript struct{}

func (leaveBeforeScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (leaveBeforeScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (leaveBeforeScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if c, ok := ctx.Value(leavingKey{}).(*leaving); ok {
			c.cancel()
			<-c.gone
		}
		return next(ctx, cmd)
	}
}

// TestLeaseOfACallerThatLeftDuringAdmissionIsGivenBack: calls whose contexts ended while
// their admission ran (a call_timeout shorter than queue_timeout, a cancel, a dropped
// connection) left their concurrency leases in Redis for the lease TTL: with
// max_concurrent 2, two such calls stopped the upstream for every replica for 2 minutes.
func TestLeaseOfACallerThatLeftDuringAdmissionIsGivenBack(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	rdb.AddHook(leaveBeforeScript{})
	t.Cleanup(func() { rdb.Close() })
	st, err := New(t.Context(), Options{Client: NewClient(rdb, testPrefix(t)), Timeout: time.Second, ProbeInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l := newLimiter(t, ratelimit.Options{
		Store:     st,
		Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
		Budgets: []ratelimit.Budget{{Match: "up", MaxConcurrent: 2, Requests: 100, Window: time.Minute,
			OnLimit: ratelimit.Reject}},
	})
	for i := range 4 {
		ctx, cancel := context.WithCancel(t.Context())
		c := &leaving{cancel: cancel, gone: make(chan struct{})}
		_, err := l.Acquire(context.WithValue(ctx, leavingKey{}, c), ratelimit.Request{Endpoint: "svc.get"})
		close(c.gone)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("call %d: %v, want context.Canceled", i, err)
		}
	}
	// the scripts run on after their callers left; what they took must come back by the
	// time they end (a look before they ran would find nothing taken yet)
	ended := make(chan struct{})
	go func() { st.calls.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the scripts of the callers that left did not end")
	}
	lease := st.key("up", "lease")
	if n, _ := rdb.ZCard(t.Context(), lease).Result(); n != 0 {
		t.Errorf("%d leases left by calls nobody sent, want 0", n)
	}
	if n, _ := rdb.ZCard(t.Context(), st.key("up", "req")).Result(); n != 0 {
		t.Errorf("%d units left in the requests window by calls nobody sent, want 0", n)
	}
	var held []ratelimit.Ticket
	for i := range 2 {
		tk, err := l.Acquire(t.Context(), ratelimit.Request{Endpoint: "svc.get"})
		if err != nil {
			t.Fatalf("call %d after the leaks: %v; the upstream is stopped", i, err)
		}
		held = append(held, tk)
	}
	for i := range held {
		held[i].Release()
	}
}

// TestLeasesOfAKilledReplicaComeBackWithinTheirTTL: a replica killed with calls in flight
// held its concurrency leases for 2 minutes (2 of 6 slots held 119.5 s). Leases live a
// short TTL, renewed while their calls run: the live replica's calls keep their slots past
// the TTL, and the killed one's come back within it.
func TestLeasesOfAKilledReplicaComeBackWithinTheirTTL(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 600 * time.Millisecond
	opts := ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
		Budgets:   []ratelimit.Budget{{Match: "up", MaxConcurrent: 2, OnLimit: ratelimit.Reject}},
	}
	var sts []*Store
	var ls []*ratelimit.Limiter
	for range 2 {
		st, err := New(t.Context(), Options{URL: srv.URL(), KeyPrefix: testPrefix(t), LeaseTTL: ttl, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		o := opts
		o.Store = st
		sts, ls = append(sts, st), append(ls, newLimiter(t, o))
	}
	live, err := ls[0].Acquire(t.Context(), ratelimit.Request{Endpoint: "svc.get"})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	doomed, err := ls[1].Acquire(t.Context(), ratelimit.Request{Endpoint: "svc.get"})
	if err != nil {
		t.Fatal(err)
	}
	_ = doomed // never released: its replica is killed
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	key := sts[0].key("up", "lease")
	first, err := rdb.ZRangeWithScores(t.Context(), key, 0, -1).Result()
	if err != nil || len(first) != 2 {
		t.Fatalf("leases %v (%v), want 2", first, err)
	}
	sts[1].Close() // the kill: its renewals stop, its calls are never released
	killed := time.Now()
	// the live call's lease is renewed past the TTL it was given at admission
	waitUntil(t, 3*ttl, func() bool {
		got, err := rdb.ZRangeWithScores(t.Context(), key, 0, -1).Result()
		return err == nil && len(got) > 0 && got[len(got)-1].Score > first[1].Score+float64(ttl.Microseconds()/2)
	})
	// and the killed replica's slot comes back within the TTL (and a renewal period)
	waitUntil(t, 3*ttl, func() bool {
		tk, err := ls[0].Acquire(t.Context(), ratelimit.Request{Endpoint: "svc.get"})
		if err != nil {
			return false
		}
		tk.Release()
		return true
	})
	t.Logf("the killed replica's slot came back %v after the kill", time.Since(killed).Round(time.Millisecond))
	if n, _ := rdb.ZCard(t.Context(), key).Result(); n != 1 {
		t.Errorf("%d leases left, want the live call's 1", n)
	}
}
