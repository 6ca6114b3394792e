package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/codes"
)

// fakeCaller answers api calls from a table and records them; it tracks
// how many are in flight at once.
type fakeCaller struct {
	mu       sync.Mutex
	calls    []string
	inflight atomic.Int32
	peak     atomic.Int32
	block    chan struct{} // when set, every call waits for it or its ctx
}

func (f *fakeCaller) Invoke(ctx context.Context, id string, a Args) (*Response, error) {
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, id+" "+mustJSON(a.Parameters))
	f.mu.Unlock()
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return nil, &CallError{Code: "cancelled", Message: "cancelled"}
		}
	}
	switch id {
	case "t.list":
		page := 1
		if p, ok := a.Parameters["page"]; ok {
			fmt.Sscan(fmt.Sprint(p), &page)
		}
		var items []any
		for i := range 3 {
			items = append(items, map[string]any{"number": (page-1)*3 + i + 1, "title": fmt.Sprintf("pr %d", (page-1)*3+i+1)})
		}
		r := &Response{StatusCode: 200, Body: items, QueueWait: 10 * time.Millisecond}
		if page < 3 {
			r.NextPage = map[string]any{"parameters": map[string]any{"page": page + 1}}
		}
		return r, nil
	case "t.get":
		return &Response{StatusCode: 200, Body: map[string]any{"number": a.Parameters["n"], "user": map[string]any{"login": "ada"}}}, nil
	case "t.limited":
		return nil, &CallError{Code: "rate_limit", Message: "cooling down", RetryAfterSeconds: 8.2, Scope: "proxy"}
	}
	return nil, &CallError{Code: "not_found", Message: "no endpoint " + id}
}

