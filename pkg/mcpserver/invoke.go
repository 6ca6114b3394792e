package mcpserver

import (
	"context"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
)

// InvokeResult is the invoke tool's answer.
type InvokeResult struct {
	StatusCode      int               `json:"statusCode"`
	Headers         map[string]string `json:"headers,omitempty"`
	Body            any               `json:"body,omitempty"`
	BodyBase64      string            `json:"bodyBase64,omitempty"`
	Note            string            `json:"note,omitempty"`
	Truncated       bool              `json:"truncated,omitempty"`
	TruncatedReason string            `json:"truncatedReason,omitempty"`
	Size            int64             `json:"size,omitempty"`
	RateLimit       *CallRateLimit    `json:"rateLimit,omitempty"`
	// Cached is true when the answer is the last successful result of an
	// identical call, served within cache_ttl at no rate-limit cost.
	Cached     bool    `json:"cached,omitempty"`
	AgeSeconds float64 `json:"ageSeconds,omitempty"`
}

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

func (s *Server) handleInvoke(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, bad := stringArg(req, "endpointId")
	if bad != nil {
		return bad, nil
	}
	args := req.GetArguments()
	var in invoke.Args
	if v, ok := args["parameters"]; ok && v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return argError("parameters must be an object of values by parameter name"), nil
		}
		in.Parameters = m
	}
	if v, ok := args["headers"]; ok && v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return argError("headers must be an object of header values by name"), nil
		}
		in.Headers = map[string]string{}
		for k, hv := range m {
			str, ok := hv.(string)
			if !ok {
				return argError("header %q must be a string", k), nil
			}
			in.Headers[k] = str
		}
	}
	if v, ok := args["requestBody"]; ok {
		in.RequestBody = v
	}
	if v, ok := args["contentType"]; ok && v != nil {
		str, ok := v.(string)
		if !ok {
			return argError("contentType must be a string"), nil
		}
		in.ContentType = str
	}
	for k := range args {
		switch k {
		case "endpointId", "parameters", "requestBody", "headers", "contentType":
		default:
			return argError("unknown argument %q: invoke takes endpointId, parameters, requestBody, headers, contentType", k), nil
		}
	}

	st, err := s.wait(ctx)
	if err != nil {
		return s.notReady(err), nil
	}
	e, ok := st.cat.Lookup(id)
	if !ok {
		return s.notFound(st, id), nil
	}
	if s.opts.Client == nil {
		return errorResult(&ErrorObject{Code: CodeUnreachable, Message: "calls are disabled in this specgate"}), nil
	}
	ttl := time.Duration(0)
	if s.opts.CacheTTL != nil && e.Idempotent() {
		ttl = s.opts.CacheTTL(e)
	}
	var key string
	if ttl > 0 {
		key = cacheKey(e.ID, in)
		if hit, age, ok := s.cache.get(key, ttl, s.now()); ok {
			out := *hit
			out.Cached = true
			out.AgeSeconds = age.Seconds()
			s.audit(ctx, auditRecord{Endpoint: e.ID, Outcome: "ok", Status: out.StatusCode, Cached: true})
			return jsonResult(&out), nil
		}
	}
	started := s.now()
	res, out, err := s.call(ctx, e, in, progressFunc(ctx, req))
	rec := auditRecord{Endpoint: e.ID, Outcome: "ok", LatencyMs: s.now().Sub(started).Milliseconds(),
		QueueWaitMs: out.Trace.QueueWait.Milliseconds(), Attempts: len(out.Trace.Attempts)}
	if res != nil {
		rec.Status, rec.ResponseBytes = res.StatusCode, res.Size
	}
	if err != nil {
		obj := mapError(err, s.now())
		rec.Outcome, rec.Scope = obj.Code, obj.Scope
		if obj.Limit != nil {
			rec.Limit = obj.Limit.Kind
		}
		s.audit(ctx, rec)
		if obj.Retryable && (obj.Code == CodeRateLimit || obj.Code == CodeUpstreamRateLimit || obj.Code == CodeQueueFull || obj.Code == CodeQueueTimeout) {
			whole := obj.Limit == nil || obj.Limit.Kind != string(ratelimit.KindCooldown)
			obj.Suggestions = s.suggestions(st, e, whole)
			if len(obj.Suggestions) > 0 {
				obj.Hint += " Meanwhile you can call: " + suggestionIDs(obj.Suggestions)
			}
		}
		return errorResult(obj), nil
	}
	s.audit(ctx, rec)
	if ttl > 0 && res.StatusCode >= 200 && res.StatusCode < 300 && !res.Truncated {
		s.cache.put(key, res, s.now())
	}
	return jsonResult(res), nil
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

