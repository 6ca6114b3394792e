package redisstore_test

import (
	"context"
	"log"
	"log/slog"
	"time"

	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/redisstore"
)

// Three replicas each run this against one Redis Cluster: the upstream's budget holds for
// all of them together, and while the slot of api.example.com:443 does not answer, each
// runs on a third of it.
func ExampleNew() {
	ctx := context.Background()
	st, err := redisstore.New(ctx, redisstore.Options{
		URL:     "redis://10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000",
		Cluster: true,
		Logger:  slog.Default(),
	})
	if err != nil {
		log.Fatal(err) // options that make no sense; an unreachable cluster is not an error
	}
	defer st.Close()
	l, err := ratelimit.New(ratelimit.Options{
		Store:     st,
		Endpoints: []ratelimit.Endpoint{{ID: "api.getThing", Upstream: "api.example.com:443"}},
		Budgets:   []ratelimit.Budget{{Match: "api.example.com:443", Requests: 100, Window: time.Minute}},
	})
	if err != nil {
		log.Fatal(err)
	}
	t, err := l.Acquire(ctx, ratelimit.Request{Endpoint: "api.getThing"})
	if err != nil {
		log.Print(err) // a *ratelimit.LimitError says how long to wait
		return
	}
	defer t.Release()
	// ... call the upstream, then t.Observe its answer
}