func (f *fakeCaller) Search(ctx context.Context, q string, limit int) (any, error) {
	return map[string]any{"endpoints": []any{map[string]any{"id": "t.list", "q": q, "limit": limit}}}, nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func runOK(t *testing.T, code string, c Caller, opts Options) *Result {
	t.Helper()
	res, err := Run(t.Context(), code, c, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func runErr(t *testing.T, code string, c Caller, opts Options) *Error {
	t.Helper()
	_, err := Run(t.Context(), code, c, opts)
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("Run: %v, want an *Error", err)
	}
	if se.Result == nil {
		t.Fatalf("%v carries no calls and logs", se)
	}
	return se
}

func TestPagesAListAndLoopsOverItems(t *testing.T) {
	f := &fakeCaller{}
	res := runOK(t, `
let args = {parameters: {}}, titles = [];
for (;;) {
  const r = await api.invoke("t.list", args);
  for (const pr of r.body) titles.push(pr.title);
  if (!r.nextPage) break;
  args = r.nextPage;
}
const picked = await Promise.all([2, 5, 7].map(n => api.invoke("t.get", {parameters: {n}})));
console.log("pages done", titles.length);
return {titles, authors: picked.map(r => r.body.user.login)};`, f, Options{})
	var out struct {
		Titles  []string `json:"titles"`
		Authors []string `json:"authors"`
	}
	if err := json.Unmarshal(res.Value, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Titles) != 9 || out.Titles[8] != "pr 9" || len(out.Authors) != 3 || out.Authors[0] != "ada" {
		t.Errorf("value %s", res.Value)
	}
	if res.Calls.Total != 6 || res.Calls.ByStatus["200"] != 6 {
		t.Errorf("calls %+v", res.Calls)
	}
	if res.QueueWait != 30*time.Millisecond {
		t.Errorf("queue wait %v, want the 3 list pages' 30ms", res.QueueWait)
	}
	if len(res.Logs) != 1 || res.Logs[0] != "pages done 9" {
		t.Errorf("logs %q", res.Logs)
	}
}

func TestCallErrorsThrowWithTheirFacts(t *testing.T) {
	res := runOK(t, `
try { await api.invoke("t.limited", {}); } catch (e) {
  return {isError: e instanceof Error, code: e.code, retry: e.retryAfterSeconds, scope: e.scope, message: e.message};
}`, &fakeCaller{}, Options{})
	want := `{"isError":true,"code":"rate_limit","retry":8.2,"scope":"proxy","message":"cooling down"}`
	if string(res.Value) != want {
		t.Errorf("value %s, want %s", res.Value, want)
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	f := &fakeCaller{}
	res := runOK(t, `
const ids = Array.from({length: 40}, (_, i) => i);
const rs = await Promise.all(ids.map(n => api.invoke("t.get", {parameters: {n}})));
return rs.length;`, f, Options{MaxConcurrent: 3})
	if string(res.Value) != "40" {
		t.Fatalf("value %s", res.Value)
	}
	if p := f.peak.Load(); p > 3 {
		t.Errorf("%d calls in flight at once, want at most 3", p)
	}
}

func TestMaxCalls(t *testing.T) {
	f := &fakeCaller{}
	se := runErr(t, `for (let i = 0; i < 10000; i++) await api.invoke("t.get", {parameters: {n: i}});`, f, Options{MaxCalls: 5})
	if !strings.Contains(se.Message, "max_calls") || len(f.calls) != 5 {
		t.Errorf("%v after %d calls, want a refusal naming scripts.max_calls after 5", se, len(f.calls))
	}
}

func TestSearch(t *testing.T) {
	res := runOK(t, `const r = await api.search("list prs", {limit: 3}); return r.endpoints[0];`, &fakeCaller{}, Options{})
	if string(res.Value) != `{"id":"t.list","limit":3,"q":"list prs"}` {
		t.Errorf("value %s", res.Value)
	}
}

// TestHostileScripts: each ends in a clear, bounded answer.
func TestHostileScripts(t *testing.T) {
	tests := []struct {
		name, code, code2 string // code2: the error code
		msg               string
		opts              Options
	}{
		{"syntax error with its line", "const a = 1;\nconst = 2;", codes.ScriptError, "line 2", Options{}},
		{"endless loop", "while (true) {}", codes.Timeout, "deadline", Options{Timeout: 200 * time.Millisecond}},
		{"huge repeat", `return "x".repeat(2**30).length;`, codes.ScriptError, "memory bound", Options{}},
		{"huge pad", `return "x".padEnd(2**30).length;`, codes.ScriptError, "memory bound", Options{}},
		{"huge join", `return Array(1e7).fill("xxxxxxxxxx").join("").length;`, codes.ScriptError, "memory bound", Options{}},
		{"array pushed forever", `const a = []; for (;;) a.push({x: "yyyyyyyyyyyyyyyy" + a.length});`, codes.ScriptError, "memory", Options{Timeout: 20 * time.Second}},
		{"string doubled", `let s = "x"; for (;;) s += s;`, codes.ScriptError, "memory", Options{Timeout: 20 * time.Second}},
		{"deep recursion", `function f(n) { return f(n + 1) + 1; } return f(0);`, codes.ScriptError, "call stack", Options{}},
		{"recursion 1e6 deep", `function f(n) { return n === 0 ? 0 : 1 + f(n - 1); } return f(1e6);`, codes.ScriptError, "call stack", Options{}},
		{"JSON.stringify of a cycle", "const a = {};\na.self = a;\nreturn JSON.stringify(a);", codes.ScriptError, "uncaught: Converting circular structure to JSON", Options{}},
		{"cycle returned", `const a = {}; a.self = a; return a;`, codes.ScriptError, "serialised", Options{}},
		{"BigInt returned", `return 10n;`, codes.ScriptError, "serialised", Options{}},
		{"function returned", `return () => 1;`, codes.ScriptError, "serialised as JSON: it is a function", Options{}},
		{"symbol returned", `return Symbol("s");`, codes.ScriptError, "serialised as JSON: it is a symbol", Options{}},
		{"uncaught throw with line", "const x = 1;\nthrow new Error(\"boom\");", codes.ScriptError, "uncaught: boom", Options{}},
		{"thrown non-Error", `throw 42;`, codes.ScriptError, "non-Error value was thrown: 42", Options{}},
		{"promise that never settles", `await new Promise(() => {});`, codes.ScriptError, "never settles", Options{}},
		{"bad endpoint id", `await api.invoke(42);`, codes.ScriptError, "endpoint id", Options{}},
		{"unknown argument", `await api.invoke("t.get", {params: {}});`, codes.ScriptError, "unknown argument", Options{}},
		{"catches every error and loops", `for (;;) { try { await api.invoke("t.limited", {}); } catch (e) {} }`, codes.Timeout, "deadline", Options{MaxCalls: 20, Timeout: 300 * time.Millisecond}},
		{"no timers", `setTimeout(() => 1, 10);`, codes.ScriptError, "setTimeout", Options{}},
		{"no require", `require("fs");`, codes.ScriptError, "require", Options{}},
		{"api cannot be replaced", `"use strict"; api.invoke = () => 1;`, codes.ScriptError, "read only", Options{}},
		{"api cannot be redefined", `Object.defineProperty(api, "invoke", {value: () => 1});`, codes.ScriptError, "Cannot redefine property", Options{}},
		{"the api global cannot be replaced", `globalThis.api = {invoke: () => 1};`, codes.ScriptError, "read only", Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			se := runErr(t, tt.code, &fakeCaller{}, tt.opts)
			if se.Code != tt.code2 || !strings.Contains(se.Message, tt.msg) {
				t.Errorf("%s: %q, want %s naming %q", se.Code, se.Message, tt.code2, tt.msg)
			}
			if len(se.Message) > 400 {
				t.Errorf("message of %d bytes", len(se.Message))
			}
		})
	}
}

func TestErrorLines(t *testing.T) {
	se := runErr(t, "const x = 1;\n\nthrow new Error(\"boom\");", &fakeCaller{}, Options{})
	if se.Line != 3 {
		t.Errorf("line %d, want 3 (%v)", se.Line, se)
	}
	se = runErr(t, "let a = 1;\nlet b = ;", &fakeCaller{}, Options{})
	if se.Line != 2 {
		t.Errorf("syntax error line %d, want 2 (%v)", se.Line, se)
	}
}

// TestUncaughtCallErrorNamesCodeAndLine: a failed api.invoke the script
// does not catch ends the run with script_error naming the call's code and
// the line of the api.invoke, whether awaited alone, in Promise.all, or
// caught and thrown again; a failed api.search too.
func TestUncaughtCallErrorNamesCodeAndLine(t *testing.T) {
	for _, run := range []struct {
		name string
		run  func(t *testing.T, code string) *Error
	}{
		{"in process", func(t *testing.T, code string) *Error { return runErr(t, code, &fakeCaller{}, Options{}) }},
		{"worker", func(t *testing.T, code string) *Error {
			se, _ := workerErr(t, t.Context(), code, &fakeCaller{}, Options{})
			return se
		}},
	} {
		t.Run(run.name, func(t *testing.T) {
			tests := []struct {
				name, code, msg string
				line            int
			}{
				{"awaited", "const r = await api.invoke(\"t.list\", {});\n\nconst x = await api.invoke(\"t.limited\", {});\nreturn x;", "rate_limit: cooling down", 3},
				{"in Promise.all", "const ids = [\"t.get\", \"t.nope\"];\nawait Promise.all(ids.map(id =>\n  api.invoke(id, {parameters: {n: 1}})));", "not_found: no endpoint t.nope", 3},
				{"caught and thrown again", "try {\n  await api.invoke(\"t.limited\");\n} catch (e) {\n  throw e;\n}", "rate_limit", 2},
				{"refused before it is sent", "\nawait api.invoke(\"\");", "validation_failed", 2},
				{"search", "await api.search(\"pets\", {limit: 99});", "validation_failed", 1},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					se := run.run(t, tt.code)
					if se.Code != codes.ScriptError || !strings.Contains(se.Message, "uncaught: "+tt.msg) || se.Line != tt.line {
						t.Errorf("%s %q line %d, want script_error naming %q at line %d", se.Code, se.Message, se.Line, tt.msg, tt.line)
					}
				})
			}
		})
	}
}

