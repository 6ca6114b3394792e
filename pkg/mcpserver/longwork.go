package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/runs"
	"github.com/specgate/specgate/pkg/script"
)

// MaxScriptWait is the most script_result waits in one call: well within
// the 60 s a client gives a tool call.
const MaxScriptWait = 30 * time.Second

// defaultScriptWait is script_result's wait when the call names none.
const defaultScriptWait = 20 * time.Second

// RunProgress is where a run stands, as the model reads it.
type RunProgress struct {
	// Calls are the calls finished so far, by status.
	Calls script.Calls `json:"calls"`
	// Done, Total and Note are the script's last api.progress.
	Done  int    `json:"done,omitempty"`
	Total int    `json:"total,omitempty"`
	Note  string `json:"note,omitempty"`
	// ETASeconds is when the run should end, when Total is known: from its
	// own pace so far, and never less than the upstream budgets allow for
	// the calls left.
	ETASeconds  *float64 `json:"etaSeconds,omitempty"`
	QueueWaitMs int64    `json:"queueWaitMs"`
	// WaitingForApproval names the writes of the run waiting for a person
	// on the governance page (approval ids); while any waits, Note says so.
	WaitingForApproval []string `json:"waitingForApproval,omitempty"`
	// ETAFrom is when ETASeconds was reckoned (Unix ms), kept in the
	// record so a later read counts down from it; never shown.
	ETAFrom int64 `json:"etaFrom,omitempty"`
}

// progressOf is the progress a run's record holds, as of now (a record
// with none, or one that does not decode, reads as no progress yet).
func progressOf(rec *runs.Record, now time.Time) RunProgress {
	var p RunProgress
	if len(rec.Progress) > 0 {
		_ = json.Unmarshal(rec.Progress, &p)
	}
	return p.sinceReckoned(now)
}

// soonestEnd is the seconds (≥ 1) until principal's first running run here ends by its ETA, capped by scripts.timeout.
func (s *Server) soonestEnd(principal string, now time.Time) (soonest float64) {
	for _, rec := range s.runs.Running(principal) {
		if p := progressOf(&rec, now); p.ETASeconds != nil && rec.Status == runs.Running {
			eta := max(min(*p.ETASeconds, rec.Started.Add(s.opts.Scripts.timeout()).Sub(now).Seconds()), 1)
			if soonest == 0 || eta < soonest {
				soonest = eta
			}
		}
	}
	return soonest
}

// sinceReckoned returns p as of now: its ETA less the time passed since it
// was reckoned, ETAFrom cleared, and a note that says which approvals it
// waits for.
func (p RunProgress) sinceReckoned(now time.Time) RunProgress {
	if len(p.WaitingForApproval) > 0 {
		note := "waiting for a person to approve " + strings.Join(p.WaitingForApproval, ", ") + " on the governance page"
		if p.Note != "" {
			note += " (after: " + p.Note + ")"
		}
		// how long a person takes is not the run's pace
		p.Note, p.ETASeconds = note, nil
	}
	if p.ETASeconds != nil && p.ETAFrom > 0 {
		passed := now.Sub(time.UnixMilli(p.ETAFrom)).Seconds()
		eta := math.Round(max(*p.ETASeconds-max(passed, 0), 0)*10) / 10
		p.ETASeconds = &eta
	}
	p.ETAFrom = 0
	return p
}

// RunState is the answer for a run that has not ended as done or failed:
// still running, cancelled, or lost.
type RunState struct {
	RunID    string       `json:"runId"`
	Status   string       `json:"status"`
	Progress *RunProgress `json:"progress,omitempty"`
	// Calls and Logs are a cancelled or lost run's, as last recorded.
	Calls *script.Calls `json:"calls,omitempty"`
	Logs  []string      `json:"logs,omitempty"`
	Hint  string        `json:"hint,omitempty"`
}

// runOutput is the output schema of run_script and script_result: a run's
// final answer (RunScriptResult) or where it stands (RunState), each field
// optional, so a client that checks structuredContent accepts both.
type runOutput struct {
	RunScriptResult
	Progress *RunProgress `json:"progress,omitempty"`
}

// ScriptResultArgs are the script_result tool's arguments.
type ScriptResultArgs struct {
	RunID       string   `json:"runId" jsonschema:"From run_script"`
	WaitSeconds *float64 `json:"waitSeconds,omitempty" jsonschema:"0-30 (default 20)"`
	Cancel      bool     `json:"cancel,omitempty"`
}

const scriptResultDescription = "Wait up to waitSeconds for a run_script run that answered running: " +
	"its final answer once it ends, else its progress. cancel: true stops it."

// runTracker follows one run: it turns the script's progress into the
// record's, with an ETA, and into progress notifications while the call
// that started the run still waits for its answer.
type runTracker struct {
	s       *Server
	run     *runs.Run
	started time.Time
	// notify sends a progress notification; live says the call that
	// started the run still waits, so notifications may go. (No lock is
	// held across a send: a client that stops reading its stream would
	// hold the answer behind it.)
	notify func(map[string]any)
	live   atomic.Bool

	mu        sync.Mutex
	last      script.Progress
	endpoints map[string]int // calls made, by endpoint id
	notified  int            // calls when the last notification went
	marked    script.Mark    // the script's account then
	sentAt    time.Time
	seq       int // notifications sent
}

