package ratelimit

import (
	"context"
	"errors"
	"slices"
	"time"
)

// waiter is one call waiting in an upstream's queue. Only its own goroutine admits it; the
// others nudge it when something changed (a release, a new head, a new budget).
type waiter struct {
	wake     chan struct{}
	estimate int64 // last known wait at the head, nanoseconds
	exact    bool  // estimate is exact
	kind     Kind  // what held it last, at the head

	principal  string  // who the call is for (Request.Principal)
	subject    string  // the name its weight is found by (Request.Subject)
	background bool    // Request.Background
	seq        uint64  // arrival order in the queue
	tag        float64 // its fair place; see join
	// evicted: the queue gave its place to another principal's call (see makeRoom), with
	// evictedWait the queue's estimate then; it leaves with QueueFull.
	evicted     bool
	evictedWait time.Duration
}

func (w *waiter) nudge() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Acquire admits req now, or waits for it in its upstream's queue (fair across principals,
// see join; first come first served within one), using the real
// clock (tests run it in a testing/synctest bubble). It returns:
//
//   - a Ticket, with QueueWait set, once the call is admitted; release it when the call ends;
//   - a *LimitError at once when the endpoint's cooldown refuses (cooldowns are never
//     queued), when the budget says OnLimit Reject, or when the exact wait is known and
//     longer than the queue timeout or the ctx deadline (holds learned from the upstream are
//     bounded by the ctx deadline alone);
//   - a *QueueError for QueueFull when the queue is full (and req's principal holds its
//     share of it) or when the call's place went to another principal's (see makeRoom), or
//     QueueTimeout when the wait ran, or at the head of the queue would run, past the
//     queue timeout;
//   - ctx.Err() when ctx ends while waiting: the call leaves the queue at once.
//
// While the call waits, req.Progress is called with the time waited and an estimate. An
// endpoint registered with classes waits for each of them first (see classes.go).
func (l *Limiter) Acquire(ctx context.Context, req Request) (Ticket, error) {
	ep, up := l.resolve(req)
	var shareWait time.Duration
	if req.Principal != "" && up != nil {
		var err error
		if shareWait, err = l.admitPrincipal(ctx, up, req); err != nil {
			return Ticket{}, err
		}
	}
	var classes []Ticket
	if names := ep.classNames(); len(names) > 0 {
		var err error
		if classes, err = l.acquireClasses(ctx, ep, req, names); err != nil {
			return Ticket{}, waitedBefore(err, shareWait)
		}
	}
	t, err := l.acquire(ctx, ep, up, req)
	if err != nil {
		releaseAll(classes)
		for i := range classes {
			shareWait += classes[i].QueueWait
		}
		return t, waitedBefore(err, shareWait)
	}
	t.QueueWait += shareWait
	for i := range classes {
		t.QueueWait += classes[i].QueueWait
	}
	t.classes = classes
	return t, nil
}

// acquire is Acquire for ep and up, req's endpoint and upstream, once the principal's
// share and the classes have admitted it.
func (l *Limiter) acquire(ctx context.Context, ep *endpoint, up *upstream, req Request) (Ticket, error) {
	if err := ctx.Err(); err != nil {
		return Ticket{}, err
	}
	start := time.Now()
	if up == nil {
		t, rf, ok := l.admit(ctx, ep, nil, req, start.UnixNano(), true)
		if !ok {
			return Ticket{}, rf.err(ep, nil, start)
		}
		return t, nil
	}
	deadline, hasDeadline := ctx.Deadline()

	up.mu.Lock()
	b := up.budget
	jump := len(up.queue) == 0 || b.OnLimit == Reject
	t, rf, ok := l.admitUp(ctx, ep, up, req, start.UnixNano(), jump)
	if ok && jump {
		up.mu.Unlock()
		return admitted(ctx, t)
	}
	if rf.ctxErr != nil {
		up.mu.Unlock()
		return Ticket{}, rf.ctxErr
	}
	if !ok && (rf.cooldown || b.OnLimit == Reject ||
		!rf.estimated && time.Duration(rf.wait) > allowedWait(rf.kind, b.QueueTimeout, start, deadline, hasDeadline)) {
		up.countRefusal(ep, &rf)
		up.mu.Unlock()
		return Ticket{}, rf.err(ep, up, start)
	}
	if l.draining.Load() {
		up.mu.Unlock()
		return Ticket{}, up.shutdownError(0)
	}
	if len(up.queue) >= b.QueueDepth && !up.makeRoom(req.Principal, b.QueueDepth) {
		up.queueFull++
		_, est := up.position(nil)
		up.mu.Unlock()
		return Ticket{}, &QueueError{Reason: QueueFull, Upstream: up.name(), Depth: b.QueueDepth,
			Timeout: b.QueueTimeout, RetryAfter: max(est, time.Millisecond)}
	}
	w := &waiter{wake: make(chan struct{}, 1), principal: req.Principal, subject: req.Subject, background: req.Background}
	up.join(w)
	up.mu.Unlock()
	return l.wait(ctx, up, ep, req, w, start, deadline, hasDeadline)
}

