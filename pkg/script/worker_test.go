package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/codes"
)

// The test binary is its own worker: run with this variable set, it is
// `specgate script-worker`.
const workerEnv = "SPECGATE_TEST_SCRIPT_WORKER"

func TestMain(m *testing.M) {
	switch os.Getenv(workerEnv) {
	case "1":
		os.Exit(WorkerMain(os.Args[1:], os.Stdin, os.Stdout))
	case "oom":
		// A worker the OS backstop killed: the runtime's last words.
		os.Stderr.WriteString("fatal error: runtime: out of memory\n")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

func testWorker() *Worker {
	return &Worker{Path: os.Args[0], Env: []string{workerEnv + "=1"}}
}

func TestWorkerPagesAListAndLoopsOverItems(t *testing.T) {
	f := &fakeCaller{}
	res, err := testWorker().Run(t.Context(), `
let args = {parameters: {}}, titles = [];
for (;;) {
  const r = await api.invoke("t.list", args);
  for (const pr of r.body) titles.push(pr.title);
  if (!r.nextPage) break;
  args = r.nextPage;
}
const picked = await Promise.all([2, 5, 7].map(n => api.invoke("t.get", {parameters: {n}})));
console.log("pages done", titles.length);
return {titles: titles.length, authors: picked.map(r => r.body.user.login)};`, f, Options{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := string(res.Value), `{"titles":9,"authors":["ada","ada","ada"]}`; got != want {
		t.Errorf("value %s, want %s", got, want)
	}
	if res.Calls.Total != 6 || res.Calls.ByStatus["200"] != 6 {
		t.Errorf("calls %+v, want 6 counted by the parent", res.Calls)
	}
	if res.QueueWait != 30*time.Millisecond {
		t.Errorf("queue wait %v, want 30ms", res.QueueWait)
	}
	if len(res.Logs) != 1 || res.Logs[0] != "pages done 9" {
		t.Errorf("logs %q", res.Logs)
	}
	if len(f.calls) != 6 {
		t.Errorf("%d calls reached the parent's caller, want 6", len(f.calls))
	}
}

func TestWorkerCallErrorsThrowWithTheirFacts(t *testing.T) {
	res, err := testWorker().Run(t.Context(), `
try { await api.invoke("t.limited", {}); } catch (e) {
  return {isError: e instanceof Error, code: e.code, retry: e.retryAfterSeconds, scope: e.scope};
}`, &fakeCaller{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.Value), `{"isError":true,"code":"rate_limit","retry":8.2,"scope":"proxy"}`; got != want {
		t.Errorf("value %s, want %s", got, want)
	}
}

func workerErr(t *testing.T, ctx context.Context, code string, c Caller, opts Options) (*Error, time.Duration) {
	t.Helper()
	start := time.Now()
	_, err := testWorker().Run(ctx, code, c, opts)
	took := time.Since(start)
	var se *Error
	if !errors.As(err, &se) || se.Result == nil {
		t.Fatalf("Run: %v, want an *Error with calls and logs", err)
	}
	return se, took
}

// TestWorkerHoldsTheBounds: what an in-process run can only sample, a
// worker holds with OS limits, and the parent's memory does not move.
func TestWorkerHoldsTheBounds(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the worker's OS limits are Linux's")
	}
	tests := []struct {
		name, code, want, msg string
		opts                  Options
	}{
		{"endless loop", `while (true) {}`, codes.Timeout, "deadline", Options{Timeout: time.Second}},
		{"array pushed forever", `const a = []; for (;;) a.push({x: "yyyyyyyyyyyyyyyy" + a.length});`, codes.ScriptError, "heap) passed its 64 MiB bound", Options{Timeout: 30 * time.Second}},
		{"string doubled", `let s = "x"; for (;;) s += s;`, codes.ScriptError, "heap) passed its 64 MiB bound", Options{Timeout: 30 * time.Second}},
		{"huge repeat", `return "x".repeat(2**30).length;`, codes.ScriptError, "memory", Options{}},
		{"deep recursion", `function f(n) { return f(n + 1) + 1; } return f(0);`, codes.ScriptError, "call stack", Options{}},
		{"logs kept up to the kill", "console.log('before');\nwhile (true) {}", codes.Timeout, "deadline", Options{Timeout: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			se, took := workerErr(t, t.Context(), tt.code, &fakeCaller{}, tt.opts)
			if se.Code != tt.want || !strings.Contains(se.Message, tt.msg) {
				t.Fatalf("%s: %q, want %s naming %q", se.Code, se.Message, tt.want, tt.msg)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			grew := int64(after.HeapInuse) - int64(before.HeapInuse)
			t.Logf("stopped after %v; worker peak RSS %d MiB; parent heap grew %d KiB", took.Round(time.Millisecond), se.Result.PeakRSS>>20, grew>>10)
			if grew > 16<<20 {
				t.Errorf("the parent's heap grew %d MiB while the worker ran", grew>>20)
			}
			// Linux counts in a child's peak RSS the parent's pages it
			// shared before exec (Go forks with CLONE_VM): the figure says
			// something about the worker only while the parent is smaller.
			// One step of a bomb (a string doubled) can allocate twice
			// what the run held before the sampler sees the heap past the
			// bound; the address-space backstop is far above it.
			bound := int64(4*DefaultMaxMemory + 48<<20)
			if tt.want == codes.ScriptError && strings.Contains(tt.msg, "bound") && !raceEnabled && selfPeakRSS() < bound {
				if se.Result.PeakRSS > bound {
					t.Errorf("the worker peaked at %d MiB, want at most %d MiB", se.Result.PeakRSS>>20, bound>>20)
				}
			}
			if tt.want == codes.Timeout && took > tt.opts.Timeout+workerGrace+time.Second {
				t.Errorf("stopped after %v, want within the %v deadline and its grace", took, tt.opts.Timeout)
			}
			if strings.HasPrefix(tt.name, "logs") && (len(se.Result.Logs) != 1 || se.Result.Logs[0] != "before") {
				t.Errorf("logs %q, want the line logged before the loop", se.Result.Logs)
			}
		})
	}
}

// TestWorkerCancellationLeavesTheQueue: cancelling the run kills the
// worker, ends the parent's calls in flight and starts no more.
func TestWorkerCancellationLeavesTheQueue(t *testing.T) {
	f := &fakeCaller{block: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := testWorker().Run(ctx, `await Promise.all(Array.from({length: 10}, (_, n) => api.invoke("t.get", {parameters: {n}})));`, f, Options{MaxConcurrent: 2})
		done <- err
	}()
	for f.inflight.Load() < 2 {
		select {
		case err := <-done: // not a hang until the test's timeout
			t.Fatalf("the run ended before two calls were in flight: %v", err)
		default:
			runtime.Gosched()
		}
	}
	cancel()
	err := <-done
	var se *Error
	if !errors.As(err, &se) || se.Code != codes.Cancelled {
		t.Fatalf("err %v, want cancelled", err)
	}
	f.mu.Lock()
	n := len(f.calls)
	f.mu.Unlock()
	if n != 2 {
		t.Errorf("%d calls reached the caller, want the 2 in flight", n)
	}
	if f.inflight.Load() != 0 {
		t.Errorf("%d calls still in flight after the run ended", f.inflight.Load())
	}
}

// TestWorkerCountsCallsItself: the parent bounds calls by max_calls
// whatever the worker says.
func TestWorkerCountsCallsItself(t *testing.T) {
	f := &fakeCaller{}
	se, _ := workerErr(t, t.Context(), `for (let i = 0; i < 10000; i++) await api.invoke("t.get", {parameters: {n: i}});`, f, Options{MaxCalls: 5})
	if !strings.Contains(se.Message, "max_calls") || len(f.calls) != 5 {
		t.Errorf("%v after %d calls, want a refusal naming scripts.max_calls after 5", se, len(f.calls))
	}
}

// TestWorkerSeesNoEnvironment: the worker starts with an empty
// environment, so no secret of the parent's is in its process.
func TestWorkerSeesNoEnvironment(t *testing.T) {
	t.Setenv("SPECGATE_TEST_SECRET", "s3cr3t")
	w := testWorker()
	if strings.Contains(strings.Join(w.Env, " "), "s3cr3t") {
		t.Fatal("the worker would be given the secret")
	}
	res, err := w.Run(t.Context(), `return typeof process + " " + typeof require + " " + typeof setTimeout;`, &fakeCaller{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `"undefined undefined undefined"` {
		t.Errorf("value %s", res.Value)
	}
}

// A worker killed by its address-space backstop was reported as "the
// script's memory passed its bound", which the script's heap had not: the
// answer says the OS killed the worker at its backstop, far above the bound.
func TestWorkerKilledByItsBackstopSaysSo(t *testing.T) {
	w := &Worker{Path: os.Args[0], Env: []string{workerEnv + "=oom"}}
	_, err := w.Run(t.Context(), `return 1;`, &fakeCaller{}, Options{})
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("Run: %v, want an *Error", err)
	}
	if se.Code != codes.ScriptError || !strings.Contains(se.Message, "killed by the OS") || strings.Contains(se.Message, "passed its") {
		t.Errorf("%s: %q, want script_error saying the OS killed the worker at its backstop", se.Code, se.Message)
	}
}

// TestWorkerReadsARawBodyWhole: a body handed over as JSON text crosses
// the pipe as its own bytes, newlines between its tokens and all, and the
// script reads it as values.
func TestWorkerReadsARawBodyWhole(t *testing.T) {
	body := json.RawMessage("[\n  {\"n\": 1, \"s\": \"a\\nb \\u2028 é\"},\n  {\"n\": 12345678901234567890}\r\n]\n")
	for _, runner := range []struct {
		name string
		r    Runner
	}{{"in process", InProcess{}}, {"worker", testWorker()}} {
		t.Run(runner.name, func(t *testing.T) {
			res, err := runner.r.Run(t.Context(), `const r = await api.invoke("raw", {}); return [r.statusCode, r.headers.etag, r.body.length, r.body[0].s, r.body[1].n > 1e19, r.nextPage];`,
				rawCaller{body}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(res.Value, &v); err != nil {
				t.Fatal(err)
			}
			if got, want := mustJSON(v), mustJSON([]any{200, "x", 2, "a\nb \u2028 é", true, map[string]any{"parameters": map[string]any{"page": 2}}}); got != want {
				t.Errorf("value %s, want %s", got, want)
			}
		})
	}
}

type rawCaller struct{ body json.RawMessage }

func (c rawCaller) Invoke(ctx context.Context, id string, a Args) (*Response, error) {
	return &Response{StatusCode: 200, Headers: map[string]string{"etag": "x"}, Body: c.body,
		NextPage: map[string]any{"parameters": map[string]any{"page": 2}}}, nil
}

func (c rawCaller) Search(ctx context.Context, q string, limit int) (any, error) { return nil, nil }

// TestWorkerReadsTheArgumentsAsInProcess: a worker sends its arguments as
// the script's JSON text and the parent reads them once, as a run in
// process does: numbers exact (json.Number), not float64.
func TestWorkerReadsTheArgumentsAsInProcess(t *testing.T) {
	for _, runner := range []struct {
		name string
		r    Runner
	}{{"in process", InProcess{}}, {"worker", testWorker()}} {
		t.Run(runner.name, func(t *testing.T) {
			c := &argsCaller{}
			if _, err := runner.r.Run(t.Context(), `await api.invoke("x", {parameters: {n: 1e21, id: 12345}, pages: 2}); return 1;`, c, Options{}); err != nil {
				t.Fatal(err)
			}
			if got, want := c.got, "json.Number 1e+21, json.Number 12345, 2 pages"; got != want {
				t.Errorf("the caller read %q, want %q", got, want)
			}
		})
	}
}

type argsCaller struct{ got string }

func (c *argsCaller) Invoke(ctx context.Context, id string, a Args) (*Response, error) {
	c.got = fmt.Sprintf("%T %v, %T %v, %d pages", a.Parameters["n"], a.Parameters["n"], a.Parameters["id"], a.Parameters["id"], a.Pages)
	return &Response{StatusCode: 200}, nil
}

func (c *argsCaller) Search(ctx context.Context, q string, limit int) (any, error) { return nil, nil }
