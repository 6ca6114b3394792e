package ratelimit

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"
)

// Store keeps the limiting state that several replicas of specgate share: cooldowns,
// request and token windows, minimum intervals, concurrency leases and learned blocks.
// A Limiter without a Store keeps all of it in memory (the default); package redisstore
// has the shared implementation on Redis or Redis Cluster. The wait queue always stays
// local to a replica.
//
// A Store answers with its own clock, so waits are relative. A method that fails because
// the store is unreachable makes it unavailable until it answers again; meanwhile the
// Limiter runs on its local state with FallbackShare of each budget, never failing open.
// A call that only timed out while the store still answers a probe is not an outage: the
// method's error wraps ErrStoreSlow and the store stays available (see ErrStoreSlow).
//
// Implementations must be safe for concurrent use.
type Store interface {
	// Admit checks every limit of a against the shared state at the store's now and, when
	// a.Charge is set and all pass, charges them all; all or nothing, atomically.
	Admit(ctx context.Context, a *Admission) (Decision, error)
	// Release ends the concurrency lease of an admitted call.
	Release(ctx context.Context, upstream, lease string) error
	// Settle charges delta more tokens at the store's now (delta > 0), or refunds up to
	// -delta from the token bucket charged at admission (delta < 0). span is the budget's
	// window plus pad.
	Settle(ctx context.Context, upstream string, bucket, delta int64, span time.Duration) error
	// Block holds every call to the upstream's quota resource ("" for the whole upstream)
	// for d from the store's now, unless a longer block is already set.
	Block(ctx context.Context, upstream, resource string, d time.Duration, source string) error
	// CountEvent counts one event of a Window's key if fewer than e.Limit are in its
	// rolling window at the store's now; atomically.
	CountEvent(ctx context.Context, e Event) (EventCount, error)
	// Available reports, cheaply, whether the part of the store that holds group answered
	// its last call or probe. A group is what one admission touches: an upstream key (with
	// the cooldowns of its endpoints), the id of an endpoint with no upstream, or a
	// Window's key. A store in one piece answers the same for every group.
	Available(group string) bool
	// Degraded reports whether the store is unreachable, in whole or in part, since when
	// and why.
	Degraded() (degraded bool, since time.Time, reason string)
	// FallbackShare is the part of each budget one replica uses while the store is
	// unreachable, in (0, 1].
	FallbackShare() float64
}

// ErrStoreSlow is wrapped by the error of a Store method whose call got no answer within
// the store's timeout while the part of the store it went to answered a probe right
// after: the store is slow, not unreachable, and stays Available. The other replicas
// most likely still reach it and spend the shared budgets through it, so the Limiter
// does not run on its fallback share for a slow answer (its share would come on top of
// what they spend): it asks the store once more, then holds the call (KindStore, an
// estimated wait), within the caller's context and queue timeout. Only a store that does
// not answer at all (a refused or reset connection, a probe that times out too: an
// outage every replica sees) puts the Limiter on its share.
var ErrStoreSlow = errors.New("store slow: no answer within its timeout, though it answers a probe")

// slowStoreWait is the estimated wait of a call held because the store was slow.
const slowStoreWait = 250 * time.Millisecond

// Admission is one call to check, and charge, against a Store.
type Admission struct {
	// Endpoint is the endpoint id, the cooldown's key. Cooldown is its interval; zero: no
	// cooldown check (an unregistered endpoint, or a retry of an admitted call).
	Endpoint string
	Cooldown time.Duration
	// Upstream is the upstream key; empty: only the cooldown is checked.
	Upstream string
	// Resource is the upstream quota the endpoint's answers count against ("": none said).
	Resource string
	// Budget is the upstream's budget with defaults filled in; a zero dimension is off.
	Budget Budget
	// Units is what the call charges the requests window (Endpoint.Cost): 1 or more, at
	// most Budget.Requests; zero is one.
	Units int
	// Tokens is the call's estimated tokens.
	Tokens int64
	// CallEstimate is the wait reported when the calls in flight are at the limit.
	CallEstimate time.Duration
	// Charge charges the call when every limit passes; false only checks.
	Charge bool
	// Backlog is what this replica admitted to the upstream on its fallback share that the
	// store has not counted: how long before the admission each unit was charged. The
	// store writes those still in the requests window into it, at its own now less their
	// age, before it decides.
	Backlog []time.Duration
	// Epoch is the store's epoch of the upstream's state that this replica last saw (see
	// Decision.Epoch); zero: none. Rejoin is set on the first admission after this
	// replica ran on its fallback share. With either, a store that shares the requests
	// window's remainder between replicas after it came back (a hand-over) can tell that
	// it did.
	Epoch  int64
	Rejoin bool
}