// waitedBefore adds to a queue's refusal the time its call waited before it reached
// that queue (for its principal's share, for its classes): the call waited that long
// in all, and says so.
func waitedBefore(err error, d time.Duration) error {
	var qe *QueueError
	if d > 0 && errors.As(err, &qe) {
		qe.Waited += d
	}
	return err
}

// admitted hands t to a caller whose ctx may have ended while the store decided: a call
// nobody will send must not hold its slot until its caller's Release that never comes.
func admitted(ctx context.Context, t Ticket) (Ticket, error) {
	if err := ctx.Err(); err != nil {
		t.Release()
		return Ticket{}, err
	}
	return t, nil
}

// Drain answers every call waiting in a queue, and every call that would wait from now on,
// with a *QueueError for QueueShutdown, at once: nothing of theirs is sent, and the caller
// may try again elsewhere. Calls admitted already are not touched. A server calls it when
// it begins to shut down, so the calls in flight can finish within its shutdown timeout.
func (l *Limiter) Drain() {
	l.draining.Store(true)
	l.drainOnce.Do(func() { close(l.drained) })
	ups := l.upstreams.Load()
	if ups == nil {
		return
	}
	for _, up := range *ups {
		up.mu.Lock()
		for _, w := range up.queue {
			w.nudge()
		}
		up.mu.Unlock()
	}
}

// shutdownError is the answer to a call the queue drops as the server shuts down.
func (u *upstream) shutdownError(waited time.Duration) *QueueError {
	return &QueueError{Reason: QueueShutdown, Upstream: u.name(), Depth: u.budget.QueueDepth,
		Timeout: u.budget.QueueTimeout, Waited: waited, RetryAfter: time.Second}
}

// allowedWait is how long a call may wait for a limit of kind: the queue timeout and the
// call's deadline bound budgets; only the deadline bounds holds learned from the upstream.
func allowedWait(kind Kind, queueTimeout time.Duration, now, deadline time.Time, hasDeadline bool) time.Duration {
	if kind == KindLearned && hasDeadline {
		return deadline.Sub(now)
	}
	if hasDeadline {
		return min(queueTimeout, deadline.Sub(now))
	}
	return queueTimeout
}

// outcome ends a wait.
type outcome struct {
	done bool
	t    Ticket
	err  error
}

func (l *Limiter) wait(ctx context.Context, up *upstream, ep *endpoint, req Request, w *waiter,
	start time.Time, deadline time.Time, hasDeadline bool) (Ticket, error) {
	up.mu.Lock()
	timeout := up.budget.QueueTimeout
	up.mu.Unlock()
	expired := time.NewTimer(timeout)
	defer expired.Stop()
	// a wait that took long (a slow store call) is past the timeout even when another
	// case of the select below is ready before the timer's
	expiry := time.Now().Add(timeout)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	progress := time.NewTicker(l.progressEvery)
	defer progress.Stop()

	report := func(now time.Time) {
		if req.Progress == nil {
			return
		}
		up.mu.Lock()
		pos, est := up.position(w)
		up.mu.Unlock()
		req.Progress(Progress{Waited: now.Sub(start), Estimate: est, Position: pos})
	}
	first := true
	timedOut := false
	for {
		timedOut = timedOut || !time.Now().Before(expiry)
		o := l.evaluate(ctx, up, ep, req, w, start, deadline, hasDeadline, timedOut, retry)
		if o.done {
			return o.t, o.err
		}
		if first {
			report(time.Now())
			first = false
		}
		timedOut = false
		select {
		case <-ctx.Done():
			up.leave(w)
			return Ticket{}, ctx.Err()
		case <-w.wake:
		case <-retry.C:
		case <-expired.C:
			timedOut = true
		case now := <-progress.C:
			report(now)
		}
	}
}

