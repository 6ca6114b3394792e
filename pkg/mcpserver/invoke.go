package mcpserver

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
)

// InvokeResult is the invoke tool's answer.
type InvokeResult struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers,omitempty"`
	// Body is the whole body when it fits the answer budget, else a
	// valid-JSON preview (Shaped says what was left out).
	Body   any            `json:"body,omitempty"`
	Shaped *answer.Shaped `json:"shaped,omitempty"`
	// ResponseID names the stored answer for read_response.
	ResponseID string    `json:"responseId,omitempty"`
	NextPage   *NextPage `json:"nextPage,omitempty"`
	Hint       string    `json:"hint,omitempty"`
	// JQError is a jq filter's run-time failure after the call went out;
	// the body is then the unfiltered answer or its preview.
	JQError         string         `json:"jqError,omitempty"`
	Note            string         `json:"note,omitempty"`
	Truncated       bool           `json:"truncated,omitempty"`
	TruncatedReason string         `json:"truncatedReason,omitempty"`
	Size            int64          `json:"size,omitempty"`
	RateLimit       *CallRateLimit `json:"rateLimit,omitempty"`
	// Cached is true when the answer is the last successful result of an
	// identical call, served within cache_ttl at no rate-limit cost.
	Cached     bool    `json:"cached,omitempty"`
	AgeSeconds float64 `json:"ageSeconds,omitempty"`
	// Revalidated is true when the upstream answered 304 Not Modified to a
	// conditional request: the body is the stored answer it confirmed.
	Revalidated bool `json:"revalidated,omitempty"`
}

// NextPage names the next page: the exact parameters to pass to invoke, or,
// when they would take more than a quarter of the answer budget, the
// responseId to pass as nextPageOf.
type NextPage = answer.NextPageRef

// CallRateLimit is the governance snapshot of one call.
type CallRateLimit struct {
	QueueWaitMs int64     `json:"queueWaitMs"`
	Attempts    []Attempt `json:"attempts,omitempty"`
	// NextCallInSeconds is when this endpoint can be called again.
	NextCallInSeconds float64 `json:"nextCallInSeconds,omitempty"`
	// Remaining is what the upstream said is left, when it said.
	Remaining *int64 `json:"upstreamRemaining,omitempty"`
}

