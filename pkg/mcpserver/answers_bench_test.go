package mcpserver

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"runtime"
	"testing"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/invoke"
)

// BenchmarkMemory100LargeAnswers makes 100 invoke calls that each return
// about 670 KB through the MCP server, keeping every answer the store can
// hold, then reads the heap in use after a GC. The bound is
// response_store_bytes (64 MiB) + 100 MB; heap-MB reports it, store-MB what
// the store counts as held.
//
//   - github: a 30-item GitHub page of GitHub's own example object, as the
//     upstream serves it (it deflates far below its size: all 100 stay);
//   - incompressible: a different page of random strings each call, which
//     deflate little, so the store fills to its bound and evicts.
func BenchmarkMemory100LargeAnswers(b *testing.B) {
	const calls = 100
	const bound = 64<<20 + 100_000_000
	random := func(w http.ResponseWriter, r *http.Request) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
		items := make([]map[string]any, 30)
		for i := range items {
			raw := make([]byte, 16_800)
			for j := range raw {
				raw[j] = byte(rng.Uint32())
			}
			items[i] = map[string]any{"number": i + 1, "title": "pull request", "body": base64.StdEncoding.EncodeToString(raw)}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(items)
	}
	for _, tt := range []struct {
		name, repo string
	}{{"github", "rails"}, {"incompressible", "random"}} {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				store := answer.NewMemoryAnswers(answer.MemoryAnswersOptions{})
				f := newPagingFixture(b, pagingOptions{items: 30, server: Options{Caller: invoke.Caller{Answers: store}},
					odd: map[string]func(http.ResponseWriter, *http.Request){"random": random}})
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				b.StartTimer()
				var ids []string
				args := map[string]any{"endpointId": "paging.listPulls", "parameters": map[string]any{"owner": "rails", "repo": tt.repo}}
				for i := range calls {
					a := callText(b, f.client, "invoke", args).ok(b)
					id, _ := a.m["responseId"].(string)
					if size, _ := a.m["size"].(float64); id == "" || len(a.text) > answer.DefaultResultBytes || size < 600_000 {
						b.Fatalf("call %d: %d bytes of a %v-byte body, responseId %q", i, len(a.text), a.m["size"], id)
					}
					ids = append(ids, id)
				}
				b.StopTimer()
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				// The last answer is still readable: the heap holds what the store keeps.
				callText(b, f.client, "read_response", map[string]any{"responseId": ids[calls-1], "jq": "length"}).ok(b)
				if after.HeapInuse > bound {
					b.Errorf("heap in use %d MB, over the %d MB bound", after.HeapInuse>>20, bound>>20)
				}
				b.ReportMetric(float64(after.HeapInuse)/(1<<20), "heap-MB")
				b.ReportMetric((float64(after.HeapInuse)-float64(before.HeapInuse))/(1<<20), "heap-growth-MB")
				b.ReportMetric(float64(store.Bytes())/(1<<20), "store-MB")
				b.ReportMetric(float64(store.Len()), "stored")
				b.ReportMetric(float64(after.Sys)/(1<<20), "sys-MB")
				b.StartTimer()
			}
		})
	}
}
