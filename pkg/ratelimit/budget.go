package ratelimit

import (
	"fmt"
	"math"
	"time"
)

// OnLimit says what Acquire does with a call that cannot go now.
type OnLimit int

const (
	// Wait queues the call (FIFO) until it can go, within the queue's depth and timeout and
	// the call's deadline.
	Wait OnLimit = iota
	// Reject refuses the call at once with a *LimitError carrying the exact wait.
	Reject
)

// Default values used where a Budget field is zero.
const (
	DefaultWindow       = time.Minute
	DefaultWindowPad    = 250 * time.Millisecond
	DefaultQueueDepth   = 16
	DefaultQueueTimeout = 20 * time.Second
)

// Budget limits the calls to one upstream. Each dimension is off while its field is zero;
// the zero Budget limits nothing and queues calls held by learned limits.
type Budget struct {
	// Match names the upstream the budget belongs to: a group name that endpoints join, a
	// host:port, or a bare host (all its ports share the budget).
	Match string
	// Requests is the most calls admitted in any rolling Window+WindowPad. Zero: no limit.
	Requests int
	// Tokens is the most tokens (request plus response size) charged in any rolling
	// Window+WindowPad. Calls are charged their estimate when admitted and settled to the
	// real size afterwards. Zero: no limit.
	Tokens int64
	// Window is the length of the rolling window of Requests and Tokens. Zero: one minute.
	Window time.Duration
	// WindowPad widens the window to absorb network jitter, so the upstream never sees more
	// than Requests in its own window. Zero: 250ms; negative: no pad.
	WindowPad time.Duration
	// MinInterval is the least time between two admitted calls. Zero: no pacing.
	MinInterval time.Duration
	// MaxConcurrent is the most calls in flight (admitted and not yet released). Zero: no limit.
	MaxConcurrent int
	// OnLimit says whether a call that cannot go now waits or is refused. Zero: Wait.
	OnLimit OnLimit
	// QueueDepth is the most calls waiting for this upstream, shared fairly among the
	// principals waiting (see makeRoom). Zero: 16.
	QueueDepth int
	// QueueTimeout is the longest a call waits for this budget. Holds learned from the
	// upstream are bounded by the call's deadline instead. Zero: 20s, inside the
	// server's default shutdown timeout.
	QueueTimeout time.Duration
	// Weights weighs the principals waiting in the queue: while several wait, one of
	// weight 2 is served twice for each call of a principal of weight 1. A principal not
	// named weighs 1.
	Weights map[string]float64
	// Shadow counts Requests, MinInterval and MaxConcurrent without enforcing them: see
	// shadowState. Tokens, OnLimit and the queue still apply as configured.
	Shadow bool
	// Adaptive finds the calls in flight the upstream allows (see adaptive): from
	// MinConcurrent (zero: 1) up to MaxConcurrent (zero: DefaultAdaptiveMax).
	Adaptive      bool
	MinConcurrent int
	// FreeNotModified gives back a call's request charge when the upstream answers it
	// 304 Not Modified, for an upstream that does not count those (GitHub). With a Store,
	// the charge in the store stays: a 304 counts there.
	FreeNotModified bool
	// PerPrincipal is the most calls any one principal makes in any rolling Window, inside
	// the budget; see perprincipal.go. Zero: no such bound.
	PerPrincipal int
}

// Validate reports the first field that makes no sense, with no I/O.
func (b Budget) Validate() error {
	switch {
	case b.Requests < 0:
		return fmt.Errorf("budget %q: requests must not be negative", b.Match)
	case b.Tokens < 0:
		return fmt.Errorf("budget %q: tokens must not be negative", b.Match)
	case b.Window < 0:
		return fmt.Errorf("budget %q: window must not be negative", b.Match)
	case b.MinInterval < 0:
		return fmt.Errorf("budget %q: min_interval must not be negative", b.Match)
	case b.MaxConcurrent < 0:
		return fmt.Errorf("budget %q: max_concurrent must not be negative", b.Match)
	case b.PerPrincipal < 0 || b.PerPrincipal > maxRequests:
		return fmt.Errorf("budget %q: per_principal requests must be in 0..%d", b.Match, maxRequests)
	case b.MinConcurrent < 0:
		return fmt.Errorf("budget %q: min_concurrent must not be negative", b.Match)
	case b.Adaptive && b.MaxConcurrent > 0 && b.MinConcurrent > b.MaxConcurrent:
		return fmt.Errorf("budget %q: adaptive max_concurrent min %d is above its max %d", b.Match, b.MinConcurrent, b.MaxConcurrent)
	case b.QueueDepth < 0:
		return fmt.Errorf("budget %q: queue_depth must not be negative", b.Match)
	case b.QueueTimeout < 0:
		return fmt.Errorf("budget %q: queue_timeout must not be negative", b.Match)
	case b.OnLimit != Wait && b.OnLimit != Reject:
		return fmt.Errorf("budget %q: on_limit must be wait or reject", b.Match)
	case badWeight(b.Weights) != "":
		return fmt.Errorf("budget %q: weight of %q must be a number above 0 and at most 1000", b.Match, badWeight(b.Weights))
	case b.Requests > maxRequests:
		return fmt.Errorf("budget %q: requests above %d per window are not supported", b.Match, maxRequests)
	}
	return nil
}

