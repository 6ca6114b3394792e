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

// invokeArgs are the invoke tool's arguments beyond the call itself.
type invokeArgs struct {
	id         string
	nextPageOf string
	in         invoke.Args
	jq         *answer.JQ
	pages      int
	maxBytes   int
}

func (s *Server) parseInvokeArgs(in *InvokeArgs) (*invokeArgs, *mcp.CallToolResult) {
	if bad := requireString("endpointId", in.EndpointID); bad != nil {
		return nil, bad
	}
	if len(in.ContentType) > 256 {
		return nil, argError("contentType must be a media type string (at most 256 bytes)")
	}
	a := &invokeArgs{id: in.EndpointID, nextPageOf: in.NextPageOf, pages: 1, in: invoke.Args{
		Parameters: in.Parameters, RequestBody: in.RequestBody, Headers: in.Headers, ContentType: in.ContentType,
	}}
	if in.Pages != nil {
		n, ok := intArg(*in.Pages, 1, invoke.MaxPages)
		if !ok {
			return nil, argError("pages must be a whole number from 1 to %d", invoke.MaxPages)
		}
		a.pages = n
	}
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
	e, ok := st.cat.Lookup(a.id)
	if !ok {
		return s.notFound(st, a.id), nil
	}
	if a.nextPageOf != "" {
		if a.in, err = s.call.NextPageArgs(ctx, principalOf(ctx), e, a.nextPageOf, a.in); err != nil {
			return errorResult(s.mapError(err)), nil
		}
	}
	if a.pages > 1 && e.Method != "GET" {
		return argError("pages follows next pages of GET calls only; %s is a %s", e.ID, e.Method), nil
	}
	if s.needsApproval(e) && s.call.Client != nil {
		// The user is asked only about a call that would go.
		if _, err := s.call.Client.Prepare(ctx, e, a.in); err != nil {
			return errorResult(s.mapError(err)), nil
		}
		if ask, obj := s.approveCall(ctx, &req, e, a.in, a.pages, ""); ask != nil || obj != nil {
			if obj != nil {
				return errorResult(obj), nil
			}
			return ask, nil
		}
	}
	if s.call.Client == nil {
		return errorResult(&ErrorObject{Code: CodeUnreachable, Message: "calls are disabled in this specgate"}), nil
	}
	r, snap, obj := s.invokeCall(ctx, st, e, a.in, a.pages, callOptions{progress: s.progressFunc(ctx, req), suggest: true})
	if obj != nil {
		return errorResult(obj), nil
	}
	out := s.invokeResult(r, a.maxBytes)
	if !r.Cached {
		out.RateLimit = snap
	}
	sctx, span := s.tracer().Start(ctx, "shape answer")
	res := s.answerResult(sctx, r.Answer, r.ResponseID, a, out)
	span.End()
	return res, nil
}

// callOptions are what differs between a direct invoke and a script's call.
type callOptions struct {
	// progress hears of waits in the queue; nil: none sent.
	progress func(ratelimit.Progress)
	// runID names the script a call is made by, in the audit log; empty
	// for a direct invoke.
	runID string
	// byArgs keeps the endpoint's cooldown per endpoint and arguments.
	byArgs bool
	// waitUnderCaller bounds the wait for admission by the caller's
	// deadline (a script's) and the queue timeouts, not the call's.
	waitUnderCaller bool
	// suggest adds, to a refusal, endpoints callable meanwhile.
	suggest bool
}

// invokeCall is the one governed call behind the invoke tool and
// run_script's api.invoke: credentials, budgets and the wait queue, learned
// limits, retries, the result cache, the stored answer, the audit line and
// the metrics. On failure it returns the error object the model reads; the
// result then still holds the call's trace.
func (s *Server) invokeCall(ctx context.Context, st *state, e *spec.Endpoint, in invoke.Args, pages int, opt callOptions) (*invoke.CallResult, *CallRateLimit, *ErrorObject) {
	c := s.call // a copy: the flags below are this call's
	c.CooldownByArgs, c.WaitUnderCaller = opt.byArgs, opt.waitUnderCaller
	c.Background = opt.runID != "" // a script's call waits behind its principal's direct ones
	r, err := c.Call(ctx, principalOf(ctx), e, in, pages, opt.progress)
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
		if opt.suggest && obj.Retryable && (obj.Code == CodeRateLimit || obj.Code == CodeUpstreamRateLimit || obj.Code == CodeQueueFull || obj.Code == CodeQueueTimeout) {
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
			at.WaitSeconds = retrySeconds(a.Wait)
		}
		if a.Err != nil {
			at.Error = codeOf(a.Err)
		}
		snap.Attempts = append(snap.Attempts, at)
	}
	if out.Trace.NextCall > 0 {
		snap.NextCallInSeconds = retrySeconds(out.Trace.NextCall)
	}
	return snap
}

// newCaller builds, once, the call behind invoke and run_script from the
// options: the client, limiter, upstream keys, retries, answer store and
// cache TTL, with the server's own result cache, validators, observer and
// clock. Each call takes a copy and sets what differs for it.
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