// call runs one governed call and turns its outcome into the invoke answer.
func (s *Server) call(ctx context.Context, e *spec.Endpoint, in invoke.Args, progress func(ratelimit.Progress)) (*InvokeResult, *invoke.Outcome, error) {
	out, err := s.governed().Do(ctx, e, in, progress)
	snap := &CallRateLimit{QueueWaitMs: out.Trace.QueueWait.Milliseconds(), Remaining: out.Trace.Remaining}
	for _, a := range out.Trace.Attempts {
		at := Attempt{Status: a.Status, Source: a.Source}
		if a.Wait > 0 {
			at.WaitSeconds = retrySeconds(a.Wait)
		}
		if a.Err != nil {
			at.Error = mapError(a.Err, s.now()).Code
		}
		snap.Attempts = append(snap.Attempts, at)
	}
	if err != nil {
		return nil, out, err
	}
	if out.Trace.NextCall > 0 {
		snap.NextCallInSeconds = retrySeconds(out.Trace.NextCall)
	}
	res := out.Result
	return &InvokeResult{
		StatusCode: res.StatusCode, Headers: res.Headers, Body: res.Body,
		BodyBase64: res.BodyBase64, Note: res.Note,
		Truncated: res.Truncated, TruncatedReason: res.TruncatedReason, Size: res.Size,
		RateLimit: snap,
	}, out, nil
}

// governed returns the governed caller built from the options.
func (s *Server) governed() *invoke.Governed {
	return &invoke.Governed{
		Client: s.opts.Client, Limiter: s.opts.Limiter, Upstream: s.upstreamOf,
		MaxRetries: s.opts.MaxRetries, MaxRetryWait: s.opts.MaxRetryWait,
		Observer: (*observer)(s), Now: s.now,
	}
}

// observer feeds the statistics and metrics from governed calls.
type observer Server

func (o *observer) Attempted(e *spec.Endpoint, up string, queueWait, latency time.Duration, tokens int64, res *invoke.Result) {
	o.stats.observe(e, up, latency, queueWait, tokens)
	o.metrics.observeAttempt(up, queueWait, latency, res)
}

func (o *observer) Refused(e *spec.Endpoint, err error) { o.stats.refused(e.ID, err) }

// progressFunc sends MCP progress notifications while a call waits in a
// queue, when the client asked for them with a progress token.
func progressFunc(ctx context.Context, req mcp.CallToolRequest) func(ratelimit.Progress) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil
	}
	token := req.Params.Meta.ProgressToken
	srv := serverFromContext(ctx)
	if srv == nil {
		return nil
	}
	return func(p ratelimit.Progress) {
		total := p.Waited + p.Estimate
		msg := "waiting for the rate limit"
		if p.Position > 0 {
			msg = "waiting in the queue at position " + strconv.Itoa(p.Position)
		}
		params := map[string]any{
			"progressToken": token,
			"progress":      p.Waited.Seconds(),
			"message":       msg,
		}
		if p.Estimate > 0 {
			params["total"] = total.Seconds()
		}
		_ = srv.SendNotificationToClient(ctx, "notifications/progress", params)
	}
}