// badWeight names a principal whose weight is not in (0, 1000]; empty when none is.
func badWeight(w map[string]float64) string {
	for p, v := range w {
		if !(v > 0 && v <= 1000) {
			return p
		}
	}
	return ""
}

// maxRequests bounds the sliding log (8 bytes per request).
const maxRequests = 1 << 20

// withDefaults fills the documented defaults of zero fields.
func (b Budget) withDefaults() Budget {
	if b.Window == 0 {
		b.Window = DefaultWindow
	}
	if b.WindowPad == 0 {
		b.WindowPad = DefaultWindowPad
	} else if b.WindowPad < 0 {
		b.WindowPad = 0
	}
	if b.QueueDepth == 0 {
		b.QueueDepth = DefaultQueueDepth
	}
	if b.QueueTimeout == 0 {
		b.QueueTimeout = DefaultQueueTimeout
	}
	return b
}

// scaled returns b as one replica runs it on share of each budget: floor(share × limit),
// at least 1, for requests, tokens and calls in flight; the minimum interval stretched by
// 1/share. Windows, queues and OnLimit stay. A share of 1 or more (or zero) returns b.
func (b Budget) scaled(share float64) Budget {
	if share <= 0 || share >= 1 {
		return b
	}
	part := func(n int64) int64 {
		if n <= 0 {
			return n
		}
		return max(int64(math.Floor(share*float64(n))), 1)
	}
	b.Requests = int(part(int64(b.Requests)))
	b.Tokens = part(b.Tokens)
	b.MaxConcurrent = int(part(int64(b.MaxConcurrent)))
	b.MinInterval = time.Duration(stretch(int64(b.MinInterval), share))
	return b
}

// span is the rolling window the request and token logs are kept over.
func (b *Budget) span() int64 { return int64(b.Window + b.WindowPad) }

// Span is how long a call counts in the requests and tokens windows: the window plus its
// pad, once defaults are filled in.
func (b *Budget) Span() time.Duration { return time.Duration(b.span()) }

// TokenBucketWidth is the width of the token buckets of a tokens window spanning span:
// span/64, at least 1ms. A charge may count up to one width longer than its exact time.
func TokenBucketWidth(span time.Duration) time.Duration {
	return max(span/tokenBucketsPerWindow, time.Millisecond)
}

// requestLog is a sliding log of the last n admission times, oldest first, in a ring.
// A call at now is allowed when fewer than n are logged or the oldest of the last n is at
// least span before now, so no half-open window of length span ever holds more than n.
type requestLog struct {
	ring []int64
	head int // index of the oldest entry
	n    int // entries in use
}

func (r *requestLog) resize(limit int) {
	if limit == len(r.ring) {
		return
	}
	nr := make([]int64, limit)
	keep := min(r.n, limit)
	// keep the newest entries
	for i := 0; i < keep; i++ {
		nr[i] = r.ring[(r.head+r.n-keep+i)%len(r.ring)]
	}
	r.ring, r.head, r.n = nr, 0, keep
}

// wait returns nanoseconds until a call is allowed (zero or less: now).
func (r *requestLog) wait(now, span int64) int64 { return r.waitN(now, span, 1) }

// waitN returns nanoseconds until a call of k units (1 <= k <= the limit) is allowed: until
// k entries of the log are free.
func (r *requestLog) waitN(now, span int64, k int) int64 {
	if r.n+k <= len(r.ring) {
		return 0
	}
	return r.ring[(r.head+r.n+k-len(r.ring)-1)%len(r.ring)] + span - now
}

// used counts entries still inside the window at now.
func (r *requestLog) used(now, span int64) int {
	c := 0
	for i := 0; i < r.n; i++ {
		if r.ring[(r.head+i)%len(r.ring)]+span > now {
			c++
		}
	}
	return c
}

