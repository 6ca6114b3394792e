package mcpserver

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/serve"
)

// benchHTTPOptions turn auth and every inbound budget on, high enough
// never to refuse.
func benchHTTPOptions() serve.Options {
	return serve.Options{
		Tokens:              map[string]Principal{"bench-token": {Subject: "bench", Org: "acme"}},
		RequestsPerWindow:   1 << 20,
		ToolCallsPerWindow:  1 << 20,
		FailedAuthPerWindow: 10,
		Now:                 time.Now,
	}
}

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
}

func benchPost(b *testing.B, c *http.Client, url, body string) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer bench-token")
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// BenchmarkHTTPThroughput is sustained MCP requests per second over
// loopback HTTP with auth and inbound budgets on.
func BenchmarkHTTPThroughput(b *testing.B) {
	benchThroughput(b, func(b *testing.B) *httpFixture { return newHTTPFixture(b, benchHTTPOptions(), 0) })
}

// BenchmarkHTTPInvokeLatency is the latency specgate adds to a call: an
// invoke over HTTP (auth, budgets, governance, audit) against an instant
// upstream, less the same GET sent to the upstream directly.
func BenchmarkHTTPInvokeLatency(b *testing.B) {
	benchInvokeLatency(b, newHTTPFixture(b, benchHTTPOptions(), 0))
}

// benchThroughput runs a ping, a search and an invoke, eight at a time, on a
// fresh fixture each.
func benchThroughput(b *testing.B, fixture func(*testing.B) *httpFixture) {
	for _, bc := range []struct{ name, body string }{
		{"ping", rpc(1, "ping", nil)},
		{"search", toolsCall(1, "search", map[string]any{"query": "find pets by status", "limit": 5})},
		{"invoke", toolsCall(1, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := fixture(b)
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

// benchInvokeLatency alternates a direct GET to the upstream and the same
// call as an invoke through f, and reports their p50 and p99 and the
// difference.
func benchInvokeLatency(b *testing.B, f *httpFixture) {
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
