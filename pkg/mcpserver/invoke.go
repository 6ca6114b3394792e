package mcpserver

import (
	"context"
	"errors"
	"strconv"
	"strings"
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
	res, err := s.call(ctx, e, in, progressFunc(ctx, req))
	rec := auditRecord{Endpoint: e.ID, Outcome: "ok", LatencyMs: s.now().Sub(started).Milliseconds()}
	if res != nil {
		rec.Status, rec.ResponseBytes = res.StatusCode, res.Size
		if res.RateLimit != nil {
			rec.QueueWaitMs, rec.Attempts = res.RateLimit.QueueWaitMs, len(res.RateLimit.Attempts)
		}
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

// call runs one governed call: validate (free), admit (charged), send,
// learn from the answer, and retry idempotent calls the upstream refused
// when the wait fits the deadline.
func (s *Server) call(ctx context.Context, e *spec.Endpoint, in invoke.Args, progress func(ratelimit.Progress)) (*InvokeResult, error) {
	prepared, err := s.opts.Client.Prepare(ctx, e, in)
	if err != nil {
		return nil, err
	}
	timeout := prepared.Timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()

	snap := &CallRateLimit{}
	// Tokens are estimated as the request plus an equal response, then
	// settled on the real size.
	estimate := 2 * ratelimit.EstimateTokens(prepared.RequestSize())
	retriable := e.Idempotent() || hasIdempotencyKey(e, in)
	var lastErr error
	for attempt := 0; ; attempt++ {
		tr := ratelimit.Request{Endpoint: e.ID, Upstream: s.upstreamOf(e), Tokens: estimate, Progress: progress, Retry: attempt > 0}
		var ticket ratelimit.Ticket
		if s.opts.Limiter != nil {
			ticket, err = s.opts.Limiter.Acquire(ctx, tr)
			if err != nil {
				if attempt > 0 && lastErr != nil {
					var le *ratelimit.LimitError
					if errors.As(err, &le) && le.Scope == ratelimit.ScopeUpstream {
						return nil, lastErr
					}
				}
				s.stats.refused(e.ID, err)
				return nil, err
			}
			snap.QueueWaitMs += ticket.QueueWait.Milliseconds()
		}
		start := time.Now()
		res, err := prepared.Do(ctx)
		latency := time.Since(start)
		s.stats.observe(e, s.upstreamOf(e), latency, ticket.QueueWait, estimate)
		s.metrics.observeAttempt(s.upstreamOf(e), ticket.QueueWait, latency, res)
		a := Attempt{}
		if res != nil {
			a.Status = res.StatusCode
			if s.opts.Limiter != nil {
				sig := ticket.Observe(res.StatusCode, res.RawHeaders, prefix(res.RawBody, 1024))
				a.Source = sig.Source
				ticket.Settle(ratelimit.EstimateTokens(prepared.RequestSize() + len(res.RawBody)))
				if sig.Requests.HasRemaining {
					r := sig.Requests.Remaining
					snap.Remaining = &r
				}
			}
		}
		ticket.Release()
		if err != nil {
			a.Error = mapError(err, s.now()).Code
			var rl *invoke.UpstreamRateLimitError
			if errors.As(err, &rl) {
				s.stats.refused(e.ID, err)
			}
		}
		snap.Attempts = append(snap.Attempts, a)
		if err == nil {
			out := &InvokeResult{
				StatusCode: res.StatusCode, Headers: res.Headers, Body: res.Body,
				BodyBase64: res.BodyBase64, Note: res.Note,
				Truncated: res.Truncated, TruncatedReason: res.TruncatedReason, Size: res.Size,
				RateLimit: snap,
			}
			if s.opts.Limiter != nil {
				if w := s.opts.Limiter.ReadyAt(e.ID, s.now()); w > 0 {
					snap.NextCallInSeconds = retrySeconds(w)
				}
			}
			return out, nil
		}
		lastErr = err
		wait, ok := s.retryWait(err, attempt, retriable, deadline)
		if !ok {
			return nil, err
		}
		snap.Attempts[len(snap.Attempts)-1].WaitSeconds = retrySeconds(wait)
		if s.opts.Limiter == nil {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, err
			}
		}
		// With a limiter, the next Acquire holds the call until the
		// upstream's block ends, as every other caller is held.
	}
}

// retryWait decides whether a failed attempt is retried and after how long.
func (s *Server) retryWait(err error, attempt int, idempotent bool, deadline time.Time) (time.Duration, bool) {
	if !idempotent || attempt >= s.opts.MaxRetries {
		return 0, false
	}
	var wait time.Duration
	var rl *invoke.UpstreamRateLimitError
	var he *invoke.HTTPError
	switch {
	case errors.As(err, &rl):
		wait = rl.RetryAfter
		if wait <= 0 {
			wait = time.Second
		}
	case errors.As(err, &he) && (he.StatusCode == 502 || he.StatusCode == 503 || he.StatusCode == 504):
		wait = time.Duration(250<<attempt) * time.Millisecond
	default:
		return 0, false
	}
	if s.opts.MaxRetryWait > 0 && wait > s.opts.MaxRetryWait {
		return 0, false
	}
	if !deadline.IsZero() && time.Now().Add(wait).After(deadline) {
		return 0, false
	}
	return wait, true
}

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

// hasIdempotencyKey reports whether the operation declares an idempotency
// key header (Stripe's Idempotency-Key, or similar) and the call sets it:
// then the upstream dedupes a resent request, and retrying it is safe.
func hasIdempotencyKey(e *spec.Endpoint, in invoke.Args) bool {
	for _, p := range e.Params {
		if p.In != "header" || !isIdempotencyHeader(p.Name) {
			continue
		}
		if v, ok := in.Parameters[p.Name]; ok && v != nil && v != "" {
			return true
		}
	}
	for name, v := range in.Headers {
		if isIdempotencyHeader(name) && v != "" {
			for _, p := range e.Params {
				if p.In == "header" && strings.EqualFold(p.Name, name) {
					return true
				}
			}
		}
	}
	return false
}

func isIdempotencyHeader(name string) bool {
	n := strings.ToLower(name)
	return n == "idempotency-key" || n == "x-idempotency-key"
}

func prefix(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
