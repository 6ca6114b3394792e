package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/rpcmsg"
	"github.com/specgate/specgate/pkg/runs"
)

// specgate answers MCP tasks itself instead of mcp-go: mcp-go keeps tasks in memory, filed by session, and without one (stateless HTTP,
// the default) every caller shares session "", so bob's tasks/get, result,
// cancel or list reached alice's task; it sends every task's status to
// every session's stream; and another replica does not know the task. Here
// a task is a run_script run: the task id is the run id, the run's record
// (memory or Redis) is the task's state, and another principal's task id is
// answered as unknown, as script_result answers it. mcp-go never sees a
// task, so it never creates one nor sends its status.

// taskPollMs is the pollInterval a task suggests: the run's record changes
// about once a second.
const taskPollMs = 2000

// Runs answers the task requests of run_script's runs. Its fields are
// required unless said otherwise; read-only once in use, so safe for
// concurrent use.
type Runs struct {
	// Runs keeps the run records; the task id is the run id.
	Runs *runs.Manager
	// Tool is the one tool a task may run (run_script).
	Tool string
	// Start runs a task-augmented call of Tool, which starts its run and
	// answers at once: the run, or, when none started, nil and the
	// answer (a refusal, as a call without a task would have it). An
	// error is a failure inside specgate.
	Start func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, *runs.Run, error)
	// Result is the final tool result of an ended run.
	Result func(rec *runs.Record) *mcp.CallToolResult
	// Status is the progress line of a run, a task's statusMessage.
	Status func(rec *runs.Record, now time.Time) string
	// Principal is the key of the caller ctx carries, whose runs a task
	// request reads.
	Principal func(ctx context.Context) string
	// Refused says why the caller ctx carries may not read its runs (the
	// read scope); "" when it may.
	Refused func(ctx context.Context) string
	// Wait bounds one wait for a run's end in tasks/result, so that a run
	// another replica runs is read again.
	Wait time.Duration
	// Logger receives unreadable records. If nil, slog.Default().
	Logger *slog.Logger
}

// request is a task request: the transport's one reading of it
// (rpcmsg.Read), and its text for a task's tools/call.
type request struct {
	*rpcmsg.Message
	body []byte
}

// IsTask reports whether m is a request specgate answers as a task's: a
// tools/call asking for a task (2025-11-25's params.task, or Tool under
// the 2026-07-28 extension), or a tasks/* request.
func (t *Runs) IsTask(m *rpcmsg.Message) bool {
	if m.Method == string(mcp.MethodToolsCall) {
		task := strings.TrimSpace(string(m.Task))
		return task != "" && task != "null" || m.Name == t.Tool && extension(m)
	}
	return strings.HasPrefix(m.Method, "tasks/")
}

// Answer is the JSON-RPC response to a task-augmented tools/call or a
// tasks/* request m of the principal in ctx; msg is the request's text.
func (t *Runs) Answer(ctx context.Context, m *rpcmsg.Message, msg []byte) map[string]any {
	out := map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": m.ID}
	reply := func(result any) { out["result"] = result }
	fail := func(code int, msg string) { out["error"] = map[string]any{"code": code, "message": msg} }
	t.answer(ctx, &request{Message: m, body: msg}, reply, fail)
	return out
}

// answer answers a task request with reply or fail.
func (t *Runs) answer(ctx context.Context, m *request, reply func(any), fail func(int, string)) {
	if extension(m.Message) {
		t.extTask(ctx, m, reply, fail)
		return
	}
	principal := t.Principal(ctx)
	if m.Method == string(mcp.MethodToolsCall) {
		t.startTask(ctx, m, reply, fail)
		return
	}
	if why := t.Refused(ctx); why != "" {
		fail(mcp.INVALID_REQUEST, why)
		return
	}
	if m.Method == string(mcp.MethodTasksList) {
		// Every replica's runs of the caller, newest first: behind a
		// load balancer the caller's runs may run anywhere.
		recs, err := t.Runs.List(ctx, principal, runs.MaxListed)
		if err != nil {
			t.logger().Warn("runs of other replicas not listed", "err", err)
		}
		tasks := make([]mcp.Task, 0, len(recs))
		for i := range recs {
			tasks = append(tasks, t.taskOf(&recs[i]))
		}
		reply(map[string]any{"tasks": tasks})
		return
	}
	rec, ok := t.record(ctx, principal, m.TaskID, fail)
	if !ok {
		return
	}
	var err error
	switch m.Method {
	case string(mcp.MethodTasksGet):
		reply(t.taskOf(rec))
	case string(mcp.MethodTasksCancel):
		if rec.Status.Ended() {
			fail(mcp.INVALID_PARAMS, "cannot cancel task in terminal status: "+string(t.taskOf(rec).Status))
			return
		}
		if rec, err = t.Runs.Cancel(ctx, principal, rec.ID); err != nil {
			fail(mcp.INTERNAL_ERROR, "the task could not be cancelled; try again")
			return
		}
		reply(t.taskOf(rec))
	case string(mcp.MethodTasksResult):
		// tasks/result waits for the end, as the protocol asks; each wait
		// is bounded so a run another replica runs is read again.
		for !rec.Status.Ended() && ctx.Err() == nil {
			if rec, err = t.Runs.Wait(ctx, principal, rec.ID, t.Wait); err != nil {
				fail(mcp.INTERNAL_ERROR, "the task's record could not be read; try again")
				return
			}
		}
		if !rec.Status.Ended() {
			fail(mcp.REQUEST_INTERRUPTED, "the request was cancelled before the task ended")
			return
		}
		res := t.Result(rec)
		res.Meta = mcp.WithRelatedTask(rec.ID)
		reply(res)
	default:
		fail(mcp.METHOD_NOT_FOUND, "method not found")
	}
}

