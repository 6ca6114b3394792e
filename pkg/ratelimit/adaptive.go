package ratelimit

// Adaptive concurrency (Budget.Adaptive) finds an upstream's unannounced limit on calls in
// flight by additive increase, multiplicative decrease: the limit starts at MinConcurrent,
// rises by one after a run of clean answers as long as the limit itself, and halves on a
// rate-limited answer or a timeout. A halving remembers the level that failed, less one,
// as a ceiling: past it the limit rises only after a run eight times as long, so an
// upstream that allows 2 in flight costs a 429 now and then rather than every few calls.
// Only calls admitted after the last halving can halve it again, so one burst of 429s
// answers halves once. The state is this replica's.
type adaptive struct {
	lo, hi  int // the configured bounds
	limit   int
	clean   int   // clean answers since the last change
	ceiling int   // the highest level believed safe; zero: none known
	after   int64 // admissions up to this number cannot halve the limit again
	changes int64 // rises and halvings, for the status
}

// adaptiveRun is how much longer a run of clean answers must be to rise past the ceiling.
const adaptiveRun = 8

// DefaultAdaptiveMax bounds an adaptive limit whose Budget names no MaxConcurrent.
const DefaultAdaptiveMax = 64

// bounds are the adaptive limit's least and most values for b.
func (b *Budget) adaptiveBounds() (lo, hi int) {
	lo, hi = max(b.MinConcurrent, 1), b.MaxConcurrent
	if hi <= 0 {
		hi = DefaultAdaptiveMax
	}
	return lo, max(hi, lo)
}

// setAdaptive starts, keeps within new bounds, or drops the adaptive state for b, and
// applies its limit. The caller holds u.mu and has set u.full and u.budget.
func (u *upstream) setAdaptive(b Budget) {
	if !b.Adaptive {
		u.adapt = nil
		return
	}
	lo, hi := b.adaptiveBounds()
	if u.adapt == nil {
		u.adapt = &adaptive{limit: lo}
	}
	u.adapt.lo, u.adapt.hi = lo, hi
	u.adapt.limit = min(max(u.adapt.limit, lo), hi)
	u.applyAdaptive()
}

func (u *upstream) applyAdaptive() {
	u.full.MaxConcurrent = u.adapt.limit
	u.budget.MaxConcurrent = u.adapt.limit
}

// adaptClean counts a clean answer. The caller holds u.mu.
func (u *upstream) adaptClean() {
	a := u.adapt
	if a == nil {
		return
	}
	a.clean++
	need := a.limit
	if a.ceiling > 0 && a.limit >= a.ceiling {
		need *= adaptiveRun
	}
	if a.clean >= need && a.limit < a.hi {
		a.limit++
		a.clean = 0
		a.changes++
		u.applyAdaptive()
		u.wakeHead()
	}
}

// adaptBackOff halves the limit after a rate-limited answer or a timeout of the call
// admitted as number seq. The caller holds u.mu.
func (u *upstream) adaptBackOff(seq int64) {
	a := u.adapt
	if a == nil || seq <= a.after {
		return
	}
	a.ceiling = max(a.limit-1, a.lo)
	a.limit = max(a.limit/2, a.lo)
	a.clean = 0
	a.after = u.admitted
	a.changes++
	u.applyAdaptive()
}

// ObserveTimeout tells the limiter that the call timed out upstream: an adaptive
// concurrency limit halves, as on a rate-limited answer.
func (t *Ticket) ObserveTimeout() {
	if t.up == nil {
		return
	}
	t.up.mu.Lock()
	t.up.adaptBackOff(t.seq)
	t.up.mu.Unlock()
	for _, c := range t.classes {
		c.ObserveTimeout()
	}
}

// AdaptiveStatus is an adaptive concurrency limit's state.
type AdaptiveStatus struct {
	Limit   int   // calls in flight allowed now
	Ceiling int   // the highest level believed safe; zero: none known
	Changes int64 // rises and halvings so far
}

func (a *adaptive) status() *AdaptiveStatus {
	if a == nil {
		return nil
	}
	return &AdaptiveStatus{Limit: a.limit, Ceiling: a.ceiling, Changes: a.changes}
}

// adapt429 tells an adaptive limit of the answer to the call admitted as number seq. The
// caller holds u.mu.
func (u *upstream) adapt429(sig Signal, seq int64) {
	if sig.RateLimited {
		u.adaptBackOff(seq)
	} else if sig.Status < 500 {
		u.adaptClean()
	}
}
