package ratelimit

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Scope says who refused a call: specgate's own limits or what the upstream said.
type Scope string

const (
	// ScopeProxy is a refusal by a limit configured in specgate (cooldown or budget).
	// Raising specgate's limits helps only with these.
	ScopeProxy Scope = "proxy"
	// ScopeUpstream is a refusal because of what the upstream said: a 429, a rate-limit 403,
	// or an advertised remaining of zero.
	ScopeUpstream Scope = "upstream"
)

// Kind names the limit that bound a refused call.
type Kind string

const (
	KindCooldown    Kind = "cooldown"    // the per-endpoint cooldown
	KindRequests    Kind = "requests"    // requests per rolling window
	KindTokens      Kind = "tokens"      // tokens per rolling window
	KindInterval    Kind = "interval"    // minimum interval between calls to an upstream
	KindConcurrency Kind = "concurrency" // calls in flight to an upstream
	KindLearned     Kind = "learned"     // learned from the upstream's answers
	// KindStore is a call held because the shared Store answered a probe but not the
	// call within its timeout: it is slow, not unreachable, so the call is neither
	// admitted on the fallback share nor refused by a limit. RetryAfter is an estimate.
	KindStore Kind = "store"
)

// LimitError is a refused admission. RetryAfter is never zero, and for every kind but
// KindConcurrency it is exact: a call made exactly RetryAfter later passes the limit that
// refused this one (unless other calls take the room first). For KindConcurrency, and for
// a KindLearned hold waiting on the answer to the probe sent after a block, no exact time
// is known and RetryAfter is an estimate: the mean duration of recent calls to the
// upstream (one second before any call has finished), and Estimated is true.
type LimitError struct {
	Scope    Scope
	Kind     Kind
	Key      string        // the endpoint id for KindCooldown, else the upstream key
	Interval time.Duration // the cooldown or minimum interval, for KindCooldown and KindInterval
	Limit    int64         // requests or tokens per Window, or calls in flight
	Window   time.Duration // the window of Limit, when it has one
	// Source is the response header that set a learned limit, such as "retry-after" or
	// "x-ratelimit-remaining" (lower case; never its value).
	Source     string
	RetryAfter time.Duration
	RetryAt    time.Time // the decision's now plus RetryAfter
	Estimated  bool      // RetryAfter is an estimate (KindConcurrency, a probe's answer)
}

// RetryAfterSeconds is RetryAfter as WaitSeconds: waiting that long never falls short.
func (e *LimitError) RetryAfterSeconds() float64 { return WaitSeconds(e.RetryAfter) }

// Retryable reports that the same call passes once RetryAfter has gone by.
func (e *LimitError) Retryable() bool { return true }

// RefusedBy is the limit's Scope: who refused the call.
func (e *LimitError) RefusedBy() Scope { return e.Scope }

// Hint says what to do next: wait, and for an upstream's limit, that
// raising specgate's own will not help.
func (e *LimitError) Hint() string {
	if e.Scope == ScopeUpstream {
		return "The upstream API set this limit; raising specgate's limits will not help. Wait, then call again."
	}
	if e.Kind == KindStore {
		return "Nothing was sent: the shared limits could not be checked in time. Wait, then call again."
	}
	return "Wait for the " + string(e.Kind) + " limit, then call it again."
}

func (e *LimitError) Error() string {
	wait := inSeconds(e.RetryAfterSeconds())
	switch e.Kind {
	case KindCooldown:
		return fmt.Sprintf("endpoint %s is cooling down: try again in %s", e.Key, wait)
	case KindRequests:
		return fmt.Sprintf("upstream %s request budget (%d per %s) is spent: try again in %s", e.Key, e.Limit, e.Window, wait)
	case KindTokens:
		return fmt.Sprintf("upstream %s token budget (%d per %s) is spent: try again in %s", e.Key, e.Limit, e.Window, wait)
	case KindInterval:
		return fmt.Sprintf("upstream %s allows one call every %s: try again in %s", e.Key, e.Interval, wait)
	case KindConcurrency:
		return fmt.Sprintf("upstream %s has %d calls in flight: try again in about %s", e.Key, e.Limit, wait)
	case KindStore:
		return fmt.Sprintf("upstream %s: the limits the replicas share could not be checked in time (their store is slow): try again in about %s", e.Key, wait)
	default:
		return fmt.Sprintf("upstream %s asked to slow down (%s): try again in %s", e.Key, e.Source, wait)
	}
}

