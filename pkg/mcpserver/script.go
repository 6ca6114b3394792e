package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/runs"
	"github.com/specgate/specgate/pkg/script"
)

// ScriptOptions configure run_script. The zero value runs scripts in this
// process with the script package's bounds, read-only, two at once per
// principal.
type ScriptOptions struct {
	// Runner runs the scripts. If nil, script.InProcess{} (cmd wires a
	// script.Worker, which holds the memory bound with OS limits).
	Runner script.Runner
	// AllowWrites lets scripts call operations other than GET, HEAD and
	// OPTIONS. False: such a call throws validation_failed, nothing sent.
	AllowWrites bool
	// Timeout is the longest a run may take, waits and the background
	// included, and its default. If zero, DefaultScriptTimeout.
	Timeout time.Duration
	// AnswerWithin is how long run_script waits for a run to end before it
	// answers {runId, status: running, progress} and the run goes on in the
	// background, collected by script_result. If zero,
	// DefaultAnswerWithin; if negative, run_script answers when the run
	// ends, however long that takes.
	AnswerWithin time.Duration
	// Runs keeps the runs' records where script_result finds them. If nil,
	// a runs.Manager of the server's own, in memory.
	Runs *runs.Manager
	// MaxCalls bounds api calls per run. If zero, 200.
	MaxCalls int
	// MaxConcurrent bounds calls in flight per run. If zero, 4.
	MaxConcurrent int
	// PerPrincipal bounds runs at once per principal. If zero, 2.
	PerPrincipal int
	// MaxMemory bounds a run's memory in bytes. If zero, 64 MiB.
	MaxMemory int64
}

// MaxScriptTimeout is the most scripts.timeout may be set to.
const MaxScriptTimeout = time.Hour

// DefaultScriptTimeout is scripts.timeout's default: long enough for a
// task paced by a quota, now that a run outlives the call.
const DefaultScriptTimeout = 10 * time.Minute

// DefaultAnswerWithin is scripts.answer_within's default: well inside the
// 60 s MCP clients give a tool call.
const DefaultAnswerWithin = 20 * time.Second

func (o ScriptOptions) answerWithin() time.Duration {
	if o.AnswerWithin == 0 {
		return DefaultAnswerWithin
	}
	return max(o.AnswerWithin, 0)
}

func (o ScriptOptions) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultScriptTimeout
	}
	return min(o.Timeout, MaxScriptTimeout)
}

// maxCalls bounds a run's api calls and, pages and retries counted, its
// requests upstream.
func (o ScriptOptions) maxCalls() int {
	if o.MaxCalls <= 0 {
		return script.DefaultMaxCalls
	}
	return o.MaxCalls
}

func (o ScriptOptions) perPrincipal() int {
	if o.PerPrincipal <= 0 {
		return 2
	}
	return o.PerPrincipal
}

// RunScriptArgs are the run_script tool's arguments.
type RunScriptArgs struct {
	Code           string   `json:"code" jsonschema:"An async function body"`
	TimeoutSeconds *float64 `json:"timeoutSeconds,omitempty" jsonschema:"Deadline in seconds (default and most: scripts.timeout)"`
	MaxBytes       *float64 `json:"maxBytes,omitempty" jsonschema:"Answer budget, 1024-48000"`
}

// ScriptRateLimit is the governance summary of a run.
type ScriptRateLimit struct {
	// QueueWaitMs sums the waits of every call for the rate limit.
	QueueWaitMs int64 `json:"queueWaitMs"`
}

