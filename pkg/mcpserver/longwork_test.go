package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/runs"
	"github.com/specgate/specgate/pkg/spec"
)

// longFixture serves the bench spec in memory with a budget of 1 request
// per 40s, run_script answering within its default 20s, and the runs'
// records in store.
func longFixture(t *testing.T, served *scriptBenchServed, store runs.Store, approve ...func(*spec.Endpoint) bool) (*Server, *scriptBenchUpstream) {
	t.Helper()
	up := newScriptBenchUpstream(t, 100)
	l, err := ratelimit.New(ratelimit.Options{Endpoints: served.eps, Budgets: []ratelimit.Budget{{Match: HostKey(served.base),
		Requests: 1, Window: 40 * time.Second, WindowPad: -1, OnLimit: ratelimit.Wait, QueueDepth: 8, QueueTimeout: 10 * time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	cl := invoke.New(invoke.Options{Timeout: 30 * time.Second, HTTPClient: &http.Client{Transport: handlerTransport{up}}})
	t.Cleanup(cl.Close)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var ask func(*spec.Endpoint) bool
	if len(approve) > 0 {
		ask = approve[0]
	}
	srv := New(Options{SpecNames: served.cat.SpecNames(), Logger: quiet, JQSlots: answer.NewJQSlots(1), Approve: ask,
		Scripts: ScriptOptions{Runs: runs.NewManager(runs.Options{Store: store, Logger: quiet})},
		Caller:  invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}},
	})
	srv.Publish(served.cat, served.ix, nil)
	return srv, up
}

// threeLookups takes 80s at 1 request per 40s.
const threeLookups = `const names = [];
for (let id = 1; id <= 3; id++) {
  names.push((await api.invoke("bench.getItem", {parameters: {id}})).body.name);
  api.progress(id, 3, "item " + id);
}
console.log("got", names.length);
return names;`

func structuredOf(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func goldenRun(t *testing.T, name string, res *mcp.CallToolResult) {
	t.Helper()
	golden(t, name, runIDs.ReplaceAll(indentJSON(t, resultView(res)), []byte("run-000000000000")))
}

// TestGoldenLongWork keeps what the model reads of a run past
// answer_within: running, then done through script_result, a cancelled run
// and a lost one.
func TestGoldenLongWork(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	t.Run("running_then_done", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, up := longFixture(t, served, nil)
			c := connectTB(t, srv, nil)
			start := time.Now()
			res := callRaw(t, c, "run_script", map[string]any{"code": threeLookups})
			if took := time.Since(start); took != DefaultAnswerWithin {
				t.Errorf("run_script answered after %v, want %v", took, DefaultAnswerWithin)
			}
			goldenRun(t, "long_running.json", res)
			out := structuredOf(t, res)
			if out["status"] != "running" {
				t.Fatalf("run_script: %v", out)
			}
			id := out["runId"].(string)
			// At 40s the second lookup goes; the wait ends at 50s, still running.
			res = callRaw(t, c, "script_result", map[string]any{"runId": id, "waitSeconds": 30})
			if got := structuredOf(t, res)["status"]; got != "running" || time.Since(start) != 50*time.Second {
				t.Fatalf("script_result at %v: %v", time.Since(start), got)
			}
			// 20s more (the default wait): still running at 70s.
			res = callRaw(t, c, "script_result", map[string]any{"runId": id})
			if got := structuredOf(t, res)["status"]; got != "running" || time.Since(start) != 70*time.Second {
				t.Fatalf("script_result at %v: %v", time.Since(start), got)
			}
			// The third goes at 80s: a wait of 30s answers then, not at 100s.
			res = callRaw(t, c, "script_result", map[string]any{"runId": id, "waitSeconds": 30})
			if took := time.Since(start); took != 80*time.Second {
				t.Errorf("the run's end was answered at %v, want 80s", took)
			}
			goldenRun(t, "long_done.json", res)
			if got := structuredOf(t, res); got["status"] != "done" || len(got["result"].([]any)) != 3 {
				t.Errorf("done answer: %v", got)
			}
			if n := up.requests.Load(); n != 3 {
				t.Errorf("upstream got %d requests, want 3", n)
			}
			// Read again: the same final answer, nothing sent.
			again := callRaw(t, c, "script_result", map[string]any{"runId": id, "waitSeconds": 0})
			if again.Content[0].(mcp.TextContent).Text != res.Content[0].(mcp.TextContent).Text || up.requests.Load() != 3 {
				t.Errorf("a second read differs or sent something")
			}
		})
	})
	t.Run("cancelled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, up := longFixture(t, served, nil)
			c := connectTB(t, srv, nil)
			id := structuredOf(t, callRaw(t, c, "run_script", map[string]any{"code": threeLookups}))["runId"].(string)
			res := callRaw(t, c, "script_result", map[string]any{"runId": id, "cancel": true})
			goldenRun(t, "long_cancelled.json", res)
			time.Sleep(5 * time.Minute)
			if n := up.requests.Load(); n != 1 {
				t.Errorf("upstream got %d requests after the cancel, want the 1 sent before it", n)
			}
			if got := structuredOf(t, callRaw(t, c, "script_result", map[string]any{"runId": id, "cancel": true}))["status"]; got != "cancelled" {
				t.Errorf("a cancel of a cancelled run: %v", got)
			}
		})
	})
	t.Run("lost", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := runs.NewMemoryStore(runs.MemoryStoreOptions{})
			srv, _ := longFixture(t, served, store)
			c := connectTB(t, srv, nil)
			// A replica wrote this run's record, then died.
			rec := &runs.Record{ID: "run-0123456789abcdef01234567", Principal: localPrincipal, Status: runs.Running,
				Progress: json.RawMessage(`{"calls":{"total":7,"byStatus":{"200":7}},"queueWaitMs":12000}`),
				Logs:     []string{"page 1", "page 2"}, Started: time.Now(), Updated: time.Now()}
			blob, _ := runs.Encode(rec)
			if err := store.Save(t.Context(), rec, blob, runs.DefaultLostAfter, time.Hour); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res := callRaw(t, c, "script_result", map[string]any{"runId": rec.ID})
			if took := time.Since(start); took != runs.DefaultLostAfter {
				t.Errorf("a run lost at 15s answered after %v: a wait answers as soon as the run is lost", took)
			}
			goldenRun(t, "long_lost.json", res)
			if got := structuredOf(t, res); got["status"] != "lost" || got["calls"].(map[string]any)["total"] != float64(7) {
				t.Errorf("lost answer: %v", got)
			}
		})
	})
}

