package invoke

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/paging"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
)

// Governed runs calls under rate governance: prepare (free), admit
// (charged), send, learn from the answer, settle, and retry idempotent
// calls the upstream refused when the wait fits the deadline. A Governed
// is safe for concurrent use once its fields are set.
type Governed struct {
	// Client prepares and sends calls. Required.
	Client *Client
	// Limiter admits calls. If nil, calls are not limited.
	Limiter *ratelimit.Limiter
	// Upstream maps an endpoint to its upstream key. If nil, the limiter's
	// registered upstream of the endpoint is used.
	Upstream func(*spec.Endpoint) string
	// MaxRetries bounds retries of an idempotent call the upstream refused
	// for its rate limit or with 502/503/504. Zero: no retries.
	MaxRetries int
	// MaxRetryWait caps the wait before one retry. Zero: no cap beyond the
	// call's deadline.
	MaxRetryWait time.Duration
	// Observer hears of every attempt and refusal, for statistics. If nil,
	// nothing is reported.
	Observer Observer
	// Now is the clock for the next-call estimate. If nil, time.Now.
	Now func() time.Time
}

// CallOptions are one call's own choices: what differs between calls made
// through one long-lived Governed (or Caller). The zero value is a direct
// invoke of one page.
type CallOptions struct {
	// Pages bounds the pages a GET call follows (DoPages, Caller.Call);
	// zero or one: the first page only.
	Pages int
	// CooldownByArgs keeps the endpoint's cooldown per endpoint and
	// arguments (run_script's calls): a loop over distinct arguments is paced
	// by the budgets, an identical repeat within the interval is refused.
	// False: per endpoint, as for a direct invoke.
	CooldownByArgs bool
	// Background marks the calls of a program (run_script's): in an upstream's
	// wait queue they wait behind the direct calls of the same principal.
	Background bool
	// WaitUnderCaller bounds a call's wait for admission by the budgets'
	// queue timeouts and the caller's ctx alone, and starts the endpoint's
	// timeout when the call is admitted, to bound the HTTP exchange and its
	// retries (run_script's calls: the wait counts against the script's
	// deadline, not the call's). False: the endpoint's timeout covers the
	// wait as well, as for a direct invoke, whose own deadline it is.
	WaitUnderCaller bool
	// Progress hears of the call's waits in a queue. If nil, nothing is
	// reported.
	Progress func(ratelimit.Progress)
}

func (o CallOptions) pages() int { return max(o.Pages, 1) }

// Observer receives what happened to each attempt of a governed call.
// Its methods are called from the calling goroutine, with the call's
// context (which says whose call it is), and must not block.
type Observer interface {
	// Attempted reports one attempt that went on the wire; res is nil when
	// no answer arrived.
	Attempted(ctx context.Context, e *spec.Endpoint, upstream string, queueWait, latency time.Duration, tokens int64, res *Result)
	// Refused reports a call refused by the limiter or by the upstream's
	// rate limit.
	Refused(ctx context.Context, e *spec.Endpoint, err error)
}

// Trace is the governance record of one call: what it waited and each
// attempt on the wire.
type Trace struct {
	// QueueWait is the time spent waiting for admission, all attempts.
	QueueWait time.Duration
	Attempts  []Attempt
	// Remaining is what the upstream said is left, when it said.
	Remaining *int64
	// NextCall is how long until the endpoint can be called again; zero
	// when it can be called now.
	NextCall time.Duration
}

// Attempt is one try of a call on the wire.
type Attempt struct {
	// Status is the HTTP status; zero when no answer arrived.
	Status int
	// Wait is the time waited before the next attempt, when retried.
	Wait time.Duration
	// Source names the header family the limiter learned from.
	Source string
	// Err is the attempt's error, nil when it succeeded.
	Err error
}

// Outcome is a governed call that reached the wire.
type Outcome struct {
	// Call is the prepared request of the last attempt.
	Call *Call
	// Result is the upstream's answer; nil when the call failed without one.
	Result *Result
	Trace  Trace
}

func (g *Governed) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *Governed) upstreamOf(e *spec.Endpoint) string {
	if g.Upstream != nil {
		return g.Upstream(e)
	}
	return ""
}