// RunScriptResult is run_script's answer.
type RunScriptResult struct {
	// Status is "done": a run past answer_within answers a RunState.
	Status string `json:"status"`
	// Result is the return value: whole within the budget, else a
	// valid-JSON preview (Shaped says what was left out).
	Result     any             `json:"result"`
	Shaped     *answer.Shaped  `json:"shaped,omitempty"`
	ResponseID string          `json:"responseId,omitempty"`
	Hint       string          `json:"hint,omitempty"`
	Calls      script.Calls    `json:"calls"`
	RateLimit  ScriptRateLimit `json:"rateLimit"`
	Logs       []string        `json:"logs,omitempty"`
	LogsCut    bool            `json:"logsCut,omitempty"`
	// LogsDropped counts the last lines of logs left out to fit the budget.
	LogsDropped int    `json:"logsDropped,omitempty"`
	RunID       string `json:"runId"`
}

// runScriptDescription is what the model reads of run_script: the api,
// one example that pages a list and loops over its items, the bounds.
func runScriptDescription(o ScriptOptions) string {
	calls, conc := o.maxCalls(), o.MaxConcurrent
	if conc <= 0 {
		conc = script.DefaultMaxConcurrent
	}
	writes := "GET/HEAD/OPTIONS only."
	if o.AllowWrites {
		writes = "Writes are allowed."
	}
	later := ""
	if w := o.answerWithin(); w > 0 {
		later = " After " + w.String() + " it answers {runId, status: running, progress} and runs on: collect it with script_result."
	}
	return "Run JavaScript that makes many calls; only its return value reaches you. code is an async function body with\n" +
		"await api.invoke(id, {parameters, requestBody, headers, pages}) -> {statusCode, headers, body, nextPage},\n" +
		"await api.search(query, {limit}), console.log, api.progress(done, total, note).\n" +
		"A failed call throws an Error with code, message, retryAfterSeconds. Example:\n" +
		"const q = {owner: \"o\", repo: \"r\"}; let a = {parameters: q}, prs = [];\n" +
		"while (a) { const r = await api.invoke(\"gh.pulls/list\", a); prs.push(...r.body); a = r.nextPage; }\n" +
		"return Promise.all(prs.map(async p => (await api.invoke(\"gh.pulls/get\", {parameters: {...q, pull_number: p.number}})).body.title));\n" +
		"Calls wait for the rate limits. At most " +
		strconv.Itoa(calls) + " calls, " + strconv.Itoa(conc) + " in flight. " + writes +
		later
}

// scriptRuns counts the runs in progress per principal.
type scriptRuns struct {
	mu   sync.Mutex
	runs map[string]int
}

func (r *scriptRuns) take(principal string, max int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs == nil {
		r.runs = map[string]int{}
	}
	if r.runs[principal] >= max {
		return false
	}
	r.runs[principal]++
	return true
}

func (r *scriptRuns) release(principal string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs[principal]--; r.runs[principal] <= 0 {
		delete(r.runs, principal)
	}
}