// TestScriptResultBadInput: each bad argument gets a clear answer and sends
// nothing.
func TestScriptResultBadInput(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	synctest.Test(t, func(t *testing.T) {
		srv, up := longFixture(t, served, nil)
		c := connectTB(t, srv, nil)
		for _, tc := range []struct {
			name string
			args map[string]any
			code string
		}{
			{"no runId", map[string]any{}, codes.ValidationFailed},
			{"malformed", map[string]any{"runId": "run-<script>"}, codes.ValidationFailed},
			{"1 MB", map[string]any{"runId": "run-" + strings.Repeat("a", 1<<20)}, codes.ValidationFailed},
			{"unknown", map[string]any{"runId": "run-0123456789abcdef01234567"}, codes.NotFound},
			{"waitSeconds -1", map[string]any{"runId": "run-0123456789ab", "waitSeconds": -1}, codes.ValidationFailed},
			{"waitSeconds 31", map[string]any{"runId": "run-0123456789ab", "waitSeconds": 31}, codes.ValidationFailed},
			{"waitSeconds 1e9", map[string]any{"runId": "run-0123456789ab", "waitSeconds": 1e9}, codes.ValidationFailed},
			{"waitSeconds as a string", map[string]any{"runId": "run-0123456789ab", "waitSeconds": "20"}, codes.ValidationFailed},
			{"cancel as a string", map[string]any{"runId": "run-0123456789ab", "cancel": "yes"}, codes.ValidationFailed},
		} {
			start := time.Now()
			res := callRaw(t, c, "script_result", tc.args)
			if got := errorCode(t, res); got != tc.code {
				t.Errorf("%s: code %s, want %s: %s", tc.name, got, tc.code, res.Content[0].(mcp.TextContent).Text)
			}
			if n := len(res.Content[0].(mcp.TextContent).Text); n > 2048 {
				t.Errorf("%s: answer of %d bytes", tc.name, n)
			}
			if took := time.Since(start); took != 0 {
				t.Errorf("%s: a bad call waited %v", tc.name, took)
			}
		}
		if n := up.requests.Load(); n != 0 {
			t.Errorf("upstream got %d requests", n)
		}
	})
}

