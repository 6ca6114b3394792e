package mcpserver

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/search"
	"github.com/specgate/specgate/pkg/spec"
)

// newHTTPRedisFixture is newHTTPFixture with the limiter and the inbound windows shared
// through a RedisStore on redisURL, under a key prefix of its own. The store must be
// up: a degraded store would measure the fallback, not Redis.
func newHTTPRedisFixture(b *testing.B, redisURL string, opts HTTPOptions) *httpFixture {
	b.Helper()
	store, err := ratelimit.NewRedisStore(context.Background(), ratelimit.RedisOptions{
		URL:       redisURL,
		KeyPrefix: fmt.Sprintf("bench:%s:%x:", b.Name(), rand.Uint32()),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	if !store.Available() {
		b.Fatal("redis store degraded at start")
	}
	rec := &recorder{}
	up := httptest.NewServer(rec)
	b.Cleanup(up.Close)
	s, err := spec.Load(context.Background(), "../../testdata/petstore-v3.yaml", spec.Options{Name: "petstore", BaseURL: up.URL + "/api/v3"})
	if err != nil {
		b.Fatal(err)
	}
	cat, err := spec.NewCatalog(s)
	if err != nil {
		b.Fatal(err)
	}
	ix, err := search.New(cat, search.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var eps []ratelimit.Endpoint
	for _, e := range cat.Endpoints() {
		eps = append(eps, ratelimit.Endpoint{ID: e.ID, Upstream: HostKey(e.BaseURL)})
	}
	l, err := ratelimit.New(ratelimit.Options{Endpoints: eps, Store: store})
	if err != nil {
		b.Fatal(err)
	}
	cl := invoke.New(invoke.Options{})
	b.Cleanup(cl.Close)
	audit := &lockedBuffer{}
	srv := New(Options{SpecNames: []string{"petstore"}, Client: cl, Limiter: l, Audit: audit})
	srv.Publish(cat, ix, nil)
	opts.Windows = NewWindows(store, 0)
	opts.Degraded = func() (bool, string) {
		d, _, why := l.Degraded()
		return d, why
	}
	ts := httptest.NewServer(srv.HTTPHandlerWith(opts))
	b.Cleanup(ts.Close)
	b.Cleanup(func() {
		if d, _, why := l.Degraded(); d {
			b.Errorf("the store was degraded during the benchmark (%s): the figures are the fallback's", why)
		}
	})
	return &httpFixture{srv: srv, ts: ts, upstream: rec, upstreamURL: up.URL, audit: audit}
}

// BenchmarkHTTPRedisThroughput is BenchmarkHTTPThroughput with the inbound budgets and
// the limiter shared through Redis: sustained MCP requests per second over loopback HTTP
// with auth and inbound budgets on. Every request takes the requests window in Redis;
// tools/call takes the tool-calls window too; invoke also runs the admission script.
func BenchmarkHTTPRedisThroughput(b *testing.B) {
	redisURL := redistest.Start(b).URL()
	for _, bc := range []struct{ name, body string }{
		{"ping", rpc(1, "ping", nil)},
		{"search", toolsCall(1, "search", map[string]any{"query": "find pets by status", "limit": 5})},
		{"invoke", toolsCall(1, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := newHTTPRedisFixture(b, redisURL, benchHTTPOptions())
			c := benchClient()
			url := f.ts.URL + "/mcp"
			b.ReportAllocs()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					benchPost(b, c, url, bc.body)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// BenchmarkHTTPRedisInvokeLatency is BenchmarkHTTPInvokeLatency with Redis: the latency
// specgate adds to a call (auth, inbound windows and admission in Redis, governance,
// audit) against an instant upstream, less the same GET sent to the upstream directly.
func BenchmarkHTTPRedisInvokeLatency(b *testing.B) {
	f := newHTTPRedisFixture(b, redistest.Start(b).URL(), benchHTTPOptions())
	c := benchClient()
	mcpURL := f.ts.URL + "/mcp"
	directURL := f.upstreamURL + "/api/v3/pet/1"
	body := toolsCall(1, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}})
	direct := make([]time.Duration, 0, b.N)
	via := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		resp, err := c.Get(directURL)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		direct = append(direct, time.Since(start))

		start = time.Now()
		benchPost(b, c, mcpURL, body)
		via = append(via, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(direct)
	slices.Sort(via)
	q := func(d []time.Duration, p float64) float64 {
		return float64(d[int(p*float64(len(d)-1))].Microseconds())
	}
	b.ReportMetric(q(direct, .5), "direct-p50-us")
	b.ReportMetric(q(direct, .99), "direct-p99-us")
	b.ReportMetric(q(via, .5), "specgate-p50-us")
	b.ReportMetric(q(via, .99), "specgate-p99-us")
	b.ReportMetric(q(via, .5)-q(direct, .5), "added-p50-us")
	b.ReportMetric(q(via, .99)-q(direct, .99), "added-p99-us")
}
