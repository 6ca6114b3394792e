package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/runs"
)

// Over HTTP specgate answers MCP tasks itself instead of mcp-go: mcp-go
// keeps tasks in memory, filed by session, and without one (stateless HTTP,
// the default) every caller shares session "", so bob's tasks/get, result,
// cancel or list reached alice's task; it sends every task's status to
// every session's stream; and another replica does not know the task. Here
// a task is a run_script run: the task id is the run id, the run's record
// (memory or Redis) is the task's state, and another principal's task id is
// answered as unknown, as script_result answers it. mcp-go never sees a
// task over HTTP, so it never creates one nor sends its status.

// taskPollMs is the pollInterval a task suggests: the run's record changes
// about once a second.
const taskPollMs = 2000

// taskStartKey is the context key of a taskStart: run_script then starts
// its run and answers at once.
type taskStartKey struct{}

// taskStart hears the run a task-augmented run_script started; nil run: it
// answered before starting one (bad arguments, per_principal).
type taskStart struct{ run *runs.Run }

// taskMessage is what serveTask reads of a message.
type taskMessage struct {
	Method string `json:"method"`
	Params struct {
		Name   string                     `json:"name"`
		Task   json.RawMessage            `json:"task"`
		TaskID string                     `json:"taskId"`
		Meta   map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// isTask reports whether m is a request specgate answers as a task's.
func (m *taskMessage) isTask() bool {
	if m.Method == string(mcp.MethodToolsCall) {
		t := strings.TrimSpace(string(m.Params.Task))
		return t != "" && t != "null" || m.extTasks() && m.Params.Name == "run_script"
	}
	return strings.HasPrefix(m.Method, "tasks/")
}

// serveTask answers, over HTTP, a task request with the JSON-RPC id id.
func (s *Server) serveTask(ctx context.Context, w http.ResponseWriter, body []byte, m *taskMessage, id json.RawMessage) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(s.answerTask(ctx, body, m, id))
}

// answerTask is the JSON-RPC response to a task-augmented tools/call or a
// tasks/* request of the principal in ctx, with the JSON-RPC id id.
func (s *Server) answerTask(ctx context.Context, body []byte, m *taskMessage, id json.RawMessage) map[string]any {
	out := map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id}
	reply := func(result any) { out["result"] = result }
	fail := func(code int, msg string) { out["error"] = map[string]any{"code": code, "message": msg} }
	s.task(ctx, body, m, reply, fail)
	return out
}

// task answers a task request with reply or fail.
func (s *Server) task(ctx context.Context, body []byte, m *taskMessage, reply func(any), fail func(int, string)) {
	if m.extTasks() {
		s.extTask(ctx, body, m, reply, fail)
		return
	}
	principal := principalOf(ctx)
	if m.Method == string(mcp.MethodToolsCall) {
		s.startTask(ctx, body, m, reply, fail)
		return
	}
	if obj := s.requireScope(ctx, ScopeRead); obj != nil {
		fail(mcp.INVALID_REQUEST, obj.Message)
		return
	}
	if m.Method == string(mcp.MethodTasksList) {
		recs := s.runs.Running(principal)
		tasks := make([]mcp.Task, 0, len(recs))
		for i := range recs {
			tasks = append(tasks, s.taskOf(&recs[i]))
		}
		slices.SortFunc(tasks, func(a, b mcp.Task) int { return strings.Compare(a.TaskId, b.TaskId) })
		reply(map[string]any{"tasks": tasks})
		return
	}
	rec, ok := s.taskRecord(ctx, principal, m.Params.TaskID, fail)
	if !ok {
		return
	}
	var err error
	switch m.Method {
	case string(mcp.MethodTasksGet):
		reply(s.taskOf(rec))
	case string(mcp.MethodTasksCancel):
		if rec.Status.Ended() {
			fail(mcp.INVALID_PARAMS, "cannot cancel task in terminal status: "+string(s.taskOf(rec).Status))
			return
		}
		if rec, err = s.runs.Cancel(ctx, principal, rec.ID); err != nil {
			fail(mcp.INTERNAL_ERROR, "the task could not be cancelled; try again")
			return
		}
		reply(s.taskOf(rec))
	case string(mcp.MethodTasksResult):
		// tasks/result waits for the end, as the protocol asks; each wait
		// is bounded so a run another replica runs is read again.
		for !rec.Status.Ended() && ctx.Err() == nil {
			if rec, err = s.runs.Wait(ctx, principal, rec.ID, MaxScriptWait); err != nil {
				fail(mcp.INTERNAL_ERROR, "the task's record could not be read; try again")
				return
			}
		}
		if !rec.Status.Ended() {
			fail(mcp.REQUEST_INTERRUPTED, "the request was cancelled before the task ended")
			return
		}
		res := s.runAnswer(rec, nil)
		res.Meta = mcp.WithRelatedTask(rec.ID)
		reply(res)
	default:
		fail(mcp.METHOD_NOT_FOUND, "method not found")
	}
}