// TestRunsInTheBackgroundCountAgainstPerPrincipal: a run past answer_within
// still holds its place in scripts.per_principal; a third is refused with
// rate_limit, never queued, until one ends.
func TestRunsInTheBackgroundCountAgainstPerPrincipal(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	synctest.Test(t, func(t *testing.T) {
		srv, _ := longFixture(t, served, nil)
		c := connectTB(t, srv, nil)
		var ids []string
		for range 2 {
			out := structuredOf(t, callRaw(t, c, "run_script", map[string]any{"code": threeLookups}))
			if out["status"] != "running" {
				t.Fatalf("run_script: %v", out)
			}
			ids = append(ids, out["runId"].(string))
		}
		res := callRaw(t, c, "run_script", map[string]any{"code": threeLookups})
		if got := errorCode(t, res); got != codes.RateLimit {
			t.Fatalf("a third run: %s", got)
		}
		// the refusal says when a place is expected to free: the running
		// runs' soonest ETA (as it stood then: it moves as their calls go),
		// never past their deadline
		eobj, _ := structuredOf(t, res)["error"].(map[string]any)
		eta, _ := structuredOf(t, callRaw(t, c, "script_result", map[string]any{"runId": ids[0], "waitSeconds": 0}))["progress"].(map[string]any)["etaSeconds"].(float64)
		if after, _ := eobj["retryAfterSeconds"].(float64); after < 1 || eta == 0 || after > srv.opts.Scripts.timeout().Seconds() || eobj["retryAt"] == nil {
			t.Errorf("a third run's refusal: retryAfterSeconds %v, retryAt %v; the runs' ETA %v", eobj["retryAfterSeconds"], eobj["retryAt"], eta)
		}
		callRaw(t, c, "script_result", map[string]any{"runId": ids[0], "cancel": true})
		if out := structuredOf(t, callRaw(t, c, "run_script", map[string]any{"code": "return 1"})); out["status"] != "done" {
			t.Errorf("a run after one was cancelled: %v", out)
		}
		status := structuredOf(t, callRaw(t, c, "rate_limit_status", map[string]any{}))
		listed, _ := status["runs"].([]any)
		if len(listed) != 1 || listed[0].(map[string]any)["runId"] != ids[1] {
			t.Errorf("rate_limit_status lists runs %v, want only %s", listed, ids[1])
		}
		callRaw(t, c, "script_result", map[string]any{"runId": ids[1], "cancel": true})
	})
}

// TestScriptResultInALoopCostsNothing: a thousand reads of one run send
// nothing and keep no more.
func TestScriptResultInALoopCostsNothing(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	synctest.Test(t, func(t *testing.T) {
		srv, up := longFixture(t, served, nil)
		c := connectTB(t, srv, nil)
		id := structuredOf(t, callRaw(t, c, "run_script", map[string]any{"code": threeLookups}))["runId"].(string)
		for range 1000 {
			if got := structuredOf(t, callRaw(t, c, "script_result", map[string]any{"runId": id, "waitSeconds": 0}))["status"]; got != "running" {
				t.Fatalf("status %v", got)
			}
		}
		if n := up.requests.Load(); n != 1 {
			t.Errorf("upstream got %d requests, want 1", n)
		}
		if n := len(srv.runs.Running(localPrincipal)); n != 1 {
			t.Errorf("%d runs held, want 1", n)
		}
		callRaw(t, c, "script_result", map[string]any{"runId": id, "cancel": true})
	})
}

