package redisstore

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

func TestRedisStoreKeysHavePrefixAndTTL(t *testing.T) {
	srv := redistest.Start(t)
	st := newTestStore(t, srv, 0)
	l := newLimiter(t, ratelimit.Options{
		Store:     st,
		Endpoints: []ratelimit.Endpoint{{ID: "s.a", Upstream: "up", Interval: time.Second}},
		Budgets: []ratelimit.Budget{{Match: "up", Requests: 5, Tokens: 100, MinInterval: time.Millisecond,
			MaxConcurrent: 2}},
	})
	tk, err := l.AdmitAt(ratelimit.Request{Endpoint: "s.a", Tokens: 10}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tk.ObserveAt(ratelimit.Signal{Status: 429, RateLimited: true, Source: "status"}, time.Now())
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	keys, err := c.Keys(t.Context(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 8 {
		t.Errorf("got keys %q, want 8 (cooldown, requests, tokens, last, lease, block, epoch, replicas seen)", keys)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, testPrefix(t)) {
			t.Errorf("key %q lacks the prefix %q", k, testPrefix(t))
		}
		if ttl := c.PTTL(t.Context(), k).Val(); ttl <= 0 {
			t.Errorf("key %q has no TTL (%v)", k, ttl)
		}
	}
	tk.Release()
	if n := c.ZCard(t.Context(), testPrefix(t)+"{up}:lease").Val(); n != 0 {
		t.Errorf("leases after release = %d, want 0", n)
	}
}

func TestRedisStoreStartsDegradedAndRecovers(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	st := newTestStore(t, srv, 0.5)
	if down, since, reason := st.Degraded(); !down || since.IsZero() || !strings.Contains(reason, "redis unreachable") {
		t.Fatalf("Degraded() = %v, %v, %q; want degraded with a reason", down, since, reason)
	}
	l := newLimiter(t, ratelimit.Options{Store: st, Endpoints: []ratelimit.Endpoint{{ID: "s.a", Upstream: "up"}},
		Budgets: []ratelimit.Budget{{Match: "up", Requests: 4, Window: time.Minute}}})
	// share 0.5 of 4: two calls, then refused: never fail open
	now := time.Now()
	for i := range 3 {
		_, err := l.AdmitAt(ratelimit.Request{Endpoint: "s.a"}, now)
		if i < 2 && err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if i == 2 {
			if le := limitErr(t, err); le.Kind != ratelimit.KindRequests || le.Limit != 2 {
				t.Fatalf("got %v, want a requests refusal at the fallback share of 2", err)
			}
		}
	}
	if st := l.StatusAt(now, nil); !st.Degraded || st.Store != "shared" {
		t.Errorf("status: degraded %v store %q, want degraded shared", st.Degraded, st.Store)
	}
	srv.Restart()
	waitUntil(t, 5*time.Second, func() bool { return st.Available("") })
	if down, _, _ := l.Degraded(); down {
		t.Error("still degraded after Redis came back")
	}
}