// Decision is a Store's answer to an Admission.
type Decision struct {
	// OK is true when every limit passed (and, with Charge, all were charged).
	OK bool
	// Kind and Scope name the limit with the longest wait when refused; Wait is that wait,
	// exact but for KindConcurrency; Source names the header behind a learned block.
	Kind   Kind
	Scope  Scope
	Wait   time.Duration
	Source string
	// Cooldown is true when the endpoint's cooldown refused, whatever had the longest wait.
	Cooldown bool
	// Lease is the concurrency lease of an admitted call, for Release; empty when none.
	Lease string
	// Bucket is the token bucket charged at admission, for Settle.
	Bucket int64
	// Now is the store's clock when it decided.
	Now time.Time
	// Requests is how many calls the upstream's requests window held when the store
	// decided, this one included when charged; RequestsFree is how long after Now until
	// that window has room for another call, zero when it has room. Both zero without a
	// requests budget. Tokens is how many tokens the upstream's tokens window held, this
	// call's included when charged; zero without a tokens budget. They are what the
	// fallback share starts from if the store goes away.
	Requests     int
	RequestsFree time.Duration
	Tokens       int64
	// Epoch names the generation of the group's state in the store: it changes when the
	// store lost that state (a Redis that restarted empty), and with it what the other
	// replicas admitted on their fallback shares meanwhile. Zero: the store does not say.
	Epoch int64
}

// Group is the store group of an admission: its upstream, else its endpoint (see
// Store.Available).
func (a *Admission) Group() string {
	if a.Upstream != "" {
		return a.Upstream
	}
	return a.Endpoint
}

// Event is one event of a Window to count in a Store.
type Event struct {
	// Window is the Window's name; Key the key counted (a principal, a client IP), its
	// store group.
	Window, Key string
	// Limit is the most events of the key in any rolling Span.
	Limit int
	Span  time.Duration
}

// EventCount is a Store's answer to an Event.
type EventCount struct {
	// Allowed is true when the event was counted.
	Allowed bool
	// Wait is, when refused, how long until an event of the key can pass; when allowed
	// and Remaining is zero, how long until the next one can.
	Wait time.Duration
	// Remaining is how many more events of the key would be counted now.
	Remaining int
	// Count is how many events the key's window held, this one included when allowed.
	Count int64
}

// sharedTicket is what a Ticket admitted through a Store needs to give back.
type sharedTicket struct {
	store    Store
	upstream string
	lease    string
	bucket   int64
	span     time.Duration
	at       time.Time // the store's clock at admission
}

// detached is the context of a store call that no caller's context reaches: releasing,
// settling and learning from a call that already ended, and AdmitAt. The store bounds
// every call with its own timeout.
func detached() context.Context { return context.Background() }