func TestLogsAreBounded(t *testing.T) {
	res := runOK(t, `const big = "z".repeat(1 << 20); for (let i = 0; i < 100; i++) console.log(big, i); return 1;`, &fakeCaller{}, Options{})
	total := 0
	for _, l := range res.Logs {
		total += len(l)
	}
	if total > DefaultMaxLogBytes || !res.LogsCut {
		t.Errorf("%d bytes of logs kept (cut %v), want at most %d", total, res.LogsCut, DefaultMaxLogBytes)
	}
}

func TestTenMegabytesOfCode(t *testing.T) {
	se := runErr(t, strings.Repeat("1;\n", 4<<20), &fakeCaller{}, Options{})
	if !strings.Contains(se.Message, "bound") {
		t.Errorf("%v", se)
	}
}

// TestGlobalsHoldNothingOfTheHost: the script's globals are goja's own
// builtins and api and console; no process, environment or host object.
func TestGlobalsHoldNothingOfTheHost(t *testing.T) {
	res := runOK(t, `return Object.getOwnPropertyNames(globalThis).filter(k => !/^[A-Z]/.test(k)).sort();`, &fakeCaller{}, Options{})
	var names []string
	json.Unmarshal(res.Value, &names)
	for _, n := range names {
		switch n {
		case "process", "require", "module", "setTimeout", "setInterval", "fetch", "env":
			t.Errorf("global %s is reachable", n)
		}
	}
	if !strings.Contains(string(res.Value), `"api"`) || !strings.Contains(string(res.Value), `"console"`) {
		t.Errorf("globals %s", res.Value)
	}
}