// inSeconds writes a wait of s seconds for the model: "1 second", "2.5 seconds".
func inSeconds(s float64) string {
	n := strconv.FormatFloat(s, 'f', -1, 64)
	if s == 1 {
		return n + " second"
	}
	return n + " seconds"
}

// QueueReason says why the wait queue of an upstream could not hold a call.
type QueueReason string

const (
	QueueFull    QueueReason = "full"    // the queue held its depth of calls already
	QueueTimeout QueueReason = "timeout" // the wait ran, or would run, past the queue timeout
	// QueueShutdown is a call that was waiting, or would have waited, when the server
	// began to shut down (Limiter.Drain): it left the queue unsent.
	QueueShutdown QueueReason = "shutdown"
)

// QueueError is a call that the wait queue of an upstream could not hold, for Reason.
type QueueError struct {
	Reason   QueueReason
	Upstream string
	Depth    int           // the queue's configured depth
	Timeout  time.Duration // the queue's configured timeout
	Waited   time.Duration // how long the call waited before giving up
	// RetryAfter is an estimate of when a new attempt could be served; never zero.
	RetryAfter time.Duration
}

// RetryAfterSeconds is RetryAfter as WaitSeconds.
func (e *QueueError) RetryAfterSeconds() float64 { return WaitSeconds(e.RetryAfter) }

// Retryable reports that the call, sent nowhere, may be made again.
func (e *QueueError) Retryable() bool { return true }

// RefusedBy is ScopeProxy: the queue is specgate's own.
func (e *QueueError) RefusedBy() Scope { return ScopeProxy }

// Hint says what to do next: wait, or, on a shutdown, call again (another
// replica serves it).
func (e *QueueError) Hint() string {
	if e.Reason == QueueShutdown {
		return "This server is shutting down and sent nothing for this call: call it again (another replica, or this one restarted, serves it)."
	}
	return "Too many calls are waiting for this upstream. Wait, then call again, or call another API meanwhile."
}

func (e *QueueError) Error() string {
	wait := inSeconds(e.RetryAfterSeconds())
	switch {
	case e.Reason == QueueShutdown:
		return fmt.Sprintf("specgate is shutting down: the call waiting for upstream %s was not sent; try again in about %s", e.Upstream, wait)
	case e.Reason == QueueFull:
		return fmt.Sprintf("wait queue for upstream %s is full (%d calls): try again in about %s", e.Upstream, e.Depth, wait)
	case e.Waited < e.Timeout:
		// refused ahead of time: the wait it faces is known to end past the timeout
		return fmt.Sprintf("call to upstream %s would wait past the queue timeout of %s (it waited %s): try again in about %s",
			e.Upstream, e.Timeout, e.Waited.Round(time.Millisecond), wait)
	}
	return fmt.Sprintf("call waited %s for upstream %s, past the queue timeout of %s: try again in about %s", e.Waited.Round(time.Millisecond), e.Upstream, e.Timeout, wait)
}

// WaitSeconds is a wait in seconds, rounded up to whole milliseconds and never less than
// one: a caller that waits exactly that long never comes back too early. It is the one
// rounding of every wait the model or a client reads.
func WaitSeconds(d time.Duration) float64 {
	ms := math.Ceil(float64(d) / float64(time.Millisecond))
	return max(ms, 1) / 1000
}