// admitShared is admit with a Store; the caller holds up.mu when up is not nil. While the
// store is unreachable, and for one window after this replica last ran on its fallback
// share, the local state (holding this replica's own admissions, on its share of each
// budget) must also pass: a replica never spends more than its share across the switch.
// What the upstream advertised (learned quotas) is always checked locally as well.
//
// ctx bounds the call to the store. When ctx ends before the store answers, the call is
// refused (with rf.ctxErr) and the store is not counted as down.
func (l *Limiter) admitShared(ctx context.Context, ep *endpoint, up *upstream, req Request, now int64, charge bool) (Ticket, refusal, bool) {
	st := l.store
	group := ""
	switch {
	case up != nil:
		group = up.key
	case ep != nil:
		group = ep.id
	}
	sw := &l.sw
	if up != nil {
		sw = &up.sw
	}
	if !st.Available(group) {
		sw.switchAt(now)
		return l.admitFallback(ep, up, req, now, charge)
	}
	var lrf refusal
	grace := l.inGrace(ep, up, now)
	switch {
	case up != nil && grace:
		lrf, _ = up.checkLocked(ep, req, now)
	case up != nil:
		up.checkLearnedLocked(ep, req, now, &lrf)
	case grace && ep != nil && !req.Retry:
		if w := ep.cd.waitShare(ep.cd.last.Load(), now, l.share); w > 0 {
			lrf.cooldownOf(ep, w)
		}
	}
	a := Admission{Tokens: req.Tokens, Charge: charge && lrf.wait <= 0}
	if ep != nil {
		a.Endpoint = ep.cooldownKey()
		a.Resource = ep.resourceName()
		if !req.Retry {
			a.Cooldown = time.Duration(ep.cd.interval.Load())
		}
	}
	if up != nil {
		a.Upstream, a.Budget, a.CallEstimate = up.key, up.full, time.Duration(up.callEstimate())
		a.Units = ep.units(up.full.Requests)
		a.Backlog = up.backlog(now)
		a.Epoch, a.Rejoin = up.epoch, up.sw.switched() > 0
	}
	d, err := st.Admit(ctx, &a)
	if errors.Is(err, ErrStoreSlow) && ctx.Err() == nil {
		// slow, not down: once more (a call the store ran after all counts twice there,
		// on the safe side)
		d, err = st.Admit(ctx, &a)
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return Ticket{}, refusal{ctxErr: ctx.Err()}, false
		case errors.Is(err, ErrStoreSlow):
			// the others still spend the shared budgets through the store: this call
			// waits for it rather than take the fallback share on top
			return Ticket{}, refusal{kind: KindStore, scope: ScopeProxy, wait: int64(slowStoreWait), estimated: true}, false
		}
		sw.switchAt(now)
		return l.admitFallback(ep, up, req, now, charge)
	}
	sw.onStore()
	if up != nil {
		up.unsynced = up.unsynced[:0] // written with this admission
		up.observeShared(d, now)
		if up.foundReset(d.Epoch, now) && !grace && d.OK && a.Charge {
			// this call was charged before the reset was known: it keeps to the share too
			if lr, _ := up.checkLocked(ep, req, now); lr.wait > 0 {
				if d.Lease != "" {
					_ = st.Release(detached(), up.key, d.Lease) // on error the lease ends by its TTL
				}
				return Ticket{}, lr, false
			}
		}
	}
	rf := lrf
	if !d.OK {
		rf.decision(d, ep, up)
	}
	if rf.wait > 0 {
		return Ticket{}, rf, false
	}
	if !charge {
		return Ticket{}, rf, true
	}
	// mirror the admission locally, so the fallback share counts it if the store goes away
	var t Ticket
	if ep != nil && !req.Retry {
		ep.cd.last.Store(max(ep.cd.last.Load(), now))
	}
	if up != nil {
		t = up.chargeLocked(ep, req, now)
	} else {
		if ep != nil {
			ep.cd.admitted.Add(1)
		}
		t = Ticket{ep: ep, admitted: now}
	}
	t.sh = &sharedTicket{store: st, lease: d.Lease, bucket: d.Bucket, at: d.Now}
	if up != nil {
		t.sh.upstream, t.sh.span = up.key, time.Duration(up.full.span())
	}
	return t, rf, true
}

// admitFallback admits on local state alone, on the fallback share.
func (l *Limiter) admitFallback(ep *endpoint, up *upstream, req Request, now int64, charge bool) (Ticket, refusal, bool) {
	var t Ticket
	var rf refusal
	var ok bool
	if up != nil {
		if w, kind, allow := l.switchHold(up, ep, req.Tokens, now); w > 0 {
			rf, _ = up.checkLocked(ep, req, now)
			if rf.consider(kind, ScopeProxy, w) {
				rf.limit, rf.window = allow, up.budget.Window
			}
			return Ticket{}, rf, false
		}
		t, rf, ok = up.admitLocked(ep, req, now, charge)
		if ok && charge {
			n := ep.units(up.budget.Requests)
			up.seenReq.after += int64(n)
			up.seenTok.after += max(req.Tokens, 0)
			if up.full.Requests > 0 {
				for len(up.unsynced) > 0 && now-up.unsynced[0] >= up.full.span() {
					up.unsynced = up.unsynced[1:]
				}
				for range n {
					up.unsynced = append(up.unsynced, now)
				}
			}
		}
	} else {
		t, rf, ok = admitCooldown(ep, req, now, charge, l.share)
	}
	if ok && charge {
		lf := &l.lastFallback
		if up != nil {
			lf = &up.lastFallback
		}
		for {
			last := lf.Load()
			if last >= now || lf.CompareAndSwap(last, now) {
				break
			}
		}
	}
	return t, rf, ok
}

