package invoke

import (
	"context"
	"errors"
	"strings"
	"time"

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

// Observer receives what happened to each attempt of a governed call.
// Its methods are called from the calling goroutine and must not block.
type Observer interface {
	// Attempted reports one attempt that went on the wire; res is nil when
	// no answer arrived.
	Attempted(e *spec.Endpoint, upstream string, queueWait, latency time.Duration, tokens int64, res *Result)
	// Refused reports a call refused by the limiter or by the upstream's
	// rate limit.
	Refused(e *spec.Endpoint, err error)
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
// endpoint's timeout) covers preparing the request as well as sending it.
// The returned Outcome is never nil; on error it holds the trace of the
// attempts made.
func (g *Governed) Do(ctx context.Context, e *spec.Endpoint, in Args, progress func(ratelimit.Progress)) (*Outcome, error) {
	out := &Outcome{}
	ctx, cancel := context.WithTimeout(ctx, g.Client.timeoutFor(e))
	defer cancel()
	prepared, err := g.Client.Prepare(ctx, e, in)
	if err != nil {
		return out, err
	}
	out.Call = prepared
	err = g.send(ctx, e, prepared, hasIdempotencyKey(e, in), false, progress, out)
	return out, err
}

// send admits and sends a prepared call, retrying as allowed. again marks
// a follow-up request of a call already admitted once (a next page): the
// endpoint's cooldown is not charged again.
func (g *Governed) send(ctx context.Context, e *spec.Endpoint, prepared *Call, keyed, again bool, progress func(ratelimit.Progress), out *Outcome) error {
	deadline, _ := ctx.Deadline()
	up := g.upstreamOf(e)
	// Tokens are estimated as the request plus an equal response, then
	// settled on the real size.
	estimate := 2 * ratelimit.EstimateTokens(prepared.RequestSize())
	retriable := e.Idempotent() || keyed
	tr := &out.Trace
	var lastErr error
	for attempt := 0; ; attempt++ {
		req := ratelimit.Request{Endpoint: e.ID, Upstream: up, Tokens: estimate, Progress: progress, Retry: again || attempt > 0}
		var ticket ratelimit.Ticket
		if g.Limiter != nil {
			var err error
			ticket, err = g.Limiter.Acquire(ctx, req)
			if err != nil {
				if attempt > 0 && lastErr != nil {
					var le *ratelimit.LimitError
					if errors.As(err, &le) && le.Scope == ratelimit.ScopeUpstream {
						return lastErr
					}
				}
				g.refused(e, err)
				return err
			}
			tr.QueueWait += ticket.QueueWait
		}
		start := time.Now()
		res, err := prepared.Do(ctx)
		latency := time.Since(start)
		if g.Observer != nil {
			g.Observer.Attempted(e, up, ticket.QueueWait, latency, estimate, res)
		}
		a := Attempt{Err: err}
		if res != nil {
			a.Status = res.StatusCode
			out.Result = res
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
		ticket.Release()
		if err != nil {
			var rl *UpstreamRateLimitError
			if errors.As(err, &rl) {
				g.refused(e, err)
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
		wait, ok := g.retryWait(err, attempt, retriable, deadline)
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

func (g *Governed) refused(e *spec.Endpoint, err error) {
	if g.Observer != nil {
		g.Observer.Refused(e, err)
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