// remove takes back the entry logged for an admission at at: the newest entry equal to
// it, else the oldest later one (add may have moved it later). False when none is left.
func (r *requestLog) remove(at int64) bool {
	found := -1
	for i := r.n - 1; i >= 0; i-- {
		v := r.ring[(r.head+i)%len(r.ring)]
		if v == at {
			found = i
			break
		}
		if v > at {
			found = i
		}
	}
	if found < 0 {
		return false
	}
	for i := found; i < r.n-1; i++ {
		r.ring[(r.head+i)%len(r.ring)] = r.ring[(r.head+i+1)%len(r.ring)]
	}
	r.n--
	return true
}

func (r *requestLog) add(now int64) {
	if r.n > 0 {
		// keep the log ordered even when callers pass slightly older times: later is
		// conservative, the entry leaves the window later
		if newest := r.ring[(r.head+r.n-1)%len(r.ring)]; now < newest {
			now = newest
		}
	}
	if r.n < len(r.ring) {
		r.ring[(r.head+r.n)%len(r.ring)] = now
		r.n++
		return
	}
	r.ring[r.head] = now
	r.head = (r.head + 1) % len(r.ring)
}

// tokenBuckets is a ring of token charges grouped in buckets of width g. A charge made
// during bucket [t, t+g) counts until t+g+span, which is at least span after the charge:
// counting whole buckets is conservative, never lenient.
type tokenBuckets struct {
	ring []tokenBucket
	head int
	n    int
	sum  int64
	g    int64
}

type tokenBucket struct {
	start  int64
	tokens int64
}

// tokenBucketsPerWindow sets the granularity: a charge may count up to span/64 longer
// than its exact time.
const tokenBucketsPerWindow = 64

func (tb *tokenBuckets) setSpan(span int64) {
	g := span / tokenBucketsPerWindow
	if g < int64(time.Millisecond) {
		g = int64(time.Millisecond)
	}
	tb.g = g
	want := int(span/g) + 3
	if len(tb.ring) < want {
		tb.grow(want)
	}
}

func (tb *tokenBuckets) grow(size int) {
	nr := make([]tokenBucket, size)
	for i := 0; i < tb.n; i++ {
		nr[i] = tb.ring[(tb.head+i)%len(tb.ring)]
	}
	tb.ring, tb.head = nr, 0
}

func (tb *tokenBuckets) expire(now, span int64) {
	for tb.n > 0 {
		b := tb.ring[tb.head]
		if b.start+tb.g+span > now {
			return
		}
		tb.sum -= b.tokens
		tb.head = (tb.head + 1) % len(tb.ring)
		tb.n--
	}
}

// wait returns nanoseconds until cost more tokens fit under limit (zero or less: now).
// A cost above limit is treated as limit: such a call goes when the window is empty.
func (tb *tokenBuckets) wait(now, span, limit, cost int64) int64 {
	tb.expire(now, span)
	cost = min(cost, limit)
	if tb.sum+cost <= limit {
		return 0
	}
	freed := int64(0)
	for i := 0; i < tb.n; i++ {
		b := tb.ring[(tb.head+i)%len(tb.ring)]
		freed += b.tokens
		if tb.sum-freed+cost <= limit {
			return b.start + tb.g + span - now
		}
	}
	return span // unreachable: freeing every bucket always fits
}

// add charges tokens at now and returns the start of the bucket charged.
func (tb *tokenBuckets) add(now, tokens int64) int64 {
	start := now - now%tb.g
	if tb.n > 0 {
		last := &tb.ring[(tb.head+tb.n-1)%len(tb.ring)]
		if start <= last.start {
			last.tokens += tokens
			tb.sum += tokens
			return last.start
		}
	}
	if tb.n == len(tb.ring) {
		tb.grow(2 * len(tb.ring))
	}
	tb.ring[(tb.head+tb.n)%len(tb.ring)] = tokenBucket{start: start, tokens: tokens}
	tb.n++
	tb.sum += tokens
	return start
}

// refund takes back up to tokens from the bucket that started at start, if it is still kept.
func (tb *tokenBuckets) refund(start, tokens int64) {
	for i := 0; i < tb.n; i++ {
		b := &tb.ring[(tb.head+i)%len(tb.ring)]
		if b.start == start {
			tokens = min(tokens, b.tokens)
			b.tokens -= tokens
			tb.sum -= tokens
			return
		}
	}
}
