package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/script"
	"github.com/specgate/specgate/pkg/spec"
)

// callRequest is one call to an endpoint as the invoke tool and
// run_script's api.invoke both ask it, from the tool's decoded arguments.
type callRequest struct {
	endpointID string
	// nextPageOf names the stored answer whose next page is asked for
	// (invoke's nextPageOf); empty: none.
	nextPageOf string
	in         invoke.Args
	// pages is the pages argument as given; nil: one page.
	pages *float64
	// tool is the tools/call that asks, for an approval's round trip and
	// for progress; nil for a script's call.
	tool *mcp.CallToolRequest
	// run is the script run that makes the call; nil for a direct invoke.
	run *scriptCaller
}

// callOutcome is what became of a call: its result (with the call's trace
// even when it failed), or the question that asks the user first, or the
// refusal the model reads.
type callOutcome struct {
	r    *invoke.CallResult
	snap *CallRateLimit
	// ask answers the tools/call instead (input_required): the user is
	// asked before the call goes.
	ask *mcp.CallToolResult
	err *ErrorObject
}

// callEndpoint is the one door of a call to an endpoint, for invoke and api.invoke
// alike: the endpoint (or why it is not served), the pages rule, a
// script's own bounds (writes, max_calls), the token's scope, the user's
// approval, then the governed call. A rule added here holds for both.
func (s *Server) callEndpoint(ctx context.Context, st *state, c callRequest) callOutcome {
	refuse := func(obj *ErrorObject) callOutcome { return callOutcome{err: obj} }
	pages := 1
	if c.pages != nil {
		n, ok := intArg(*c.pages, 1, invoke.MaxPages)
		if !ok {
			return refuse(argObject("pages must be a whole number from 1 to %d", invoke.MaxPages))
		}
		pages = n
	}
	e, ok := st.cat.Lookup(c.endpointID)
	if !ok {
		return refuse(s.notFoundError(st, c.endpointID, c.run != nil))
	}
	var err error
	if c.nextPageOf != "" {
		if c.in, err = s.call.NextPageArgs(ctx, e, c.nextPageOf, c.in); err != nil {
			return refuse(s.mapError(err))
		}
	}
	if pages > 1 && e.Method != http.MethodGet {
		return refuse(argObject("pages follows next pages of GET calls only; %s is a %s", e.ID, e.Method))
	}
	if c.run != nil && !c.run.allowWrites && !e.Safe() {
		return refuse(argObject("%s is a %s: scripts may call only GET, HEAD and OPTIONS endpoints unless scripts.allow_writes is true; nothing was sent", e.ID, e.Method))
	}
	if obj := s.requireScope(ctx, endpointScope(e)); obj != nil {
		return refuse(obj)
	}
	if s.call.Client == nil {
		return refuse(&ErrorObject{Code: codes.Unreachable, Message: "calls are disabled in this specgate"})
	}
	opt := callOptions{call: invoke.CallOptions{Pages: pages}, suggest: c.run == nil}
	if c.run != nil {
		if pages = c.run.reserve(pages); pages == 0 {
			return refuse(argObject("this script already sent its %d requests (scripts.max_calls; each page is one)", c.run.maxRequests))
		}
		out := s.approveAndCall(ctx, st, e, c, c.run.options(pages))
		sent := 0
		if out.r != nil && out.r.Paged != nil {
			sent = len(out.r.Paged.Trace.Attempts)
		}
		c.run.settle(pages, sent) // what it reserved and did not send is the run's again
		return out
	}
	if c.tool != nil {
		opt.call.Progress = s.progressFunc(ctx, *c.tool)
	}
	return s.approveAndCall(ctx, st, e, c, opt)
}

// approveAndCall asks the user about the call when its endpoint needs it
// (only about a call that would go: its arguments are prepared first),
// then makes it.
func (s *Server) approveAndCall(ctx context.Context, st *state, e *spec.Endpoint, c callRequest, opt callOptions) callOutcome {
	if s.needsApproval(e) {
		if c.run != nil && c.run.track != nil && !c.run.track.isLive() {
			// Nobody waits on the call that started the run: a question
			// put to the client would reach no one and hold the run until
			// its deadline. The governance page can still ask a person.
			ctx = context.WithValue(ctx, backgroundRunKey{}, true)
		}
		if _, err := s.call.Client.Prepare(ctx, e, c.in); err != nil {
			return callOutcome{err: s.mapError(err)}
		}
		if ask, obj := s.approveCall(ctx, c.tool, e, c.in, opt.call.Pages, opt.runID); ask != nil || obj != nil {
			return callOutcome{ask: ask, err: obj}
		}
	}
	if c.run != nil && c.run.track != nil {
		c.run.track.called(e.ID)
	}
	r, snap, obj := s.invokeCall(ctx, st, e, c.in, opt)
	return callOutcome{r: r, snap: snap, err: obj}
}

