package mcpserver

import (
	"runtime"
	"testing"

	"github.com/specgate/specgate/pkg/invoke"
)

// BenchmarkMemory100LargeAnswers makes 100 invoke calls that each return a
// 30-item GitHub page (≈670 KB) through the MCP server, all kept in the
// answer store, then reads the heap in use after a GC. The bound is
// response_store_bytes (64 MiB) + 100 MB; heap-MB reports it.
func BenchmarkMemory100LargeAnswers(b *testing.B) {
	const calls = 100
	const bound = 64<<20 + 100_000_000
	for b.Loop() {
		b.StopTimer()
		f := newPagingFixture(b, pagingOptions{items: 30})
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		var ids []string
		for i := range calls {
			a := callText(b, f.client, "invoke", listPulls).ok(b)
			id, _ := a.m["responseId"].(string)
			if id == "" || len(a.text) > invoke.DefaultResultBytes {
				b.Fatalf("call %d: %d bytes, responseId %q", i, len(a.text), id)
			}
			ids = append(ids, id)
		}
		b.StopTimer()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		// Every answer is still readable: the heap holds them all.
		callText(b, f.client, "read_response", map[string]any{"responseId": ids[0], "jq": "length"}).ok(b)
		if after.HeapInuse > bound {
			b.Errorf("heap in use %d MB, over the %d MB bound", after.HeapInuse>>20, bound>>20)
		}
		b.ReportMetric(float64(after.HeapInuse)/(1<<20), "heap-MB")
		b.ReportMetric((float64(after.HeapInuse)-float64(before.HeapInuse))/(1<<20), "heap-growth-MB")
		b.ReportMetric(float64(after.Sys)/(1<<20), "sys-MB")
		b.StartTimer()
	}
}
