package tasks

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/rpcmsg"
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

// ExtensionID names the extension.
const ExtensionID = "io.modelcontextprotocol/tasks"

// extension reports whether the request declares the tasks extension in its
// per-request capabilities.
func extension(m *rpcmsg.Message) bool {
	// Only the _meta of a request that may be a task's is read again.
	var meta map[string]json.RawMessage
	if len(m.Meta) == 0 || json.Unmarshal(m.Meta, &meta) != nil {
		return false
	}
	raw, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return false
	}
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(raw, &caps) != nil {
		return false
	}
	_, ok = caps.Extensions[ExtensionID]
	return ok
}

// extTask answers a request of the extension.
func (t *Runs) extTask(ctx context.Context, m *request, reply func(any), fail func(int, string)) {
	complete := map[string]any{"resultType": "complete"}
	if m.Method == string(mcp.MethodToolsCall) {
		res, run, ok := t.startRun(ctx, m, fail)
		switch {
		case !ok:
		case run == nil:
			reply(withResultType(res, "complete"))
		default:
			rec := run.Record()
			reply(t.extTaskOf(&rec, "task"))
		}
		return
	}
	switch m.Method {
	case string(mcp.MethodTasksGet), "tasks/update", string(mcp.MethodTasksCancel):
	default:
		fail(mcp.METHOD_NOT_FOUND, "method not found")
		return
	}
	if why := t.Refused(ctx); why != "" {
		fail(mcp.INVALID_REQUEST, why)
		return
	}
	principal := t.Principal(ctx)
	rec, ok := t.record(ctx, principal, m.TaskID, fail)
	if !ok {
		return
	}
	switch m.Method {
	case string(mcp.MethodTasksGet):
		reply(t.extTaskOf(rec, "complete"))
	case "tasks/update":
		// A run never waits for input from the client: nothing is
		// outstanding, so every response is ignored, as the extension says.
		reply(complete)
	default: // tasks/cancel: acknowledged; the run stops, or has ended
		if !rec.Status.Ended() {
			if _, err := t.Runs.Cancel(ctx, principal, rec.ID); err != nil {
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
func (t *Runs) extTaskOf(rec *runs.Record, rt string) map[string]any {
	task := t.taskOf(rec)
	out := map[string]any{"resultType": rt, "taskId": task.TaskId, "createdAt": task.CreatedAt, "lastUpdatedAt": task.LastUpdatedAt,
		"ttlMs": task.TTL, "pollIntervalMs": task.PollInterval, "statusMessage": task.StatusMessage}
	switch rec.Status {
	case runs.Running:
		out["status"] = "working"
	case runs.Done, runs.Failed:
		out["status"] = "completed"
		out["result"] = withResultType(t.Result(rec), "complete")
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