// called counts a call of endpoint id, for the ETA's budget floor.
func (t *runTracker) called(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.endpoints == nil {
		t.endpoints = map[string]int{}
	}
	t.endpoints[id]++
}

// progress hears the script's progress: the record's copy and, for a
// client that asked, a notification per call (api.progress notes at most
// four a second).
func (t *runTracker) progress(p script.Progress) {
	t.mu.Lock()
	t.last = p
	t.mu.Unlock()
	if t.run != nil {
		v := t.view(p)
		t.run.EditProgress(func(old json.RawMessage) json.RawMessage {
			// read under the run's lock, as markWaiting does, so neither
			// undoes the other
			v.WaitingForApproval = t.s.opts.PageApprovals.WaitingFor(t.run.ID())
			if b, err := json.Marshal(v); err == nil {
				return b
			}
			return old
		})
	}
	if t.notify == nil {
		return
	}
	// One a call, and for api.progress at most four a second; progress
	// counts the notifications, so that it only rises (MCP's rule) while
	// calls and the script's own account go in the message.
	now := time.Now()
	t.mu.Lock()
	send := p.Calls.Total > t.notified || p.Mark != t.marked && now.Sub(t.sentAt) >= 250*time.Millisecond
	if send {
		t.notified, t.marked, t.sentAt = p.Calls.Total, p.Mark, now
		t.seq++
	}
	seq := t.seq
	t.mu.Unlock()
	if !send {
		return
	}
	if t.live.Load() {
		t.notify(map[string]any{"progress": seq, "message": runProgressLine(p.Calls.Total, p.Done, p.Total, p.Note)})
	}
}

// setLive says whether the call that started the run still waits for its
// answer; once it does not, no notification goes and no person is asked.
func (t *runTracker) setLive(on bool) { t.live.Store(on) }

func (t *runTracker) isLive() bool { return t.live.Load() }

// runProgressLine is a run's progress in one line: a progress notification's
// message, and a task's statusMessage.
func runProgressLine(calls, done, total int, note string) string {
	msg := strconv.Itoa(calls) + " calls done"
	if total > 0 {
		msg = fmt.Sprintf("%d of %d done, %s", done, total, msg)
	}
	if note != "" {
		msg += ": " + note
	}
	return msg
}

// view is the model's view of p, with its ETA as of now.
func (t *runTracker) view(p script.Progress) *RunProgress {
	calls := p.Calls
	if calls.ByStatus == nil {
		calls.ByStatus = map[string]int{}
	}
	v := &RunProgress{Calls: calls, Done: p.Done, Total: p.Total, Note: p.Note, QueueWaitMs: p.QueueWait.Milliseconds()}
	if p.Total > 0 {
		eta := t.eta(p, time.Since(t.started))
		v.ETASeconds, v.ETAFrom = &eta, time.Now().UnixMilli()
	}
	return v
}

// mark is the script's last api.progress.
func (t *runTracker) mark() script.Mark {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last.Mark
}

// current is the progress last heard, as the model reads it.
func (t *runTracker) current() *RunProgress {
	t.mu.Lock()
	p := t.last
	t.mu.Unlock()
	return t.view(p)
}

// eta is the seconds the run should still take: the larger of its own pace
// so far, its waits for the rate limits left out (the budgets' share of the
// time is counted by the floor), and what the budgets of the upstreams it
// calls allow for the calls left (assuming each unit of work left costs
// what a unit cost so far).
func (t *runTracker) eta(p script.Progress, elapsed time.Duration) float64 {
	left := p.Total - p.Done
	if left <= 0 {
		return 0
	}
	pace := 0.0
	perUnit := 1.0
	if p.Done > 0 {
		own := max(elapsed-p.QueueWait, elapsed/20)
		pace = own.Seconds() * float64(left) / float64(p.Done)
		if p.Calls.Total > 0 {
			perUnit = float64(p.Calls.Total) / float64(p.Done)
		}
	}
	floor := t.budgetFloor(int(math.Round(float64(left) * perUnit)))
	return math.Round(max(pace, floor.Seconds())*10) / 10
}