// storeUp is switchClock's value while its owner runs on its store.
const storeUp = -1

// switchClock records when its owner (an upstream, a Window) last moved from its store to
// the fallback share: unix nanoseconds of the owner's now; storeUp while on the store;
// zero while the store has never answered: then there is no switch to account for.
type switchClock struct{ at atomic.Int64 }

// start is the clock of an owner whose store answered (up) or not when it was made.
func (c *switchClock) start(up bool) {
	if up {
		c.at.Store(storeUp)
	}
}

// onStore records that the store answers (or says it does).
func (c *switchClock) onStore() {
	if c.at.Load() != storeUp {
		c.at.Store(storeUp)
	}
}

// switchAt records now as the switch to the fallback share, if the owner was on its
// store until now; a store that never answered leaves no switch to account for.
func (c *switchClock) switchAt(now int64) {
	if c.at.Load() == storeUp {
		c.at.CompareAndSwap(storeUp, max(now, 1))
	}
}

// switched is the last switch to the fallback share; zero or less: none to account for.
func (c *switchClock) switched() int64 { return c.at.Load() }

// seenWindow is what the store last said of one shared window (the requests or tokens
// window of an upstream, the events of one key of a Window): count in it at at (unix
// nanoseconds of the owner's now; zero: never), and after, what this replica charged to it
// on its fallback share since. The caller guards it.
type seenWindow struct {
	count int64
	at    int64
	after int64
}

// see records that the store counted n in the window at now.
func (s *seenWindow) see(n, now int64) { *s = seenWindow{count: n, at: now} }

// hold is how long a charge of cost to a shared window of limit, spanning span, waits on
// the fallback share just after the switch sw from the store, and the allowance meanwhile;
// holds is false, and wait zero, when the hold does not apply (no switch, or past it).
// part is the window's own fallback share of limit, floor(share × limit) at least 1; cost
// is at most part.
//
// The local state holds only this replica's own charges, but for one window after the
// switch the shared window still holds the other replicas' charges made through the store.
// So for one window after it last saw the shared window (count of limit, shortly before
// the switch) a replica allows floor(share × (limit - count)): none when that window was
// full, part (at least 1) only when it was empty. What it saw ages with the clock: when
// that window had passed by the switch (the upstream idle since, as far as this replica
// knows), it runs on the plain share at once, rather than hold a window for calls it has
// no sign of. With unseenHolds, a replica that never saw the window must assume it full:
// it allows none until one window after the switch; without, it runs on the plain share.
func (s *seenWindow) hold(sw, span, now, limit, part, cost int64, share float64, unseenHolds bool) (wait, allow int64, holds bool) {
	if sw <= 0 || limit <= 0 || now >= sw+span {
		return 0, 0, false
	}
	if s.at == 0 {
		if !unseenHolds {
			return 0, 0, false
		}
		return sw + span - now, 0, true
	}
	if s.at+span <= sw {
		// what it saw has aged out of the window by the switch: the shared window it
		// knew of is over, and the replica runs on its plain share at once
		return 0, 0, false
	}
	until := s.at + span
	if now >= until {
		return 0, 0, false
	}
	switch left := limit - s.count; {
	case s.count <= 0:
		allow = part
	case left > 0:
		allow = int64(math.Floor(share * float64(left)))
	}
	if s.after+cost <= allow {
		return 0, allow, true
	}
	return until - now, allow, true
}

// observeShared keeps what the store said of the upstream's shared windows; the caller
// holds u.mu.
func (u *upstream) observeShared(d Decision, now int64) {
	until := now + int64(d.RequestsFree)
	if !d.OK && d.Kind != KindCooldown {
		until = max(until, now+int64(d.Wait))
	}
	u.sharedUntil = until
	if u.full.Requests > 0 {
		u.seenReq.see(int64(d.Requests), now)
	}
	if u.full.Tokens > 0 {
		u.seenTok.see(d.Tokens, now)
	}
}