// Do runs one governed call. Arguments are validated before the limiter is
// asked, so an invalid call costs nothing. The call's deadline (the
// endpoint's timeout) covers preparing the request as well as sending it,
// and the wait for admission unless opt.WaitUnderCaller. The returned
// Outcome is never nil; on error it holds the trace of the attempts made.
func (g *Governed) Do(ctx context.Context, e *spec.Endpoint, in Args, opt CallOptions) (*Outcome, error) {
	out := &Outcome{}
	timeout := g.Client.timeoutFor(e)
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	prepared, err := g.Client.Prepare(callCtx, e, in)
	if err != nil {
		return out, err
	}
	setConditional(ctx, prepared)
	out.Call = prepared
	a := attempt{e: e, call: prepared, timeout: timeout, keyed: hasIdempotencyKey(e, in), opt: opt, out: out}
	if opt.CooldownByArgs {
		a.cooldownKey = prepared.ArgsKey()
	}
	return out, g.send(waitContext(ctx, callCtx, opt), a)
}

// waitContext is the context a call waits for admission under: the
// caller's with WaitUnderCaller, else the call's own.
func waitContext(caller, call context.Context, opt CallOptions) context.Context {
	if opt.WaitUnderCaller {
		return caller
	}
	return call
}

// attempt is one prepared request on its way through send: what admits,
// sends and retries it, and where its trace goes.
type attempt struct {
	e    *spec.Endpoint
	call *Call
	// timeout is the endpoint's: with WaitUnderCaller it starts when the
	// call is admitted.
	timeout time.Duration
	// keyed marks a call that sets its idempotency key: retried as an
	// idempotent one is.
	keyed bool
	// again marks a follow-up request of a call already admitted once (a
	// next page): the endpoint's cooldown is not charged again.
	again bool
	// cooldownKey, when not empty, keys the cooldown on the call's
	// arguments (see ratelimit.Request.CooldownKey).
	cooldownKey string
	opt         CallOptions
	// out receives the trace and the answer.
	out *Outcome
}

// send admits and sends a prepared call, retrying as allowed. With
// WaitUnderCaller, ctx bounds the first wait for admission and the call's
// timeout starts once it is admitted; else ctx has it already. The
// principal whose turn it is in the queue is ctx's.
func (g *Governed) send(ctx context.Context, at attempt) error {
	e, prepared, opt := at.e, at.call, at.opt
	deadline, _ := ctx.Deadline()
	admitted := !opt.WaitUnderCaller
	up := g.upstreamOf(e)
	// Tokens are estimated as the request plus an equal response, then
	// settled on the real size.
	estimate := 2 * ratelimit.EstimateTokens(prepared.RequestSize())
	retriable := e.Idempotent() || at.keyed
	// The principal's key, not its subject: ada of acme and ada of another
	// org are two principals, each with its own share and turns.
	var who, subject string
	if p, ok := PrincipalFrom(ctx); ok {
		who, subject = p.Key(), p.Subject
	}
	tr := &at.out.Trace
	var lastErr error
	for try := 0; ; try++ {
		req := ratelimit.Request{Endpoint: e.ID, Upstream: up, Tokens: estimate, Progress: opt.Progress, Retry: at.again || try > 0,
			CooldownKey: at.cooldownKey, Principal: who, Subject: subject, Background: opt.Background}
		var ticket ratelimit.Ticket
		if g.Limiter != nil {
			var err error
			ticket, err = g.Limiter.Acquire(ctx, req)
			if err != nil {
				if try > 0 && lastErr != nil {
					var le *ratelimit.LimitError
					if errors.As(err, &le) && le.Scope == ratelimit.ScopeUpstream {
						return lastErr
					}
				}
				var qe *ratelimit.QueueError
				if errors.As(err, &qe) {
					tr.QueueWait += qe.Waited // a call refused after it waited still waited
				}
				g.refused(ctx, e, err)
				return err
			}
			tr.QueueWait += ticket.QueueWait
		}
		if !admitted {
			admitted = true
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, at.timeout)
			defer cancel()
			deadline, _ = ctx.Deadline()
		}
		start := time.Now()
		res, err := prepared.Do(ctx)
		latency := time.Since(start)
		if g.Observer != nil {
			g.Observer.Attempted(ctx, e, up, ticket.QueueWait, latency, estimate, res)
		}
		a := Attempt{Err: err}
		if res != nil {
			a.Status = res.StatusCode
			at.out.Result = res
			if g.Limiter != nil {
				sig := ticket.Observe(res.StatusCode, res.RawHeaders, prefix(res.RawBody, 1024))
				a.Source = sig.Source
				ticket.Settle(ratelimit.EstimateTokens(prepared.RequestSize() + len(res.RawBody)))
				if sig.Requests.HasRemaining {
					r := sig.Requests.Remaining
					tr.Remaining = &r
				}
			}
		}
		var te *TimeoutError
		if res == nil && errors.As(err, &te) {
			ticket.ObserveTimeout() // an adaptive concurrency limit halves
		}
		ticket.Release()
		if err != nil {
			var rl *UpstreamRateLimitError
			if errors.As(err, &rl) {
				g.refused(ctx, e, err)
			}
		}
		tr.Attempts = append(tr.Attempts, a)
		if err == nil {
			if g.Limiter != nil {
				if w := g.Limiter.ReadyAt(e.ID, g.now()); w > 0 {
					tr.NextCall = w
				}
			}
			return nil
		}
		lastErr = err
		wait, ok := g.retryWait(err, try, retriable, deadline)
		if !ok {
			return err
		}
		tr.Attempts[len(tr.Attempts)-1].Wait = wait
		if g.Limiter == nil {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return err
			}
		}
		// With a limiter, the next Acquire holds the call until the
		// upstream's block ends, as every other caller is held.
	}
}