// TestNoProgressAfterTheAnswer: progress notifications of a run stop when
// run_script answered: the token belongs to that call.
func TestNoProgressAfterTheAnswer(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	synctest.Test(t, func(t *testing.T) {
		srv, _ := longFixture(t, served, nil)
		var notes []time.Duration
		var values []float64
		start := time.Now()
		c := connectTB(t, srv, func(n mcp.JSONRPCNotification) {
			if n.Method == "notifications/progress" {
				notes = append(notes, time.Since(start))
				v, _ := n.Params.AdditionalFields["progress"].(float64)
				values = append(values, v)
			}
		})
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "run_script", map[string]any{"code": threeLookups}
		req.Params.Meta = &mcp.Meta{ProgressToken: "tok"}
		res, err := c.CallTool(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		id := structuredOf(t, res)["runId"].(string)
		for structuredOf(t, callRaw(t, c, "script_result", map[string]any{"runId": id, "waitSeconds": 30}))["status"] == "running" {
		}
		synctest.Wait()
		if len(notes) == 0 {
			t.Fatal("no progress while run_script waited")
		}
		for i, at := range notes {
			if at > DefaultAnswerWithin {
				t.Errorf("a progress notification at %v, after run_script answered at %v", at, DefaultAnswerWithin)
			}
			if i > 0 && values[i] <= values[i-1] {
				t.Errorf("progress %v after %v: MCP's progress must rise", values[i], values[i-1])
			}
		}
	})
}

// TestABackgroundRunsApprovalIsRefusedNotHeld: once run_script answered,
// nobody waits on its call, so a write needing a person's approval is
// not_approved at once (nothing sent) instead of holding the run, and its
// per_principal place, until the deadline.
func TestABackgroundRunsApprovalIsRefusedNotHeld(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	synctest.Test(t, func(t *testing.T) {
		srv, up := longFixture(t, served, nil, func(e *spec.Endpoint) bool { return e.ID == "bench.listPulls" })
		user := &answerer{action: mcp.ElicitationResponseActionAccept, value: true}
		c := connectEra(t, srv, true, user)
		start := time.Now()
		out := structuredOf(t, callRaw(t, c, "run_script", map[string]any{"code": `
			await api.invoke("bench.getItem", {parameters: {id: 1}});
			await api.invoke("bench.getItem", {parameters: {id: 2}});
			try { await api.invoke("bench.listPulls", {parameters: {owner: "o", repo: "r"}}); return "sent" }
			catch (e) { return e.code }`}))
		if out["status"] != "running" {
			t.Fatalf("run_script: %v", out)
		}
		out = structuredOf(t, callRaw(t, c, "script_result", map[string]any{"runId": out["runId"], "waitSeconds": 30}))
		if out["status"] != "done" || out["result"] != codes.NotApproved {
			t.Fatalf("the run's answer: %v", out)
		}
		if took := time.Since(start); took != 40*time.Second {
			t.Errorf("the run ended at %v, want 40s (its second call's turn)", took)
		}
		if n := up.requests.Load(); n != 2 {
			t.Errorf("upstream got %d requests, want the 2 lookups", n)
		}
		if q := user.questions(); len(q) != 0 {
			t.Errorf("the user was asked %d questions after run_script answered", len(q))
		}
	})
}

// TestPerPrincipalRetryAfterIsWithinTheRunsDeadline: a run ends by
// scripts.timeout at the latest, whatever its ETA says. A script that
// reported api.progress(1, 1e9) ten seconds in had an ETA of 1e10 s: the
// refusal of another run said retryAfterSeconds 1e10, and a retryAt
// centuries in the past (the wait overflowed a time.Duration).
func TestPerPrincipalRetryAfterIsWithinTheRunsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := runs.NewManager(runs.Options{})
		s := &Server{runs: m, opts: Options{Scripts: ScriptOptions{Timeout: time.Minute}}}
		release := make(chan struct{})
		r, err := m.Start(t.Context(), "ada", time.Minute, func(context.Context, *runs.Run) runs.Outcome {
			<-release
			return runs.Outcome{Answer: json.RawMessage(`1`)}
		})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		now := time.Now()
		r.Update(json.RawMessage(fmt.Sprintf(`{"calls":{"total":1},"done":1,"total":1000000000,"etaSeconds":1e10,"etaFrom":%d}`, now.UnixMilli())), nil)
		if got := s.soonestEnd("ada", now); got < 1 || got > 50 {
			t.Errorf("soonestEnd = %v s, want at most the 50 s left of the run's minute", got)
		}
		close(release)
		m.Drain(context.Background())
	})
}