// backlog is what this replica admitted on its fallback share that the store has not
// counted, as ages at now, dropping what has left the requests window. A replica that
// never left the store, or a store that lost nothing, would count every replica's
// calls but these: after a flap, the replicas that ran on their shares meanwhile would
// have spent the window twice. The caller holds u.mu.
func (u *upstream) backlog(now int64) []time.Duration {
	if len(u.unsynced) == 0 {
		return nil
	}
	out := make([]time.Duration, 0, len(u.unsynced))
	for _, at := range u.unsynced {
		if age := now - at; age < u.full.span() && age >= 0 {
			out = append(out, time.Duration(age))
		}
	}
	return out
}

// foundReset records the store's epoch of the upstream's state and reports whether it
// changed since this replica last saw it: the store lost its windows (a Redis that
// restarted empty), and with them what every replica admitted on its fallback share while
// it was away, which this replica cannot see. So for one window from now this replica keeps
// to its share as if it had run on it (see inGrace), as every replica does once it finds
// the new epoch: together they stay within the budget. The caller holds u.mu.
func (u *upstream) foundReset(epoch, now int64) bool {
	if epoch == 0 {
		return false
	}
	prev := u.epoch
	u.epoch = epoch
	if prev == 0 || prev == epoch {
		return false
	}
	for {
		last := u.lastFallback.Load()
		if last >= now || u.lastFallback.CompareAndSwap(last, now) {
			return true
		}
	}
}

// settleSeen counts, in what this replica charged the shared tokens window since it last
// saw it, a settle of delta tokens the store does not know of: any settle of a call
// admitted on the fallback share since, and more tokens charged while the store is
// unreachable. The caller holds u.mu.
func (u *upstream) settleSeen(t *Ticket, delta int64) {
	switch {
	case t.sh == nil && u.seenTok.at != 0 && t.admitted >= u.seenTok.at:
		u.seenTok.after = max(u.seenTok.after+delta, 0)
	case t.sh != nil && delta > 0 && !u.store.Available(u.key):
		u.seenTok.after += delta
	}
}

// tokenCost is what a call of tokens counts against the token budget when checked: at
// least 1, at most the budget (such a call goes when the window is empty).
func tokenCost(tokens, limit int64) int64 { return min(max(tokens, 1), limit) }

// switchHold is how long up holds a call of tokens on the fallback share just after the
// switch from the store, the budget that holds it (KindRequests, KindTokens) and its
// allowance meanwhile; zero wait when it does not. Each of the requests and tokens
// windows holds as seenWindow.hold says, counting this replica's fallback calls (tokens)
// since it last saw the shared window. The caller holds up.mu.
func (l *Limiter) switchHold(up *upstream, ep *endpoint, tokens, now int64) (wait int64, kind Kind, allow int64) {
	sw := up.sw.switched()
	if sw <= 0 {
		return 0, "", 0
	}
	if n := int64(up.full.Requests); n > 0 {
		if w, a, _ := up.seenReq.hold(sw, up.span, now, n, int64(up.budget.Requests), int64(ep.units(up.budget.Requests)), l.share, true); w > 0 {
			wait, kind, allow = w, KindRequests, a
		}
	}
	if n := up.full.Tokens; n > 0 {
		part := up.budget.Tokens
		if w, a, _ := up.seenTok.hold(sw, up.span, now, n, part, tokenCost(tokens, part), l.share, true); w > wait {
			wait, kind, allow = w, KindTokens, a
		}
	}
	return wait, kind, allow
}