// Attempt is one try of a call on the wire.
type Attempt struct {
	Status      int     `json:"status,omitempty"`
	WaitSeconds float64 `json:"waitBeforeSeconds,omitempty"`
	Source      string  `json:"source,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// invokeArgs are the invoke tool's arguments: the call, and how its
// answer is shaped.
type invokeArgs struct {
	call     callRequest
	jq       *answer.JQ
	maxBytes int
}

func (s *Server) parseInvokeArgs(in *InvokeArgs) (*invokeArgs, *mcp.CallToolResult) {
	if bad := requireString("endpointId", in.EndpointID); bad != nil {
		return nil, bad
	}
	if len(in.ContentType) > 256 {
		return nil, argError("contentType must be a media type string (at most 256 bytes)")
	}
	a := &invokeArgs{call: callRequest{endpointID: in.EndpointID, nextPageOf: in.NextPageOf, pages: in.Pages, in: invoke.Args{
		Parameters: in.Parameters, RequestBody: in.RequestBody, Headers: in.Headers, ContentType: in.ContentType,
	}}}
	if r := s.parseShapeArgs(in.JQ, in.MaxBytes, &a.jq, &a.maxBytes); r != nil {
		return nil, r
	}
	return a, nil
}

// parseShapeArgs reads jq and maxBytes, shared by invoke and read_response.
// A filter that does not compile or is not allowed is refused here, before
// anything is sent.
func (s *Server) parseShapeArgs(src string, max *float64, jq **answer.JQ, maxBytes *int) *mcp.CallToolResult {
	*maxBytes = s.resultBytes()
	if max != nil {
		n, ok := intArg(*max, answer.MinResultBytes, answer.MaxResultBytes)
		if !ok {
			return argError("maxBytes must be a whole number from %d to %d", answer.MinResultBytes, answer.MaxResultBytes)
		}
		*maxBytes = n
	}
	if strings.TrimSpace(src) != "" {
		q, err := answer.CompileJQ(src)
		if err != nil {
			return errorResult(s.mapError(err))
		}
		*jq = q
	}
	return nil
}

func (s *Server) handleInvoke(ctx context.Context, req mcp.CallToolRequest, in *InvokeArgs) (*mcp.CallToolResult, error) {
	a, bad := s.parseInvokeArgs(in)
	if bad != nil {
		return bad, nil
	}
	st, err := s.wait(ctx)
	if err != nil {
		return s.notReady(err), nil
	}
	a.call.tool = &req
	c := s.callEndpoint(ctx, st, a.call)
	switch {
	case c.err != nil:
		return errorResult(c.err), nil
	case c.ask != nil:
		return c.ask, nil
	}
	out := s.invokeResult(c.r, a.maxBytes)
	if !c.r.Cached {
		out.RateLimit = c.snap
	}
	sctx, span := s.tracer().Start(ctx, "shape answer")
	res := s.answerResult(sctx, c.r.Answer, c.r.ResponseID, a, out)
	span.End()
	return res, nil
}

// invokeResult is the answer of a call before it is fitted into budget
// bytes: what the upstream said and why pages stopped, or that it came from
// the cache.
func (s *Server) invokeResult(r *invoke.CallResult, budget int) *InvokeResult {
	ans := r.Answer
	out := &InvokeResult{
		StatusCode: ans.StatusCode, Headers: ans.Headers, Truncated: ans.Truncated, Size: r.Size,
		Cached: r.Cached, AgeSeconds: r.Age.Seconds(), Revalidated: r.Revalidated,
	}
	out.NextPage, out.Note = nextPageOf(ans, r.ResponseID, budget)
	if p := r.Paged; p != nil {
		out.TruncatedReason = p.Result.TruncatedReason
		if p.Full && p.NextPage != nil {
			out.Note = joinNote(out.Note, "stopped after "+strconv.Itoa(len(p.Results))+" pages: together they reached max_response_bytes; nextPage asks for the rest")
		}
		if p.PageErr != nil {
			obj := s.mapError(p.PageErr)
			out.Note = joinNote(out.Note, "stopped after "+strconv.Itoa(len(p.Results))+" pages: the next one failed with "+obj.Code+" ("+clip(obj.Message, 200)+"); nextPage asks for it again")
		}
	}
	return out
}

func suggestionIDs(list []Suggestion) string {
	out := ""
	for i, s := range list {
		if i > 0 {
			out += ", "
		}
		out += s.ID
	}
	return out
}

// snapshot turns a call's trace into the answer's rateLimit.
func (s *Server) snapshot(out *invoke.Outcome) *CallRateLimit {
	snap := &CallRateLimit{QueueWaitMs: out.Trace.QueueWait.Milliseconds(), Remaining: out.Trace.Remaining}
	for _, a := range out.Trace.Attempts {
		at := Attempt{Status: a.Status, Source: a.Source}
		if a.Wait > 0 {
			at.WaitSeconds = ratelimit.WaitSeconds(a.Wait)
		}
		if a.Err != nil {
			at.Error = codeOf(a.Err)
		}
		snap.Attempts = append(snap.Attempts, at)
	}
	if out.Trace.NextCall > 0 {
		snap.NextCallInSeconds = ratelimit.WaitSeconds(out.Trace.NextCall)
	}
	return snap
}

// newCaller builds, once, the call behind invoke and run_script from the
// options: the client, limiter, upstream keys, retries, answer store and
// cache TTL, with the server's own result cache, validators, observer and
// clock. What differs per call travels with it (invoke.CallOptions).
func (s *Server) newCaller(c invoke.Caller) invoke.Caller {
	if c.Upstream == nil {
		c.Upstream = func(e *spec.Endpoint) string { return HostKey(e.BaseURL) }
	}
	if c.Now == nil {
		c.Now = s.now
	}
	if c.Answers == nil {
		c.Answers = answer.NewMemoryAnswers(answer.MemoryAnswersOptions{Now: s.now})
	}
	if c.Cache == nil {
		c.Cache = &s.cache
	}
	if c.Validators == nil {
		c.Validators = &s.validators
	}
	if c.Observer == nil {
		c.Observer = (*observer)(s)
	} else {
		c.Observer = observers{(*observer)(s), c.Observer}
	}
	return c
}

// observers hears each attempt and refusal in turn.
type observers []invoke.Observer

func (obs observers) Attempted(ctx context.Context, e *spec.Endpoint, up string, queueWait, latency time.Duration, tokens int64, res *invoke.Result) {
	for _, o := range obs {
		o.Attempted(ctx, e, up, queueWait, latency, tokens, res)
	}
}

func (obs observers) Refused(ctx context.Context, e *spec.Endpoint, err error) {
	for _, o := range obs {
		o.Refused(ctx, e, err)
	}
}

// observer feeds the statistics and metrics from governed calls.
type observer Server

func (o *observer) Attempted(ctx context.Context, e *spec.Endpoint, up string, queueWait, latency time.Duration, tokens int64, res *invoke.Result) {
	o.stats.observe(principalOf(ctx), e, up, latency, queueWait, tokens)
	o.metrics.ObserveAttempt(up, queueWait, latency, res)
	(*Server)(o).traceAttempt(ctx, e, up, queueWait, latency, res)
}

func (o *observer) Refused(ctx context.Context, e *spec.Endpoint, err error) {
	o.stats.refused(principalOf(ctx), err)
}

// progressSender sends MCP progress notifications with the request's
// progress token; nil when the client asked for none.
func (s *Server) progressSender(ctx context.Context, req mcp.CallToolRequest) func(params map[string]any) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil
	}
	token := req.Params.Meta.ProgressToken
	srv := serverFromContext(ctx)
	if srv == nil {
		return nil
	}
	return func(params map[string]any) {
		params["progressToken"] = token
		if srv.SendNotificationToClient(ctx, "notifications/progress", params) == nil {
			s.order.Queued()
		}
	}
}

// progressFunc sends MCP progress notifications while a call waits in a
// queue, when the client asked for them with a progress token.
func (s *Server) progressFunc(ctx context.Context, req mcp.CallToolRequest) func(ratelimit.Progress) {
	send := s.progressSender(ctx, req)
	if send == nil {
		return nil
	}
	return func(p ratelimit.Progress) {
		msg := "waiting for the rate limit"
		if p.Position > 0 {
			msg = "waiting in the queue at position " + strconv.Itoa(p.Position)
		}
		params := map[string]any{"progress": p.Waited.Seconds(), "message": msg}
		if p.Estimate > 0 {
			params["total"] = (p.Waited + p.Estimate).Seconds()
		}
		send(params)
	}
}
