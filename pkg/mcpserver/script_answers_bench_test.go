package mcpserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/script"
)

// scriptWorkerEnv makes the test binary a script worker, as serve starts
// the specgate binary: the server's side of a run is then all this process
// allocates.
const scriptWorkerEnv = "SPECGATE_TEST_SCRIPT_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(scriptWorkerEnv) == "1" {
		os.Exit(script.WorkerMain(os.Args[1:], os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

func testScriptWorker() *script.Worker {
	return &script.Worker{Path: os.Args[0], Env: []string{scriptWorkerEnv + "=1"}}
}

// bigList is a list of about size bytes of JSON, pull-request-like items.
func bigList(size int) []byte {
	item := func(i int) map[string]any {
		return map[string]any{"number": i, "title": fmt.Sprintf("change %d", i), "state": "open",
			"body": strings.Repeat("words of a description ", 40), "labels": []string{"a", "b"},
			"user":  map[string]any{"login": fmt.Sprintf("dev%d", i%97), "url": "https://api.example.com/users/dev"},
			"links": map[string]any{"self": fmt.Sprintf("https://api.example.com/pulls/%d", i), "html": fmt.Sprintf("https://example.com/pulls/%d", i)}}
	}
	one, _ := json.Marshal(item(0))
	var items []any
	for i := range size / len(one) {
		items = append(items, item(i))
	}
	b, _ := json.Marshal(items)
	return b
}

// peakHeap samples the heap's objects every millisecond until stop is
// called, and returns the most seen.
func peakHeap() (stop func() uint64) {
	done := make(chan struct{})
	var peak uint64
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak }
}

// BenchmarkScriptAnswersInTheServer measures what the server allocates,
// and its heap's peak, for a call reading a 7.7 MB list, one or six at
// once: as a direct invoke, and as a run_script (its worker a separate
// process) whose script reads the whole list.
func BenchmarkScriptAnswersInTheServer(b *testing.B) {
	list := bigList(7700 << 10)
	serve := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(list)
	}
	f := newPagingFixture(b, pagingOptions{odd: map[string]func(http.ResponseWriter, *http.Request){"big": serve},
		client: invoke.Options{MaxResponseBytes: 16 << 20},
		server: Options{Scripts: ScriptOptions{Runner: testScriptWorker(), MaxMemory: 1 << 30, PerPrincipal: 6}}})
	params := map[string]any{"owner": "o", "repo": "big"}
	for _, v := range []struct {
		name   string
		tool   string
		args   map[string]any
		atOnce int
	}{
		{"invoke", "invoke", map[string]any{"endpointId": "paging.listPulls", "parameters": params}, 1},
		{"run_script", "run_script", map[string]any{"code": `const r = await api.invoke("paging.listPulls", {parameters: {owner: "o", repo: "big"}}); return r.body.length;`}, 1},
		{"invoke_6_at_once", "invoke", map[string]any{"endpointId": "paging.listPulls", "parameters": params}, 6},
		{"run_script_6_at_once", "run_script", map[string]any{"code": `const r = await api.invoke("paging.listPulls", {parameters: {owner: "o", repo: "big"}}); return r.body.length;`}, 6},
	} {
		b.Run(v.name, func(b *testing.B) {
			runtime.GC()
			stop := peakHeap()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for range b.N {
				var wg sync.WaitGroup
				failed := make(chan string, v.atOnce)
				for range v.atOnce {
					wg.Go(func() {
						if a := callText(b, f.client, v.tool, v.args); a.isErr {
							failed <- a.text
						}
					})
				}
				wg.Wait()
				close(failed)
				for text := range failed {
					b.Fatalf("%s: %.300s", v.tool, text)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			peak := stop()
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N*v.atOnce)/(1<<20), "server-MB/call")
			b.ReportMetric(float64(peak-before.HeapAlloc)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(len(list))/(1<<20), "list-MB")
		})
	}
}

// A script's answer cost the server three times a direct invoke's:
// scriptBody decoded every body into Go values and the worker's pipe
// marshalled it twice more (eight 7.7 MB calls peaked at 910-936 MB in
// two scripts, 279-314 MB as invokes). The body's own bytes now cross the
// pipe; the server allocates for a script's call about what it does for
// the same call as an invoke.
func TestRunScriptAnswerCostsTheServerAsAnInvokeDoes(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a 3 MB list three times")
	}
	list := bigList(3 << 20)
	f := newPagingFixture(t, pagingOptions{odd: map[string]func(http.ResponseWriter, *http.Request){"big": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(list)
	}}, server: Options{Scripts: ScriptOptions{Runner: testScriptWorker(), MaxMemory: 1 << 30}}})
	allocated := func(tool string, args map[string]any) uint64 {
		t.Helper()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		a := callText(t, f.client, tool, args)
		runtime.ReadMemStats(&after)
		if a.isErr {
			t.Fatalf("%s: %.300s", tool, a.text)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	params := map[string]any{"owner": "o", "repo": "big"}
	allocated("invoke", map[string]any{"endpointId": "paging.listPulls", "parameters": params}) // warm
	inv := allocated("invoke", map[string]any{"endpointId": "paging.listPulls", "parameters": params})
	run := allocated("run_script", map[string]any{"code": `const r = await api.invoke("paging.listPulls", {parameters: {owner: "o", repo: "big"}}); return r.body.length;`})
	t.Logf("a %d KB list: invoke allocated %d KB in the server, run_script %d KB", len(list)>>10, inv>>10, run>>10)
	if run > inv*3/2 {
		t.Errorf("run_script allocated %d KB in the server, over 1.5 times invoke's %d KB", run>>10, inv>>10)
	}
}