// readyLocal is ReadyAt with a Store, answered from this replica's own state without
// asking the store: a hint. While the store answers it is the endpoint's cooldown since
// this replica's last call, the minimum interval since its last call to the upstream,
// what the upstream said, and how long the store last said the upstream was held (its
// requests window full, or a refusal); on the fallback share it is the fallback's own
// check.
func (l *Limiter) readyLocal(ep *endpoint, up *upstream, now int64) int64 {
	var rf refusal
	var avail bool
	switch {
	case up != nil:
		avail = l.store.Available(up.key)
	case ep != nil:
		avail = l.store.Available(ep.id)
	}
	if up == nil {
		if ep != nil {
			share := 1.0
			if !avail || l.inGrace(ep, nil, now) {
				share = l.share
			}
			rf.wait = ep.cd.waitShare(ep.cd.last.Load(), now, share)
		}
		return max(rf.wait, 0)
	}
	req := Request{}
	if ep != nil {
		req.Endpoint = ep.id
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	switch {
	case !avail:
		rf, _ = up.checkLocked(ep, req, now)
		w, kind, _ := l.switchHold(up, ep, 0, now)
		rf.consider(kind, ScopeProxy, w)
		return max(rf.wait, 0)
	case l.inGrace(ep, up, now):
		rf, _ = up.checkLocked(ep, req, now)
	default:
		if ep != nil {
			rf.consider(KindCooldown, ScopeProxy, ep.cd.wait(ep.cd.last.Load(), now))
		}
		up.checkLearnedLocked(ep, req, now, &rf)
		if mi := int64(up.full.MinInterval); mi > 0 && up.lastAdmit != 0 {
			rf.consider(KindInterval, ScopeProxy, up.lastAdmit+mi-now)
		}
	}
	rf.consider(KindRequests, ScopeProxy, up.sharedUntil-now)
	return max(rf.wait, 0)
}

// inGrace reports whether this replica ran on its fallback share recently enough that
// its local admissions still count in some window of ep or up: calls to up (its own
// clock: with a cluster, other upstreams may never have left the store), else calls
// with no upstream.
func (l *Limiter) inGrace(ep *endpoint, up *upstream, now int64) bool {
	last := l.lastFallback.Load()
	if up != nil {
		last = up.lastFallback.Load()
	}
	if last == 0 {
		return false
	}
	var g int64
	if up != nil {
		g = max(up.span, int64(up.budget.MinInterval))
	}
	if ep != nil {
		g = max(g, stretch(ep.cd.interval.Load(), l.share))
	}
	return now-last < g
}

// decision folds a store's refusal into r, filling in what the local configuration knows.
func (r *refusal) decision(d Decision, ep *endpoint, up *upstream) {
	w := max(int64(d.Wait), 1)
	if d.Cooldown {
		r.cooldown = true
	}
	if !r.consider(d.Kind, d.Scope, w) {
		return
	}
	switch d.Kind {
	case KindCooldown:
		if ep != nil {
			r.interval = time.Duration(ep.cd.interval.Load())
		}
	case KindLearned:
		r.source = d.Source
	}
	if up == nil {
		return
	}
	b := &up.full
	switch d.Kind {
	case KindRequests:
		r.limit, r.window = int64(b.Requests), b.Window
	case KindTokens:
		r.limit, r.window = b.Tokens, b.Window
	case KindInterval:
		r.interval = b.MinInterval
	case KindConcurrency:
		r.limit, r.estimated = int64(b.MaxConcurrent), true
	}
}

// Degraded reports whether the limiter's shared Store is unreachable, so that this
// replica runs on its fallback share, since when and why. Always false without a Store.
func (l *Limiter) Degraded() (degraded bool, since time.Time, reason string) {
	if l.store == nil {
		return false, time.Time{}, ""
	}
	return l.store.Degraded()
}

// FallbackShare is the share of each budget this replica runs on while its
// shared store is unreachable; 1 without a shared store.
func (l *Limiter) FallbackShare() float64 {
	if l.store == nil {
		return 1
	}
	return l.store.FallbackShare()
}

// shareBlock tells the store what a rate-limited answer (or an advertised remaining of
// zero) means for every replica: no call to that quota until the retry time or reset.
func shareBlock(st Store, upstream string, sig Signal, now time.Time) {
	until, src := time.Time{}, sig.Source
	if sig.RateLimited {
		until = now.Add(minBlock)
		if sig.RetryAt.After(until) {
			until = sig.RetryAt
		} else {
			for _, q := range []Quota{sig.Requests, sig.Tokens} {
				if q.HasRemaining && q.Remaining == 0 && q.Reset.After(until) {
					until, src = q.Reset, q.Source
				}
			}
		}
	} else if q := sig.Requests; q.HasRemaining && q.Remaining == 0 && q.Reset.After(now) {
		until, src = q.Reset, q.Source
	}
	if until.IsZero() {
		return
	}
	_ = st.Block(detached(), upstream, sig.Resource, until.Sub(now), src) // on error the store is marked down
}