// evaluate admits w when it is at the head of the queue and its call can go; it ends the
// wait when the call can no longer make it in time.
func (l *Limiter) evaluate(ctx context.Context, up *upstream, ep *endpoint, req Request, w *waiter, start, deadline time.Time,
	hasDeadline, timedOut bool, retry *time.Timer) outcome {
	now := time.Now()
	up.mu.Lock()
	b := up.budget
	if l.draining.Load() {
		up.remove(w)
		up.mu.Unlock()
		return outcome{done: true, err: up.shutdownError(now.Sub(start))}
	}
	if w.evicted {
		up.mu.Unlock()
		return outcome{done: true, err: &QueueError{Reason: QueueFull, Upstream: up.name(), Depth: b.QueueDepth,
			Timeout: b.QueueTimeout, Waited: now.Sub(start), RetryAfter: max(w.evictedWait, time.Millisecond)}}
	}
	if len(up.queue) == 0 || up.queue[0] != w {
		if timedOut {
			up.remove(w)
			up.queueTimeout++
			_, est := up.position(nil)
			up.mu.Unlock()
			return outcome{done: true, err: &QueueError{Reason: QueueTimeout, Upstream: up.name(), Depth: b.QueueDepth,
				Timeout: b.QueueTimeout, Waited: now.Sub(start), RetryAfter: max(est, time.Millisecond)}}
		}
		up.mu.Unlock()
		return outcome{}
	}
	t, rf, ok := l.admitUp(ctx, ep, up, req, now.UnixNano(), true)
	if ok {
		up.served(w)
		up.remove(w)
		up.mu.Unlock()
		// measured after the admission: a store call that timed out on the way (the
		// switch to the fallback share) is part of the wait
		t.QueueWait = time.Since(start)
		t, err := admitted(ctx, t)
		return outcome{done: true, t: t, err: err}
	}
	if rf.ctxErr != nil {
		up.remove(w)
		up.mu.Unlock()
		return outcome{done: true, err: rf.ctxErr}
	}
	w.estimate, w.exact, w.kind = rf.wait, !rf.estimated, rf.kind
	final := rf.cooldown || b.OnLimit == Reject
	// a hold learned from the upstream may outlast the queue timeout, up to the deadline
	pastTimeout := timedOut && !(rf.kind == KindLearned && hasDeadline)
	if !final && !pastTimeout && w.exact {
		limit := start.Add(b.QueueTimeout)
		if rf.kind == KindLearned && hasDeadline {
			limit = deadline
		} else if hasDeadline && deadline.Before(limit) {
			limit = deadline
		}
		if now.Add(time.Duration(rf.wait)).After(limit) {
			final = rf.kind == KindLearned
			pastTimeout = !final
		}
	}
	if final {
		up.remove(w)
		up.countRefusal(ep, &rf)
		up.mu.Unlock()
		return outcome{done: true, err: rf.err(ep, up, now)}
	}
	if pastTimeout {
		up.remove(w)
		up.queueTimeout++
		up.mu.Unlock()
		return outcome{done: true, err: &QueueError{Reason: QueueTimeout, Upstream: up.name(), Depth: b.QueueDepth,
			Timeout: b.QueueTimeout, Waited: now.Sub(start), RetryAfter: time.Duration(rf.wait)}}
	}
	up.mu.Unlock()
	retry.Reset(time.Duration(rf.wait))
	return outcome{}
}

// remove takes w out of the queue; a new head is nudged to look.
func (u *upstream) remove(w *waiter) {
	i := slices.Index(u.queue, w)
	if i < 0 {
		return
	}
	head := u.queue[0]
	u.queue = slices.Delete(u.queue, i, i+1)
	u.left(w.principal)
	u.reorder()
	if i == 0 || u.headWaiter() != head {
		u.wakeHead()
	}
}

func (u *upstream) leave(w *waiter) {
	u.mu.Lock()
	u.remove(w)
	u.mu.Unlock()
}

// position returns w's place in the queue (1 is the head) and an estimate of its wait: the
// head's known wait plus one spacing of the budget per call ahead. For w nil it estimates
// for a call joining the end.
func (u *upstream) position(w *waiter) (int, time.Duration) {
	pos := len(u.queue) + 1
	if w != nil {
		pos = slices.Index(u.queue, w) + 1
	}
	var head int64
	if len(u.queue) > 0 {
		head = u.queue[0].estimate
	}
	b := &u.budget
	spacing := int64(b.MinInterval)
	if b.Requests > 0 {
		spacing = max(spacing, u.span/int64(b.Requests))
	}
	if b.MaxConcurrent > 0 {
		spacing = max(spacing, u.callEstimate()/int64(b.MaxConcurrent))
	}
	return pos, time.Duration(max(head, 0) + int64(max(pos-1, 0))*spacing)
}