func (g *Governed) refused(ctx context.Context, e *spec.Endpoint, err error) {
	if g.Observer != nil {
		g.Observer.Refused(ctx, e, err)
	}
}

// retryWait decides whether a failed attempt is retried and after how long.
func (g *Governed) retryWait(err error, attempt int, idempotent bool, deadline time.Time) (time.Duration, bool) {
	if !idempotent || attempt >= g.MaxRetries {
		return 0, false
	}
	var wait time.Duration
	var rl *UpstreamRateLimitError
	var he *HTTPError
	switch {
	case errors.As(err, &rl):
		if rl.Unreadable {
			// A wait is asked for, however absurdly written: not retried.
			return 0, false
		}
		wait = rl.RetryAfter
		if wait <= 0 {
			wait = time.Second
		}
	case errors.As(err, &he) && (he.StatusCode == 502 || he.StatusCode == 503 || he.StatusCode == 504):
		wait = time.Duration(250<<attempt) * time.Millisecond
	default:
		return 0, false
	}
	if g.MaxRetryWait > 0 && wait > g.MaxRetryWait {
		return 0, false
	}
	if !deadline.IsZero() && time.Now().Add(wait).After(deadline) {
		return 0, false
	}
	return wait, true
}

// hasIdempotencyKey reports whether the operation declares an idempotency
// key header (Stripe's Idempotency-Key, or similar) and the call sets it:
// then the upstream dedupes a resent request, and retrying it is safe.
func hasIdempotencyKey(e *spec.Endpoint, in Args) bool {
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

// MaxPages bounds the pages one call may follow.
const MaxPages = 5

// Paged is a governed call that may have followed next pages.
type Paged struct {
	*Outcome
	// Results holds each page's answer, in order; the last is
	// Outcome.Result.
	Results []*Result
	// NextPage holds the parameters for the page after the last one read,
	// nil when the upstream has no more (or they cannot be expressed).
	NextPage map[string]any
	// PageErr is why following pages stopped early, after the first page
	// succeeded; the pages read are kept.
	PageErr error
	// Full is true when following pages stopped because the pages read
	// reached the endpoint's response size cap (max_response_bytes): one
	// stored answer holds at most about twice that.
	Full bool
}

// DoPages runs a governed call and, for a GET, follows up to opt.Pages-1
// next pages the upstream offers. Each page is admitted by the upstream budgets
// like any call (queueing, learning, retries); the endpoint's cooldown is
// charged once, by the first. The error is the first page's; a later
// page's failure ends the walk and is reported in PageErr.
func (g *Governed) DoPages(ctx context.Context, e *spec.Endpoint, in Args, opt CallOptions) (*Paged, error) {
	out, err := g.Do(ctx, e, in, opt)
	p := &Paged{Outcome: out}
	if err != nil {
		return p, err
	}
	p.Results = []*Result{out.Result}
	p.NextPage = g.nextPage(e, out.Call, in, out.Result)
	seen := map[string]bool{paramsKey(in.Parameters): true}
	held, limit := int64(len(out.Result.RawBody)), g.Client.maxBytesFor(e)
	for len(p.Results) < opt.pages() && p.NextPage != nil && e.Method == "GET" {
		if held >= limit {
			p.Full = true
			break
		}
		key := paramsKey(p.NextPage)
		if seen[key] {
			p.NextPage = nil
			break
		}
		seen[key] = true
		next := in
		next.Parameters = p.NextPage
		timeout := g.Client.timeoutFor(e)
		pctx, cancel := context.WithTimeout(ctx, timeout)
		call, err := g.Client.Prepare(pctx, e, next)
		if err == nil {
			page := &Outcome{}
			err = g.send(waitContext(ctx, pctx, opt), attempt{e: e, call: call, timeout: timeout, again: true, opt: opt, out: page})
			out.Trace.QueueWait += page.Trace.QueueWait
			out.Trace.Attempts = append(out.Trace.Attempts, page.Trace.Attempts...)
			if page.Trace.Remaining != nil {
				out.Trace.Remaining = page.Trace.Remaining
			}
			if err == nil {
				out.Call, out.Result = call, page.Result
				p.Results = append(p.Results, page.Result)
				p.NextPage = g.nextPage(e, call, next, page.Result)
				held += int64(len(page.Result.RawBody))
			}
		}
		cancel()
		if err != nil {
			// The next page stays offered: the model can ask for it later.
			p.PageErr = err
			break
		}
		if page := p.Results[len(p.Results)-1]; page.Truncated {
			break
		}
	}
	return p, nil
}

// nextPage reads where the next page is from one answer.
func (g *Governed) nextPage(e *spec.Endpoint, call *Call, in Args, res *Result) map[string]any {
	if res == nil || res.StatusCode < 200 || res.StatusCode > 299 || res.Truncated || call == nil {
		return nil
	}
	var body any
	if answer.IsJSONType(answer.MediaBase(res.RawHeaders.Get("Content-Type"))) || len(res.RawBody) > 0 && (res.RawBody[0] == '{' || res.RawBody[0] == '[') {
		if v, err := answer.DecodeJSON(res.RawBody); err == nil {
			body, res.decoded = v, v
		}
	}
	return paging.Next(paging.Request{Endpoint: e, URL: call.URL(), Params: in.Parameters}, res.RawHeaders, body)
}

// declaredArgsKey is Call.ArgsKey: values are the declared parameters' by
// "in\x00name"; a value is keyed by its text (5 and "5" are sent alike) and
// a nil one as left out.
func declaredArgsKey(values map[string]any, body any, contentType string) string {
	params := make(map[string]string, len(values))
	for k, v := range values {
		if v == nil {
			continue
		}
		if s, ok := v.(string); ok {
			params[k] = s
			continue
		}
		b, _ := json.Marshal(v)
		params[k] = string(b)
	}
	b, _ := json.Marshal(struct {
		P map[string]string `json:"p,omitempty"`
		B any               `json:"b,omitempty"`
		C string            `json:"c,omitempty"`
	}{params, body, contentType})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// paramsKey identifies a set of parameters; encoding/json sorts map keys.
func paramsKey(p map[string]any) string {
	b, _ := json.Marshal(p)
	return string(b)
}

// Answer is the call's answer as the store keeps it: one page's body as
// read (redacted), or, when several pages were read, their main arrays
// concatenated into the last page's body.
func (p *Paged) Answer(e *spec.Endpoint, now time.Time) *answer.Answer {
	last := p.Result
	a := &answer.Answer{
		Endpoint: e.ID, StatusCode: last.StatusCode, ContentType: last.RawHeaders.Get("Content-Type"),
		Headers: last.Headers, Body: last.RawBody, Truncated: last.Truncated, NextPage: p.NextPage, Created: now,
		Decoded: last.decoded,
	}
	if len(p.Results) > 1 {
		a.Decoded = nil
		if body, joined, ok := concatPages(p.Results); ok {
			a.Body, a.Pages, a.Decoded = body, len(p.Results), joined
		} else {
			// Pages whose shapes differ are kept side by side.
			var parts []json.RawMessage
			for _, r := range p.Results {
				if json.Valid(r.RawBody) {
					parts = append(parts, r.RawBody)
				}
			}
			if b, err := json.Marshal(parts); err == nil {
				a.Body, a.Pages = b, len(p.Results)
			}
		}
	}
	return a
}

// concatPages joins the pages' main arrays into the last page's body, and
// returns it encoded and decoded.
func concatPages(pages []*Result) ([]byte, any, bool) {
	var all []any
	var last any
	path := ""
	for i, r := range pages {
		v, err := answer.DecodeJSON(r.RawBody)
		if err != nil {
			return nil, nil, false
		}
		p, items, ok := answer.MainArray(v)
		if !ok || i > 0 && p != path {
			return nil, nil, false
		}
		path, last = p, v
		all = append(all, items...)
	}
	if all == nil {
		all = []any{}
	}
	joined, ok := setAtPath(last, path, all)
	if !ok {
		return nil, nil, false
	}
	b, err := answer.EncodeJSON(joined)
	if err != nil {
		return nil, nil, false
	}
	return b, joined, true
}

// setAtPath replaces the value at a simple jq path (".", ".a", ".a.b").
func setAtPath(v any, path string, val any) (any, bool) {
	if path == "." || path == "" {
		return val, true
	}
	if !strings.HasPrefix(path, ".") {
		return nil, false
	}
	keys := strings.Split(path[1:], ".")
	cur := v
	for i, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok || k == "" {
			return nil, false
		}
		if i == len(keys)-1 {
			m[k] = val
			return v, true
		}
		cur = m[k]
	}
	return nil, false
}
