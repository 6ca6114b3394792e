package ratelimit

import (
	"context"
	"time"
)

// Budget.PerPrincipal bounds the calls any one principal makes to an upstream in its
// window, inside the upstream's own budget: no single agent of a team takes it all. It is
// counted by a Window keyed by principal (shared through the Store when there is one), and
// checked before the call waits for its classes or its upstream, so a principal over its
// share waits (or, with OnLimit Reject, is refused) on its own, out of the others' queue.
// Calls with no principal are not counted. A shadow budget's share (Budget.Shadow) only
// counts the calls over it (see shadow.go). A call refused later by the upstream's budget
// has spent its principal's count: an error on the strict side.

// setPerPrincipal makes, keeps or drops the per-principal window for b. The caller holds
// u.mu.
func (u *upstream) setPerPrincipal(b Budget) {
	if b.PerPrincipal <= 0 {
		u.pp = nil
		return
	}
	span := b.Window
	if span <= 0 {
		span = DefaultWindow
	}
	if u.pp != nil && u.pp.limit == b.PerPrincipal && time.Duration(u.pp.window) == span {
		return
	}
	w, err := NewWindow(WindowOptions{Name: "pp:" + u.key, Limit: b.PerPrincipal, Window: span, Store: u.store})
	if err != nil { // Validate bounds the limit; nothing else can fail
		u.pp = nil
		return
	}
	u.pp = w
}

// admitPrincipal counts req against its principal's share of up, waiting for room as the
// queue would (bounded by the queue timeout and ctx's deadline) unless the budget rejects.
// It returns how long the call waited for its share (zero when there was room at once), a
// part of the call's QueueWait.
func (l *Limiter) admitPrincipal(ctx context.Context, up *upstream, req Request) (time.Duration, error) {
	if up == nil || req.Principal == "" {
		return 0, nil
	}
	up.mu.Lock()
	w, b, key := up.pp, up.budget, up.key
	up.mu.Unlock()
	if w == nil {
		return 0, nil
	}
	start := time.Now()
	deadline, hasDeadline := ctx.Deadline()
	for waited := false; ; waited = true {
		r := w.Allow(ctx, req.Principal)
		if !r.Allowed && b.Shadow && ctx.Err() == nil {
			// a shadow budget's share refuses nothing: the call is counted and goes
			up.mu.Lock()
			if up.shadow != nil {
				up.shadow.overPP++
			}
			up.mu.Unlock()
			return 0, nil
		}
		if r.Allowed {
			if !waited {
				return 0, nil
			}
			return time.Since(start), nil
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		now := time.Now()
		wait := max(r.RetryAfter, time.Millisecond)
		le := &LimitError{Scope: ScopeProxy, Kind: KindRequests, Key: key + " per principal", Limit: int64(r.Limit),
			Window: time.Duration(w.window), RetryAfter: wait, RetryAt: now.Add(wait)}
		if r.Full || b.OnLimit == Reject ||
			now.Add(wait).Sub(start) > allowedWait(KindRequests, b.QueueTimeout, start, deadline, hasDeadline) {
			return 0, le
		}
		if l.draining.Load() {
			return 0, up.shutdownError(now.Sub(start))
		}
		if err := l.waitShare(ctx, up, wait, start, req.Progress); err != nil {
			return 0, err
		}
	}
}

// waitShare waits d for a principal's share of up to have room, telling progress
// (when not nil) at once and every progress interval how long the call has
// waited since start and how long is left; the call holds no place in the
// queue meanwhile, so Position is 0. A Drain ends the wait with the answer every
// queued call gets.
func (l *Limiter) waitShare(ctx context.Context, up *upstream, d time.Duration, start time.Time, progress func(Progress)) error {
	t := time.NewTimer(d)
	defer t.Stop()
	end := time.Now().Add(d)
	var tick <-chan time.Time
	if progress != nil {
		progress(Progress{Waited: time.Since(start), Estimate: d})
		tk := time.NewTicker(l.progressEvery)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-l.drained:
			return up.shutdownError(time.Since(start))
		case now := <-tick:
			if !now.Before(end) {
				return nil // the ticker and the timer fired together
			}
			progress(Progress{Waited: now.Sub(start), Estimate: end.Sub(now)})
		}
	}
}
