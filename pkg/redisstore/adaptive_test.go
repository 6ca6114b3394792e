package redisstore

import (
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// TestBare429InFlightDoesNotBlockEveryReplica: with max_concurrent: auto, a bare 429 to a
// call sent with others in flight blocked the upstream in Redis for a second, for every
// replica; it says only that too many were in flight, and the limit halves.
func TestBare429InFlightDoesNotBlockEveryReplica(t *testing.T) {
	srv := redistest.Start(t)
	r := newReplicas(t, srv, 2, 0, ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
		Budgets:   []ratelimit.Budget{{Match: "up", Adaptive: true, MinConcurrent: 4, MaxConcurrent: 8, OnLimit: ratelimit.Reject}},
	})
	var held []ratelimit.Ticket
	for i := range 3 {
		tk, err := r.ls[0].Acquire(t.Context(), ratelimit.Request{Endpoint: "svc.get"})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		held = append(held, tk)
	}
	held[2].Observe(http.StatusTooManyRequests, http.Header{}, nil)
	for i := range held {
		held[i].Release()
	}
	keys, err := redis.NewClient(&redis.Options{Addr: srv.Addr()}).Keys(t.Context(), testPrefix(t)+"*blk:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Errorf("blocks in Redis after a bare 429 with calls in flight: %q, want none", keys)
	}
	for i, l := range r.ls {
		tk, err := l.Acquire(t.Context(), ratelimit.Request{Endpoint: "svc.get"})
		if err != nil {
			t.Errorf("replica %d after the 429: %v, want the call admitted", i, err)
			continue
		}
		tk.Release()
	}
	if got := r.ls[0].StatusAt(time.Now(), nil).Upstreams[0].Adaptive; got == nil || got.Limit != 4 {
		t.Errorf("adaptive %+v, want the limit at its min 4 after halving", got)
	}
}