// taskRecord is principal's run named by a task request; false when there
// is none (fail has answered: another principal's task is unknown too).
func (s *Server) taskRecord(ctx context.Context, principal, id string, fail func(int, string)) (*runs.Record, bool) {
	rec, err := (*runs.Record)(nil), runs.ErrNotFound
	if runs.ValidID(id) {
		rec, err = s.runs.Get(ctx, principal, id)
	}
	switch {
	case errors.Is(err, runs.ErrNotFound):
		fail(mcp.INVALID_PARAMS, "task not found")
		return nil, false
	case err != nil:
		s.log.Error("run record unreadable", "run", clip(id, 64), "err", err)
		fail(mcp.INTERNAL_ERROR, "the task's record could not be read; try again")
		return nil, false
	}
	return rec, true
}

// startTask runs a task-augmented tools/call: run_script starts its run and
// the task is answered at once; anything else is refused as mcp-go would.
func (s *Server) startTask(ctx context.Context, body []byte, m *taskMessage, reply func(any), fail func(int, string)) {
	res, run, ok := s.startRun(ctx, body, m, fail)
	switch {
	case !ok:
	case run == nil:
		// Refused before a run started: the answer is the refusal, as a
		// call without a task would have it.
		reply(res)
	default:
		rec := run.Record()
		reply(map[string]any{"task": s.taskOf(&rec)})
	}
}

// startRun runs a task's run_script, which starts its run and answers at
// once: the run, or the refusal when none started; false when it failed
// (fail has answered).
func (s *Server) startRun(ctx context.Context, body []byte, m *taskMessage, fail func(int, string)) (*mcp.CallToolResult, *runs.Run, bool) {
	t := s.table[m.Params.Name]
	if t == nil || t.name != "run_script" {
		fail(mcp.METHOD_NOT_FOUND, "tool '"+clip(m.Params.Name, 80)+"' does not support task augmentation")
		return nil, nil, false
	}
	var req mcp.CallToolRequest
	if err := json.Unmarshal(body, &req); err != nil {
		fail(mcp.INVALID_REQUEST, "the tools/call could not be read")
		return nil, nil, false
	}
	started := &taskStart{}
	res, err := s.handlerOf(t)(context.WithValue(ctx, taskStartKey{}, started), req)
	if err != nil {
		fail(mcp.INTERNAL_ERROR, "run_script failed inside specgate")
		return nil, nil, false
	}
	return res, started.run, true
}

// taskOf is the MCP task of a run's record.
func (s *Server) taskOf(rec *runs.Record) mcp.Task {
	t := mcp.Task{TaskId: rec.ID, CreatedAt: rec.Started.UTC().Format(time.RFC3339),
		LastUpdatedAt: rec.Updated.UTC().Format(time.RFC3339)}
	ttl := (rec.Updated.Sub(rec.Started) + s.runs.Keep()).Milliseconds()
	poll := int64(taskPollMs)
	t.TTL, t.PollInterval = &ttl, &poll
	p := progressOf(rec, time.Now())
	t.StatusMessage = runProgressLine(p.Calls.Total, p.Done, p.Total, p.Note)
	switch rec.Status {
	case runs.Running:
		t.Status = mcp.TaskStatusWorking
	case runs.Done:
		t.Status = mcp.TaskStatusCompleted
	case runs.Failed:
		t.Status = mcp.TaskStatusFailed
	case runs.Cancelled:
		t.Status = mcp.TaskStatusCancelled
	case runs.Lost:
		t.Status = mcp.TaskStatusFailed
		t.StatusMessage = "lost: the specgate running it stopped; " + t.StatusMessage
	}
	return t
}
