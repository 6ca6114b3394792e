package mcpserver

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/redisstore"
	"github.com/specgate/specgate/pkg/serve"
)

// newHTTPRedisFixture is newHTTPFixture with the limiter and the inbound windows shared
// through a redisstore.Store on redisURL, under a key prefix of its own. The store must be
// up: a degraded store would measure the fallback, not Redis.
func newHTTPRedisFixture(b *testing.B, redisURL string, opts serve.Options) *httpFixture {
	b.Helper()
	store, err := redisstore.New(b.Context(), redisstore.Options{
		URL:       redisURL,
		KeyPrefix: fmt.Sprintf("bench:%s:%x:", b.Name(), rand.Uint32()),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	if !store.Available("") {
		b.Fatal("redis store degraded at start")
	}
	f := newHTTPFixtureOn(b, opts, 0, store)
	b.Cleanup(func() {
		if d, _, why := f.limiter.Degraded(); d {
			b.Errorf("the store was degraded during the benchmark (%s): the figures are the fallback's", why)
		}
	})
	return f
}

// BenchmarkHTTPRedisThroughput is BenchmarkHTTPThroughput with the inbound budgets and
// the limiter shared through Redis: every request takes the requests window in Redis;
// tools/call takes the tool-calls window too; invoke also runs the admission script.
func BenchmarkHTTPRedisThroughput(b *testing.B) {
	redisURL := redistest.Start(b).URL()
	benchThroughput(b, func(b *testing.B) *httpFixture { return newHTTPRedisFixture(b, redisURL, benchHTTPOptions()) })
}

// BenchmarkHTTPRedisInvokeLatency is BenchmarkHTTPInvokeLatency with Redis: the latency
// specgate adds to a call (auth, inbound windows and admission in Redis, governance,
// audit) against an instant upstream, less the same GET sent to the upstream directly.
func BenchmarkHTTPRedisInvokeLatency(b *testing.B) {
	benchInvokeLatency(b, newHTTPRedisFixture(b, redistest.Start(b).URL(), benchHTTPOptions()))
}
