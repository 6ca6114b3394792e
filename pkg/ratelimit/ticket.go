package ratelimit

import (
	"net/http"
	"time"
)

// Ticket is an admitted call. Release it when the call ends (defer t.Release()); until then
// it counts as in flight. A Ticket is not safe for concurrent use and must not be copied
// once used. The zero Ticket (a call with nothing to govern) does nothing.
type Ticket struct {
	// QueueWait is how long Acquire held the call in the queue.
	QueueWait time.Duration
	up        *upstream
	ep        *endpoint
	admitted  int64
	seq       int64 // the upstream's admission number of this call; zero: none
	ahead     int   // the upstream's calls in flight when it was admitted
	tokens    int64 // tokens charged, after settling
	bucket    int64 // the token bucket charged at admission
	released  bool
	heard     bool          // its answer was heard (ObserveAt), or it was released before
	sh        *sharedTicket // admitted through a Store; nil in memory or on the fallback share
	shadow    *shadowState  // counted in flight against a shadow budget; nil: not
	classes   []Ticket      // the call's admissions in its endpoint's classes
	refunded  bool          // its request charge was given back (Budget.FreeNotModified)
}

// Admitted returns when the call was admitted.
func (t *Ticket) Admitted() time.Time {
	if t.admitted == 0 {
		return time.Time{}
	}
	return time.Unix(0, t.admitted)
}

// Release ends the call: it no longer counts as in flight. Only the first call has effect.
func (t *Ticket) Release() { t.ReleaseAt(time.Now()) }

// ReleaseAt is Release at a given time, used to estimate how long calls take.
func (t *Ticket) ReleaseAt(now time.Time) {
	if t.released || t.up == nil {
		t.released = true
		return
	}
	t.released = true
	for i := range t.classes {
		t.classes[i].ReleaseAt(now)
	}
	up := t.up
	up.mu.Lock()
	t.hear()
	up.release(now.UnixNano() - t.admitted)
	t.releaseShadow()
	up.endProbe(t.seq)
	up.wakeHead()
	up.mu.Unlock()
	if sh := t.sh; sh != nil && sh.lease != "" {
		_ = sh.store.Release(detached(), sh.upstream, sh.lease) // a lost lease expires by its TTL
	}
}

// hear marks the call's answer heard: it no longer waits on the upstream. The caller
// holds t.up.mu.
func (t *Ticket) hear() {
	if !t.heard && t.seq > 0 {
		t.heard = true
		t.up.unheard--
	}
}

// Settle replaces the call's token estimate with its real size (request plus response), so
// token budgets count what was really spent.
func (t *Ticket) Settle(actual int64) { t.SettleAt(actual, time.Now()) }

// SettleAt is Settle at a given time: more tokens than estimated are charged at now.
func (t *Ticket) SettleAt(actual int64, now time.Time) {
	if t.up == nil || actual < 0 {
		return
	}
	up := t.up
	delta := actual - t.tokens
	up.mu.Lock()
	shareTokens := up.full.Tokens > 0
	up.settle(t, actual, now.UnixNano())
	if shareTokens && up.store != nil {
		up.settleSeen(t, delta)
	}
	up.wakeHead()
	up.mu.Unlock()
	t.tokens = actual
	if sh := t.sh; sh != nil && shareTokens && delta != 0 && (delta > 0 || sh.bucket != 0) {
		_ = sh.store.Settle(detached(), sh.upstream, sh.bucket, delta, sh.span)
	}
}

// Observe parses the upstream's answer to this call (status, headers and, optionally, the
// first bytes of its body) and learns from it; see ParseHeaders and ObserveAt.
func (t *Ticket) Observe(status int, h http.Header, body []byte) Signal {
	now := time.Now()
	sig := ParseHeaders(status, h, body, now)
	t.ObserveAt(sig, now)
	return sig
}

// ObserveAt applies what the upstream said at now: a rate-limited answer blocks the upstream
// (or the quota its headers name) until its retry time, at least one second, and once the
// block ends one call probes before the others go; a rate-limited answer with no
// advertised quota also infers a limit on calls in flight, from those in flight when it
// was admitted, or, when it went alone, a requests budget from the calls admitted before
// it; a
// remaining of zero holds calls until the reset; an advertised limit becomes a learned
// budget, counted down by every call admitted after it, in flight ones included. Learned
// limits only add to the configured ones, never loosen them. See the package doc.
func (t *Ticket) ObserveAt(sig Signal, now time.Time) {
	if t.up == nil {
		return
	}
	up := t.up
	up.mu.Lock()
	// Calls admitted before this one normally reached the upstream first and are already
	// in the remaining it advertised; only those admitted after it and still in flight
	// are not.
	others := up.inflight
	if !t.released {
		others--
	}
	if t.seq > 0 {
		others = min(others, int(up.admitted-t.seq))
	}
	t.hear()
	a := answer{seq: t.seq, sent: t.admitted, others: others, ahead: t.ahead, waiting: up.unheard}
	up.learn(t.ep, sig, a, now.UnixNano())
	share := !up.tooManyInFlight(sig, a) // nor do the other replicas block for it
	up.adapt429(sig, t.seq)
	if sig.Status == http.StatusNotModified && up.full.FreeNotModified && !t.refunded && t.sh == nil && up.budget.Requests > 0 {
		t.refunded = up.reqs.remove(t.admitted)
	}
	up.wakeHead()
	key, st := up.key, up.store
	up.mu.Unlock()
	for _, c := range t.classes {
		if c.up != nil {
			c.up.mu.Lock()
			c.up.adapt429(sig, c.seq)
			c.up.mu.Unlock()
		}
	}
	if st != nil && share {
		shareBlock(st, key, sig, now)
	}
}