// TestCancellationLeavesTheQueue: cancelling the run ends its waiting
// calls and starts no more.
func TestCancellationLeavesTheQueue(t *testing.T) {
	f := &fakeCaller{block: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, `await Promise.all(Array.from({length: 10}, (_, n) => api.invoke("t.get", {parameters: {n}})));`, f, Options{MaxConcurrent: 2})
		done <- err
	}()
	for f.inflight.Load() < 2 {
		runtime.Gosched()
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
}

// TestMonkeyPatchedJSONDoesNotCross: a script that replaces JSON.stringify
// or JSON.parse changes only what it computes itself; the arguments of its
// calls, the answers it is handed and its return value cross as JSON's own
// functions make them, in process and in a worker.
func TestMonkeyPatchedJSONDoesNotCross(t *testing.T) {
	code := `JSON.stringify = () => "not json {";
JSON.parse = () => ({statusCode: 999});
const r = await api.invoke("t.get", {parameters: {n: 4}});
return {status: r.statusCode, n: r.body.number};`
	for _, run := range []struct {
		name string
		r    Runner
	}{{"in process", InProcess{}}, {"worker", testWorker()}} {
		t.Run(run.name, func(t *testing.T) {
			f := &fakeCaller{}
			res, err := run.r.Run(t.Context(), code, f, Options{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got, want := string(res.Value), `{"status":200,"n":4}`; got != want {
				t.Errorf("value %s, want %s", got, want)
			}
			if len(f.calls) != 1 || f.calls[0] != `t.get {"n":4}` {
				t.Errorf("calls %q, want t.get with n 4", f.calls)
			}
		})
	}
}

// 100,000 console.log() calls with no text kept 100,000 empty lines: each
// counted 0 bytes against the 4 KiB bound, a 750 KB answer. A line costs
// what it takes in the answer's JSON, quotes and escapes included, in
// process and as the parent counts a worker's lines.
func TestScriptEmptyLogLinesCountAgainstBound(t *testing.T) {
	for _, tt := range []struct {
		name string
		code string
	}{
		{"empty lines", `for (let i = 0; i < 100000; i++) console.log(); return 1;`},
		{"empty strings", `for (let i = 0; i < 100000; i++) console.log(""); return 1;`},
		{"escaped bytes", `const s = "\u0001".repeat(1000); for (let i = 0; i < 1000; i++) console.log(s); return 1;`},
	} {
		for _, runner := range []struct {
			name string
			r    Runner
		}{{"in process", InProcess{}}, {"worker", testWorker()}} {
			t.Run(tt.name+"/"+runner.name, func(t *testing.T) {
				res, err := runner.r.Run(t.Context(), tt.code, &fakeCaller{}, Options{})
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				text, _ := json.Marshal(res.Logs)
				if len(text) > DefaultMaxLogBytes+2 || !res.LogsCut {
					t.Errorf("%d lines, %d bytes of JSON (cut %v), want at most %d and cut", len(res.Logs), len(text), res.LogsCut, DefaultMaxLogBytes)
				}
			})
		}
	}
}

// TestProgressIsBoundedAndKeepsTheLast: api.progress 10,000 times, with a
// huge note, reports the last mark only, its note bounded, on both runners;
// a done that is not a number throws a TypeError the script may catch.
func TestProgressIsBoundedAndKeepsTheLast(t *testing.T) {
	for _, r := range []struct {
		name   string
		runner Runner
	}{{"in process", InProcess{}}, {"worker", testWorker()}} {
		t.Run(r.name, func(t *testing.T) {
			var mu sync.Mutex
			var reports int
			var last Progress
			opts := Options{Timeout: 20 * time.Second, Progress: func(p Progress) {
				mu.Lock()
				defer mu.Unlock()
				reports++
				last = p
			}}
			res, err := r.runner.Run(t.Context(), `
				const big = "n".repeat(1 << 20);
				for (let i = 1; i <= 10000; i++) api.progress(i, 10000, big);
				let thrown = "";
				try { api.progress("many") } catch (e) { thrown = e.name }
				await api.invoke("t.get", {parameters: {n: 1}});
				return thrown;`, &fakeCaller{}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Value) != `"TypeError"` {
				t.Errorf("api.progress(\"many\") threw %s, want a TypeError", res.Value)
			}
			mu.Lock()
			defer mu.Unlock()
			if last.Done != 10000 || last.Total != 10000 || len(last.Note) != MaxNoteBytes || last.Calls.Total != 1 {
				t.Errorf("last report: done %d total %d note %d bytes, calls %d", last.Done, last.Total, len(last.Note), last.Calls.Total)
			}
			if reports < 2 {
				t.Errorf("%d reports", reports)
			}
		})
	}
}
