package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/runs"
)

// The MCP 2026-07-28 tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663) on the same run records as 2025-11-25's tasks: a client that
// declares the extension in a request's own capabilities gets, for
// run_script, a task handle at once ({resultType: "task"}); tasks/get
// answers the run as a task, with the final tool result inlined once it
// ended; tasks/update is acknowledged (a run asks nothing of the client);
// tasks/cancel stops the run. There is no tasks/result or tasks/list on this
// revision. Another principal's task is unknown, as everywhere.

// extTasksID names the extension.
const extTasksID = "io.modelcontextprotocol/tasks"

// extTasks reports whether the request declares the tasks extension in its
// per-request capabilities.
func (m *taskMessage) extTasks() bool {
	raw, ok := m.Params.Meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return false
	}
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(raw, &caps) != nil {
		return false
	}
	_, ok = caps.Extensions[extTasksID]
	return ok
}

// extTask answers a request of the extension.
func (s *Server) extTask(ctx context.Context, body []byte, m *taskMessage, reply func(any), fail func(int, string)) {
	complete := map[string]any{"resultType": "complete"}
	if m.Method == string(mcp.MethodToolsCall) {
		res, run, ok := s.startRun(ctx, body, m, fail)
		switch {
		case !ok:
		case run == nil:
			reply(withResultType(res, "complete"))
		default:
			rec := run.Record()
			reply(s.extTaskOf(&rec, "task"))
		}
		return
	}
	switch m.Method {
	case string(mcp.MethodTasksGet), "tasks/update", string(mcp.MethodTasksCancel):
	default:
		fail(mcp.METHOD_NOT_FOUND, "method not found")
		return
	}
	if obj := s.requireScope(ctx, ScopeRead); obj != nil {
		fail(mcp.INVALID_REQUEST, obj.Message)
		return
	}
	principal := principalOf(ctx)
	rec, ok := s.taskRecord(ctx, principal, m.Params.TaskID, fail)
	if !ok {
		return
	}
	switch m.Method {
	case string(mcp.MethodTasksGet):
		reply(s.extTaskOf(rec, "complete"))
	case "tasks/update":
		// A run never waits for input from the client: nothing is
		// outstanding, so every response is ignored, as the extension says.
		reply(complete)
	default: // tasks/cancel: acknowledged; the run stops, or has ended
		if !rec.Status.Ended() {
			if _, err := s.runs.Cancel(ctx, principal, rec.ID); err != nil {
				fail(mcp.INTERNAL_ERROR, "the task could not be cancelled; try again")
				return
			}
		}
		reply(complete)
	}
}

// extTaskOf is a run's record as the extension's task, with resultType rt:
// "task" for the handle run_script answers, "complete" for tasks/get. A run
// that ended, well or with a tool error, is completed with its result
// inlined; a lost run failed (its replica stopped: a protocol-level fault,
// not the tool's).
func (s *Server) extTaskOf(rec *runs.Record, rt string) map[string]any {
	t := s.taskOf(rec)
	out := map[string]any{"resultType": rt, "taskId": t.TaskId, "createdAt": t.CreatedAt, "lastUpdatedAt": t.LastUpdatedAt,
		"ttlMs": t.TTL, "pollIntervalMs": t.PollInterval, "statusMessage": t.StatusMessage}
	switch rec.Status {
	case runs.Running:
		out["status"] = "working"
	case runs.Done, runs.Failed:
		out["status"] = "completed"
		out["result"] = withResultType(s.runAnswer(rec, nil), "complete")
	case runs.Cancelled:
		out["status"] = "cancelled"
	case runs.Lost:
		out["status"] = "failed"
		out["error"] = map[string]any{"code": mcp.INTERNAL_ERROR,
			"message": "the specgate running the task stopped before it ended; run it again"}
	}
	return out
}

// withResultType is res as a JSON object with its resultType set.
func withResultType(res *mcp.CallToolResult, rt string) map[string]any {
	var out map[string]any
	if b, err := json.Marshal(res); err == nil {
		_ = json.Unmarshal(b, &out)
	}
	if out == nil {
		out = map[string]any{}
	}
	out["resultType"] = rt
	return out
}