// argObject is a validation_failed error object.
func argObject(format string, args ...any) *ErrorObject {
	return &ErrorObject{Code: codes.ValidationFailed, Message: fmt.Sprintf(format, args...)}
}

// callOptions are what differs between a direct invoke and a script's call.
type callOptions struct {
	// call travels with the governed call: pages, the cooldown's key, the
	// queue's order and wait, progress.
	call invoke.CallOptions
	// runID names the script a call is made by, in the audit log; empty
	// for a direct invoke.
	runID string
	// suggest adds, to a refusal, endpoints callable meanwhile.
	suggest bool
}

// options are a run's call options: the cooldown keyed on the arguments,
// the wait bounded by the script's deadline, behind the principal's
// direct calls in the queue.
func (c *scriptCaller) options(pages int) callOptions {
	return callOptions{runID: c.runID, call: invoke.CallOptions{Pages: pages, CooldownByArgs: true, Background: true, WaitUnderCaller: true}}
}

// invokeCall is the governed call behind the door: credentials, budgets
// and the wait queue, learned limits, retries, the result cache, the
// stored answer, the audit line and the metrics. On failure it returns the
// error object the model reads; the result then still holds the call's
// trace.
func (s *Server) invokeCall(ctx context.Context, st *state, e *spec.Endpoint, in invoke.Args, opt callOptions) (*invoke.CallResult, *CallRateLimit, *ErrorObject) {
	r, err := s.call.Call(ctx, e, in, opt.call)
	if r.Cached {
		s.audit(ctx, auditRecord{Endpoint: e.ID, RunID: opt.runID, Outcome: "ok", Status: r.Answer.StatusCode, Cached: true})
		return r, &CallRateLimit{}, nil
	}
	snap := s.snapshot(r.Paged.Outcome)
	rec := auditRecord{Endpoint: e.ID, RunID: opt.runID, Outcome: "ok", LatencyMs: r.Latency.Milliseconds(),
		QueueWaitMs: snap.QueueWaitMs, Attempts: len(snap.Attempts)}
	if err != nil {
		if res := r.Paged.Result; res != nil {
			rec.Status, rec.ResponseBytes = res.StatusCode, res.Size
		}
		obj := s.mapError(err)
		rec.Outcome, rec.Scope = obj.Code, obj.Scope
		if obj.Limit != nil {
			rec.Limit = obj.Limit.Kind
		}
		s.audit(ctx, rec)
		if opt.suggest && obj.Retryable && (obj.Code == codes.RateLimit || obj.Code == codes.UpstreamRateLimit || obj.Code == codes.QueueFull || obj.Code == codes.QueueTimeout) {
			whole := obj.Limit == nil || obj.Limit.Kind != string(ratelimit.KindCooldown)
			obj.Suggestions = s.suggestions(st, e, whole)
			if len(obj.Suggestions) > 0 {
				obj.Hint += " Meanwhile you can call: " + suggestionIDs(obj.Suggestions)
			}
		}
		return r, snap, obj
	}
	rec.Status, rec.ResponseBytes = r.Answer.StatusCode, r.ReadBytes()
	s.audit(ctx, rec)
	if r.StoreErr != nil {
		s.log.Warn("answer not stored", "endpoint", e.ID, "err", r.StoreErr)
	}
	return r, snap, nil
}

// scriptResponse is what api.invoke resolves to: the answer's body read by
// Answer.Value, as the invoke tool reads it. JSON goes as its own text,
// decoded once on the script's side; text as a string; anything else as
// {contentType, bytes}.
func scriptResponse(ans *answer.Answer, snap *CallRateLimit) *script.Response {
	resp := &script.Response{StatusCode: ans.StatusCode, Headers: boundHeaders(ans.Headers, maxHeaderBytes)}
	if ans.NextPage != nil {
		resp.NextPage = map[string]any{"parameters": ans.NextPage}
	}
	switch v := ans.Value(); v.Kind {
	case answer.BodyJSON:
		resp.Body = json.RawMessage(v.Data)
	case answer.BodyText:
		resp.Body = answer.Text(v.Data)
	case answer.BodyBinary:
		resp.Body = map[string]any{"contentType": ans.ContentType, "bytes": len(v.Data)}
	}
	if snap != nil {
		resp.QueueWait = time.Duration(snap.QueueWaitMs) * time.Millisecond
	}
	return resp
}
