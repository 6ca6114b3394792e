package mcpserver

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/runs"
	"github.com/specgate/specgate/pkg/spec"
	"github.com/specgate/specgate/pkg/ui"
)

// pageRunFixture is longFixture with bench.listPulls needing approval on
// the governance page (channel auto: the test's client cannot ask), and
// an audit log.
func pageRunFixture(t *testing.T, served *scriptBenchServed) (*Server, *ui.Approvals, *syncBuffer, *scriptBenchUpstream) {
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
	room := ui.NewApprovals(0, nil)
	audit := &syncBuffer{}
	srv := New(Options{SpecNames: served.cat.SpecNames(), Logger: quiet, JQSlots: answer.NewJQSlots(1), Audit: audit,
		Approve:         func(e *spec.Endpoint) bool { return e.ID == "bench.listPulls" },
		ApprovalChannel: ChannelAuto, ApprovalTTL: time.Hour, PageApprovals: room,
		Scripts: ScriptOptions{Runs: runs.NewManager(runs.Options{Logger: quiet})},
		Caller:  invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}},
	})
	srv.Publish(served.cat, served.ix, nil)
	return srv, room, audit, up
}

// A run in the background whose call waits for a person on the page says
// so in its progress (script_result, the page) with the approval's id, and
// stops saying so once the person decided.
func TestARunWaitingForPageApprovalSaysSo(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	synctest.Test(t, func(t *testing.T) {
		srv, room, _, up := pageRunFixture(t, served)
		c := connectEra(t, srv, true, nil)
		out := structuredOf(t, callRaw(t, c, "run_script", map[string]any{"code": `
			await api.invoke("bench.getItem", {parameters: {id: 1}});
			api.progress(1, 2, "item 1");
			const prs = await api.invoke("bench.listPulls", {parameters: {owner: "o", repo: "r"}});
			api.progress(2, 2, "pulls");
			return prs.body.length`}))
		if out["status"] != "running" {
			t.Fatalf("run_script: %v", out)
		}
		runID := out["runId"].(string)
		waiting := room.WaitingFor(runID)
		if len(waiting) != 1 {
			t.Fatalf("the run waits for %v on the page, want one approval", waiting)
		}
		id := waiting[0]
		for name, p := range map[string]map[string]any{
			"run_script":    out["progress"].(map[string]any),
			"script_result": structuredOf(t, callRaw(t, c, "script_result", map[string]any{"runId": runID, "waitSeconds": 0}))["progress"].(map[string]any),
		} {
			note, _ := p["note"].(string)
			if !strings.Contains(note, "waiting for a person to approve "+id+" on the governance page") || !strings.Contains(note, "item 1") {
				t.Errorf("%s's progress note %q: want it to name %s and keep the script's note", name, note, id)
			}
			if p["etaSeconds"] != nil {
				t.Errorf("%s's progress has an ETA (%v) while a person is to answer", name, p["etaSeconds"])
			}
			if ids, _ := p["waitingForApproval"].([]any); len(ids) != 1 || ids[0] != id {
				t.Errorf("%s's waitingForApproval = %v, want [%s]", name, p["waitingForApproval"], id)
			}
		}
		st := srv.UISource().State(t.Context(), time.Now())
		if len(st.Runs) != 1 || !strings.Contains(st.Runs[0].Note, id) || len(st.Runs[0].WaitingForApproval) != 1 {
			t.Errorf("the page's runs = %+v, want the run naming %s", st.Runs, id)
		}
		if shown, _ := room.Pending(); len(shown) != 1 || shown[0].RunID != runID {
			t.Errorf("the page's approvals = %+v, want one of run %s", shown, runID)
		}
		if err := room.Decide(id, ui.Decision{Approved: true, By: ui.Person{Who: "ada", From: "127.0.0.1"}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		p := structuredOf(t, callRaw(t, c, "script_result", map[string]any{"runId": runID, "waitSeconds": 0}))
		if prog, ok := p["progress"].(map[string]any); ok {
			if note, _ := prog["note"].(string); strings.Contains(note, "approve") || prog["waitingForApproval"] != nil {
				t.Errorf("once approved, the progress still says %v", prog)
			}
		}
		for p["status"] == "running" {
			p = structuredOf(t, callRaw(t, c, "script_result", map[string]any{"runId": runID, "waitSeconds": 30}))
		}
		if p["status"] != "done" || up.requests.Load() != 2 {
			t.Errorf("the run ended %v with %d requests upstream, want done with 2", p, up.requests.Load())
		}
	})
}

// A run cancelled on the page is an audit line naming the run's
// principal, who cancelled it and from where.
func TestCancelOnThePageIsAudited(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	synctest.Test(t, func(t *testing.T) {
		srv, _, audit, _ := pageRunFixture(t, served)
		c := connectEra(t, srv, true, nil)
		out := structuredOf(t, callRaw(t, c, "run_script", map[string]any{"code": threeLookups}))
		if out["status"] != "running" {
			t.Fatalf("run_script: %v", out)
		}
		runID := out["runId"].(string)
		src := srv.UISource()
		if err := src.CancelRun(t.Context(), "run-000000000000", ui.Person{Who: "ada"}); err != ui.ErrNotFound {
			t.Errorf("cancelling an unknown run: %v, want ErrNotFound", err)
		}
		if err := src.CancelRun(t.Context(), runID, ui.Person{Who: "ada", From: "203.0.113.9"}); err != nil {
			t.Fatal(err)
		}
		var line map[string]any
		for _, l := range auditLines(t, audit) {
			if l["outcome"] == "cancelled" {
				line = l
			}
		}
		if line == nil || line["runId"] != runID || line["by"] != "ada" || line["from"] != "203.0.113.9" || line["endpoint"] != "run_script" {
			t.Errorf("audit line %v: want the cancel of %s by ada from 203.0.113.9", line, runID)
		}
	})
}