// budgetFloor is the least time the upstream budgets allow for calls more
// calls, shared among the upstreams as the run's calls so far were.
func (t *runTracker) budgetFloor(calls int) time.Duration {
	l := t.s.call.Limiter
	t.mu.Lock()
	eps := make(map[string]int, len(t.endpoints))
	total := 0
	for id, n := range t.endpoints {
		eps[id] = n
		total += n
	}
	t.mu.Unlock()
	if l == nil || total == 0 || calls <= 0 {
		return 0
	}
	now := time.Now()
	st := l.StatusAt(now, func(id string) bool { return eps[id] > 0 })
	byUp := map[string]int{}
	for _, e := range st.Endpoints {
		byUp[e.Upstream] += eps[e.ID]
	}
	var floor time.Duration
	for _, u := range st.Upstreams {
		share := int(math.Ceil(float64(calls) * float64(byUp[u.Key]) / float64(total)))
		if share == 0 {
			continue
		}
		b := u.Budget
		if b.Requests > 0 && b.Window > 0 {
			floor = max(floor, windowFloor(share, u.RequestsRemaining, b.Requests, b.Span(), u.NextAllowed.Sub(now)))
		}
		if b.MinInterval > 0 {
			floor = max(floor, time.Duration(share-1)*b.MinInterval)
		}
		for _, q := range u.Learned {
			r := q.Requests
			if r.Limit > 0 && r.Window > 0 && r.HasRemaining {
				floor = max(floor, windowFloor(share, int(r.Remaining), int(r.Limit), r.Window, r.Reset.Sub(now)))
			}
		}
	}
	return floor
}

// windowFloor is the least time n more calls take under a rolling window of
// limit calls per window with avail free now, the next freeing in first.
func windowFloor(n, avail, limit int, window, first time.Duration) time.Duration {
	if n <= avail || limit <= 0 {
		return 0
	}
	return time.Duration((n-avail-1)/limit)*window + max(first, 0)
}

// runAnswer is the answer for a run's record: its final answer once it
// ended as done or failed, else where it stands.
func (s *Server) runAnswer(rec *runs.Record, t *runTracker) *mcp.CallToolResult {
	switch rec.Status {
	case runs.Done, runs.Failed:
		res := mcp.NewToolResultStructured(json.RawMessage(rec.Answer), string(rec.Answer))
		res.IsError = rec.IsError
		return res
	}
	out := RunState{RunID: rec.ID, Status: string(rec.Status)}
	var p RunProgress
	if t != nil {
		p = *t.current()
		// a write waiting on the page says so in the record, not the tracker
		p.WaitingForApproval = progressOf(rec, time.Now()).WaitingForApproval
		p = p.sinceReckoned(time.Now())
	} else {
		p = progressOf(rec, time.Now())
	}
	if p.Calls.ByStatus == nil {
		p.Calls.ByStatus = map[string]int{}
	}
	switch rec.Status {
	case runs.Running:
		out.Progress = &p
		out.Hint = "It goes on in the background: call script_result with this runId to wait for its answer."
	case runs.Cancelled:
		out.Calls, out.Logs = &p.Calls, rec.Logs
		out.Hint = "Cancelled: nothing more is sent. calls counts what was done (a call cancelled while it waited sent nothing)."
	case runs.Lost:
		out.Calls, out.Logs = &p.Calls, rec.Logs
		out.Hint = "The specgate running it stopped before it ended; the calls counted had gone out. Run it again if you still need its answer."
	}
	return jsonResult(out)
}

func (s *Server) handleScriptResult(ctx context.Context, _ mcp.CallToolRequest, in *ScriptResultArgs) (*mcp.CallToolResult, error) {
	if bad := requireString("runId", in.RunID); bad != nil {
		return bad, nil
	}
	if !runs.ValidID(in.RunID) {
		return argError("runId %q is not a run id: run_script answers one (run-...)", clip(in.RunID, 40)), nil
	}
	wait := defaultScriptWait
	if in.WaitSeconds != nil {
		w := *in.WaitSeconds
		if math.IsNaN(w) || w < 0 || w > MaxScriptWait.Seconds() {
			return argError("waitSeconds must be a number from 0 to %d", int(MaxScriptWait.Seconds())), nil
		}
		wait = time.Duration(w * float64(time.Second))
	}
	principal := principalOf(ctx)
	var rec *runs.Record
	var err error
	if in.Cancel {
		rec, err = s.runs.Cancel(ctx, principal, in.RunID)
	} else {
		rec, err = s.runs.Wait(ctx, principal, in.RunID, wait)
	}
	switch {
	case errors.Is(err, runs.ErrNotFound):
		return errorResult(&ErrorObject{Code: codes.NotFound,
			Message: fmt.Sprintf("no run %s of yours: it never started here, its record expired, or it is another caller's", in.RunID),
			Hint:    "Run the script again with run_script."}), nil
	case err != nil:
		id := newRequestID()
		s.log.Error("run record unreadable", "requestId", id, "run", in.RunID, "err", err)
		obj := internalError(id)
		obj.Message, obj.Retryable = "the run's record could not be read", true
		return errorResult(obj), nil
	}
	return s.runAnswer(rec, nil), nil
}

// runStatuses are the caller's runs in flight, on this replica or any
// other sharing the store, for rate_limit_status. When the store cannot be
// read they are this replica's.
func (s *Server) runStatuses(ctx context.Context) []RunState {
	var out []RunState
	recs, err := s.runs.List(ctx, principalOf(ctx), runs.MaxListed)
	if err != nil {
		s.log.Warn("runs of other replicas not listed", "err", err)
	}
	for _, rec := range recs {
		if rec.Status != runs.Running {
			continue
		}
		p := progressOf(&rec, time.Now())
		out = append(out, RunState{RunID: rec.ID, Status: string(rec.Status), Progress: &p})
	}
	return out
}