func (s *Server) handleRunScript(ctx context.Context, req mcp.CallToolRequest, in *RunScriptArgs) (*mcp.CallToolResult, error) {
	o := s.opts.Scripts
	if bad := requireString("code", in.Code); bad != nil {
		return bad, nil
	}
	if len(in.Code) > script.MaxCodeBytes {
		return argError("code is %d bytes; a script may be at most %d", len(in.Code), script.MaxCodeBytes), nil
	}
	timeout := o.timeout()
	if in.TimeoutSeconds != nil {
		n, ok := intArg(*in.TimeoutSeconds, 1, int(timeout/time.Second))
		if !ok {
			return argError("timeoutSeconds must be a whole number from 1 to %d (scripts.timeout)", int(timeout/time.Second)), nil
		}
		timeout = time.Duration(n) * time.Second
	}
	maxBytes := s.resultBytes()
	if in.MaxBytes != nil {
		n, ok := intArg(*in.MaxBytes, answer.MinResultBytes, answer.MaxResultBytes)
		if !ok {
			return argError("maxBytes must be a whole number from %d to %d", answer.MinResultBytes, answer.MaxResultBytes), nil
		}
		maxBytes = n
	}
	st, err := s.wait(ctx)
	if err != nil {
		return s.notReady(err), nil
	}
	principal := principalOf(ctx)
	if !s.scripts.take(principal, o.perPrincipal()) {
		obj := &ErrorObject{Code: codes.RateLimit, Scope: "proxy", Retryable: true,
			Message: fmt.Sprintf("%d of your scripts are already running (scripts.per_principal), in the background too", o.perPrincipal()),
			Hint:    "Wait for one of them to end (script_result), or cancel one, then run this one.",
			Limit:   &LimitInfo{Kind: "scripts", Key: "scripts.per_principal", Limit: int64(o.perPrincipal())}}
		if eta := s.soonestEnd(principal, time.Now()); eta > 0 { // the runs' own estimate, not a promise
			obj.RetryAfterSeconds, obj.RetryAt = eta, time.Now().Add(time.Duration(eta*float64(time.Second))).UTC().Format(time.RFC3339Nano)
		}
		return errorResult(obj), nil
	}
	t := &runTracker{s: s, started: time.Now(), notify: s.progressSender(ctx, req)}
	t.setLive(true)
	defer t.setLive(false)
	run, err := s.runs.Start(ctx, principal, timeout, func(rctx context.Context, r *runs.Run) runs.Outcome {
		defer s.scripts.release(principal)
		return s.runScript(rctx, st, r, t, in.Code, timeout, maxBytes)
	})
	if err != nil {
		s.scripts.release(principal)
		return errorResult(&ErrorObject{Code: codes.Unreachable, Retryable: true, Message: "this specgate is shutting down and takes no new runs",
			Hint: "Run it again: another replica (or this one, once restarted) will take it."}), nil
	}
	if ts, ok := ctx.Value(taskStartKey{}).(*taskStart); ok {
		// A task specgate serves itself (tasks.go): the client polls
		// tasks/get and collects tasks/result, so the call answers at once.
		ts.run = run
		rec := run.Record()
		return s.runAnswer(&rec, t), nil
	}
	var within <-chan time.Time
	// In a task mcp-go runs, the call's answer is the run's final answer,
	// collected with tasks/result: no answer_within.
	if w := o.answerWithin(); w > 0 && req.Params.Task == nil {
		timer := time.NewTimer(w)
		defer timer.Stop()
		within = timer.C
	}
	select {
	case <-run.Done():
	case <-within:
	case <-ctx.Done():
		t.setLive(false)
		if !callerCancelled(ctx) {
			// The connection went away, which asked nothing: the run goes
			// on, listed by rate_limit_status and answered by script_result.
			break
		}
		// The client gave up on the call before an answer: it asked to stop.
		if rec, err := s.runs.Cancel(context.WithoutCancel(ctx), principal, run.ID()); err == nil {
			return s.runAnswer(rec, nil), nil
		}
	}
	t.setLive(false)
	rec := run.Record()
	return s.runAnswer(&rec, t), nil
}

// runScript runs the script as run r, and returns its final answer: what
// run_script answers at once when the run ends within answer_within, and
// script_result after.
func (s *Server) runScript(ctx context.Context, st *state, r *runs.Run, t *runTracker, code string, timeout time.Duration, maxBytes int) runs.Outcome {
	o := s.opts.Scripts
	t.run = r
	principal := principalOf(ctx)
	c := &scriptCaller{s: s, st: st, runID: r.ID(), allowWrites: o.AllowWrites, maxRequests: o.maxCalls(), track: t}
	opts := script.Options{Timeout: timeout, MaxCalls: o.MaxCalls, MaxConcurrent: o.MaxConcurrent, MaxMemory: o.MaxMemory,
		Progress: t.progress}
	runner := o.Runner
	if runner == nil {
		runner = script.InProcess{}
	}
	res, err := runner.Run(ctx, code, c, opts)
	var result *mcp.CallToolResult
	final := res
	if err != nil {
		obj := s.scriptError(err, r.ID(), maxBytes)
		if se, ok := err.(*script.Error); ok {
			final = se.Result
		}
		result = errorResult(obj)
	} else {
		result = s.scriptResult(ctx, principal, res, r.ID(), maxBytes)
	}
	out := runs.Outcome{IsError: result.IsError}
	if text, ok := result.Content[0].(mcp.TextContent); ok {
		out.Answer = json.RawMessage(text.Text)
	}
	if final != nil {
		t.progress(script.Progress{Calls: final.Calls, QueueWait: final.QueueWait, Mark: t.mark()})
		out.Logs = final.Logs
	}
	if b, err := json.Marshal(t.current()); err == nil {
		out.Progress = b
	}
	return out
}