// record is principal's run named by a task request; false when there
// is none (fail has answered: another principal's task is unknown too).
func (t *Runs) record(ctx context.Context, principal, id string, fail func(int, string)) (*runs.Record, bool) {
	rec, err := (*runs.Record)(nil), runs.ErrNotFound
	if runs.ValidID(id) {
		rec, err = t.Runs.Get(ctx, principal, id)
	}
	switch {
	case errors.Is(err, runs.ErrNotFound):
		fail(mcp.INVALID_PARAMS, "task not found")
		return nil, false
	case err != nil:
		t.logger().Error("run record unreadable", "run", rpcmsg.Clip(id, 64), "err", err)
		fail(mcp.INTERNAL_ERROR, "the task's record could not be read; try again")
		return nil, false
	}
	return rec, true
}

// startTask runs a task-augmented tools/call: run_script starts its run and
// the task is answered at once; anything else is refused as mcp-go would.
func (t *Runs) startTask(ctx context.Context, m *request, reply func(any), fail func(int, string)) {
	res, run, ok := t.startRun(ctx, m, fail)
	switch {
	case !ok:
	case run == nil:
		// Refused before a run started: the answer is the refusal, as a
		// call without a task would have it.
		reply(res)
	default:
		rec := run.Record()
		reply(map[string]any{"task": t.taskOf(&rec)})
	}
}

// startRun runs a task's run_script, which starts its run and answers at
// once: the run, or the refusal when none started; false when it failed
// (fail has answered).
func (t *Runs) startRun(ctx context.Context, m *request, fail func(int, string)) (*mcp.CallToolResult, *runs.Run, bool) {
	if m.Name != t.Tool {
		fail(mcp.METHOD_NOT_FOUND, "tool '"+rpcmsg.Clip(m.Name, 80)+"' does not support task augmentation")
		return nil, nil, false
	}
	var req mcp.CallToolRequest
	if err := json.Unmarshal(m.body, &req); err != nil {
		fail(mcp.INVALID_REQUEST, "the tools/call could not be read")
		return nil, nil, false
	}
	res, run, err := t.Start(ctx, req)
	if err != nil {
		fail(mcp.INTERNAL_ERROR, t.Tool+" failed inside specgate")
		return nil, nil, false
	}
	return res, run, true
}

// taskOf is the MCP task of a run's record.
func (t *Runs) taskOf(rec *runs.Record) mcp.Task {
	task := mcp.Task{TaskId: rec.ID, CreatedAt: rec.Started.UTC().Format(time.RFC3339),
		LastUpdatedAt: rec.Updated.UTC().Format(time.RFC3339)}
	ttl := (rec.Updated.Sub(rec.Started) + t.Runs.Keep()).Milliseconds()
	poll := int64(taskPollMs)
	task.TTL, task.PollInterval = &ttl, &poll
	task.StatusMessage = t.Status(rec, time.Now())
	switch rec.Status {
	case runs.Running:
		task.Status = mcp.TaskStatusWorking
	case runs.Done:
		task.Status = mcp.TaskStatusCompleted
	case runs.Failed:
		task.Status = mcp.TaskStatusFailed
	case runs.Cancelled:
		task.Status = mcp.TaskStatusCancelled
	case runs.Lost:
		task.Status = mcp.TaskStatusFailed
		task.StatusMessage = "lost: the specgate running it stopped; " + task.StatusMessage
	}
	return task
}

func (t *Runs) logger() *slog.Logger {
	if t.Logger == nil {
		return slog.Default()
	}
	return t.Logger
}