// scriptResult fits the return value and the logs into the budget: whole
// when the answer fits and nests no deeper than invoke's bodies may, else
// the logs cut to what the result leaves (at least a quarter of the budget)
// and the value stored and previewed, as invoke previews a body.
func (s *Server) scriptResult(ctx context.Context, principal string, res *script.Result, runID string, maxBytes int) *mcp.CallToolResult {
	out := &RunScriptResult{Status: string(runs.Done), Result: json.RawMessage(res.Value), Calls: res.Calls, Logs: res.Logs, LogsCut: res.LogsCut, RunID: runID,
		RateLimit: ScriptRateLimit{QueueWaitMs: res.QueueWait.Milliseconds()}}
	if out.Calls.ByStatus == nil {
		out.Calls.ByStatus = map[string]int{}
	}
	deep := answer.JSONDeeperThan(res.Value, answer.MaxAnswerDepth)
	if text, err := json.Marshal(out); err == nil && len(text) <= maxBytes && !deep {
		return mcp.NewToolResultStructured(json.RawMessage(text), string(text))
	}
	if len(out.Logs) > 0 {
		out.Logs = nil
		bare, _ := json.Marshal(out)
		out.Logs, out.LogsDropped = fitLogs(res.Logs, max(maxBytes-len(bare), maxBytes/4))
		out.LogsCut = out.LogsCut || out.LogsDropped > 0
		if text, err := json.Marshal(out); err == nil && len(text) <= maxBytes && !deep {
			return mcp.NewToolResultStructured(json.RawMessage(text), string(text))
		}
	}
	ans := &answer.Answer{Endpoint: "run_script", StatusCode: http.StatusOK, ContentType: "application/json", Body: res.Value, Created: s.now()}
	id := ""
	if s.answers != nil {
		if got, err := s.answers.Put(ctx, principal, ans); err == nil {
			id = got
		} else {
			s.log.Warn("script result not stored", "run", runID, "err", err)
		}
	}
	view, err := answer.NewView(ctx, ans, answer.RenderOptions{ResponseID: id, JQLimits: s.jqLimits(ctx)})
	if err != nil {
		return errorResult(&ErrorObject{Code: codes.ScriptError, Message: "the script's return value could not be rendered"})
	}
	out.ResponseID = id
	text, _ := view.Fit(maxBytes, func(r *answer.Reply) []byte {
		out.Result, out.Shaped, out.Hint = r.Body, r.Shaped, r.Hint
		b, _ := json.Marshal(out)
		return b
	})
	return mcp.NewToolResultStructured(json.RawMessage(text), string(text))
}

// fitLogs keeps the first lines of logs whose JSON fits in room bytes,
// with the room the count of the dropped ones takes, and says how many it
// dropped.
func fitLogs(logs []string, room int) ([]string, int) {
	used := len(`,"logsDropped":`) + len(strconv.Itoa(len(logs))) + len(`"logs":[],`)
	for i, l := range logs {
		b, _ := json.Marshal(l)
		if used += len(b) + 1; used > room {
			return logs[:i], len(logs) - i
		}
	}
	return logs, 0
}

// scriptError is the error object of a run that did not finish: with the
// calls already made and the logs (in half of maxBytes, the rest left to
// the error), so the model knows what went out. An error that is no
// *script.Error is specgate's own, answered as internal.
func (s *Server) scriptError(err error, runID string, maxBytes int) *ErrorObject {
	se, ok := err.(*script.Error)
	if !ok {
		id := newRequestID()
		s.log.Error("run_script failed inside specgate", "requestId", id, "run", runID, "err", err)
		obj := internalError(id)
		obj.RunID = runID
		return obj
	}
	obj := &ErrorObject{Code: se.Code, Message: se.Message, Line: se.Line, RunID: runID}
	// said only when some did: a syntax error sends nothing
	sent := "; no call went out."
	if se.Result != nil && se.Result.Calls.Total > 0 {
		sent = "; the calls counted already went out."
	}
	switch se.Code {
	case codes.Timeout:
		obj.Retryable = true
		obj.Hint = "Make the script do less (fewer calls, or pages), or give it a longer timeoutSeconds" + sent
	case codes.Cancelled:
		obj.Hint = "The run was cancelled" + sent
	default:
		obj.Code = codes.ScriptError
		obj.Hint = "Fix the script, then run it again" + sent
	}
	if se.Result != nil {
		calls := se.Result.Calls
		if calls.ByStatus == nil {
			calls.ByStatus = map[string]int{}
		}
		obj.Calls = &calls
		obj.Logs, obj.LogsDropped = fitLogs(se.Result.Logs, maxBytes/2)
	}
	return obj
}

// scriptCaller makes a run's calls: each through the invoke tool's door
// (callEndpoint), with the caller's scopes checked per call. It holds
// no credential the script could reach: the script sees only answers.
type scriptCaller struct {
	s           *Server
	st          *state
	runID       string
	allowWrites bool

	// maxRequests bounds the run's requests upstream (scripts.max_calls):
	// the script package counts api calls, and one call with pages: 5 sends
	// up to five. Each call reserves its pages before it goes and gives back
	// what it did not send.
	maxRequests int
	// track hears each endpoint called, for the run's ETA.
	track    *runTracker
	mu       sync.Mutex
	requests int // sent or reserved
}

// reserve takes up to pages requests of the run's bound; zero when none is
// left.
func (c *scriptCaller) reserve(pages int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(pages, c.maxRequests-c.requests)
	if n <= 0 {
		return 0
	}
	c.requests += n
	return n
}

// settle replaces a call's reservation with the requests it sent, retries
// included.
func (c *scriptCaller) settle(reserved, sent int) {
	c.mu.Lock()
	c.requests += sent - reserved
	c.mu.Unlock()
}

var _ script.Caller = (*scriptCaller)(nil)

// callError is the Error a failed call throws into the script.
func callError(obj *ErrorObject) *script.CallError {
	return &script.CallError{Code: obj.Code, Message: obj.Message, RetryAfterSeconds: obj.RetryAfterSeconds, Status: obj.Status, Scope: obj.Scope}
}

// Invoke is api.invoke: the invoke tool's door (callEndpoint) with the
// run's bounds, and the answer read as the invoke tool reads it.
func (c *scriptCaller) Invoke(ctx context.Context, id string, a script.Args) (*script.Response, error) {
	req := callRequest{endpointID: id, run: c,
		in: invoke.Args{Parameters: a.Parameters, RequestBody: a.RequestBody, Headers: a.Headers, ContentType: a.ContentType}}
	if a.Pages != 0 {
		p := float64(a.Pages)
		req.pages = &p
	}
	out := c.s.callEndpoint(ctx, c.st, req)
	if out.err != nil {
		return nil, callError(out.err)
	}
	return scriptResponse(out.r.Answer, out.snap), nil
}

func (c *scriptCaller) Search(ctx context.Context, q string, limit int) (any, error) {
	if obj := c.s.requireScope(ctx, ScopeRead); obj != nil {
		return nil, callError(obj)
	}
	out, err := c.s.searchEndpoints(ctx, c.st, q, nil, limit)
	if err != nil {
		return nil, &script.CallError{Code: codes.ValidationFailed, Message: "query not understood: " + clip(err.Error(), 200)}
	}
	return out, nil
}
