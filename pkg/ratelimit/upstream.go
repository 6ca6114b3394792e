package ratelimit

import (
	"sync"
	"sync/atomic"
	"time"
)

// upstream is the state of one upstream: its budget's logs, what it has said, its queue and
// its counters. Everything is guarded by mu; admission is one critical section.
type upstream struct {
	mu         sync.Mutex
	key        string
	budget     Budget // with defaults filled in, scaled to share
	full       Budget // with defaults filled in, as configured
	configured bool   // a Budget was given for it
	span       int64  // window plus pad, nanoseconds
	// share is the part of each budget this state may use: 1 in memory; with a shared
	// Store, the fallback share, used only while the store is unreachable (and just after).
	// Cooldowns and minimum intervals stretch by 1/share.
	share float64
	store Store // nil: memory

	reqs      requestLog
	toks      tokenBuckets
	lastAdmit int64 // unix nanoseconds; zero: never
	inflight  int
	unheard   int   // calls in flight whose answer has not been heard yet (Ticket.ObserveAt)
	avgCall   int64 // moving mean of call durations, nanoseconds; zero: none finished yet

	// With a Store: what it last said of the shared requests and tokens windows, with the
	// calls and tokens this replica charged on its fallback share since, and that calls
	// were held until sharedUntil. See Limiter.switchHold and readyLocal.
	seenReq     seenWindow
	seenTok     seenWindow
	sharedUntil int64
	// sw is when this upstream last moved from the store to the fallback share: with
	// Redis Cluster, only the upstreams on an unreachable slot do.
	sw switchClock
	// lastFallback is when this replica last admitted a call to it on the fallback
	// share, or found that the store had lost its state (see foundReset), unix
	// nanoseconds; zero: never.
	lastFallback atomic.Int64
	epoch        int64 // the store's epoch of this upstream's state, last seen; zero: none
	// unsynced holds when each request unit admitted on the fallback share was charged,
	// until an admission through the store writes them there (see backlog).
	unsynced []int64

	shadow  *shadowState  // the budget's shadow, when Budget.Shadow; nil: none
	adapt   *adaptive     // the adaptive concurrency limit, when Budget.Adaptive; nil: none
	pp      *Window       // each principal's share, when Budget.PerPrincipal; nil: none
	learned []*learnedSet // index 0, when present, may be any resource
	queue   []*waiter
	// the fair queue's state: see join
	vtime      float64
	finish     map[string]float64
	seq        uint64
	serveSeq   uint64
	lastServed map[string]uint64

	// recent holds the times of the last admissions, the one numbered n (admitted after
	// it was charged) at n % recentCap: what a rate-limited answer with no advertised
	// quota infers a budget from, and what that budget is checked against.
	recent [recentCap]int64

	admitted     int64
	refused      [numKinds]int64
	queueFull    int64
	queueTimeout int64
	limited      int64 // rate-limited answers seen (429s and rate-limit 403s)
}

const numKinds = 7

func kindIndex(k Kind) int {
	switch k {
	case KindCooldown:
		return 0
	case KindRequests:
		return 1
	case KindTokens:
		return 2
	case KindInterval:
		return 3
	case KindConcurrency:
		return 4
	case KindStore:
		return 6
	default:
		return 5
	}
}

var kinds = [numKinds]Kind{KindCooldown, KindRequests, KindTokens, KindInterval, KindConcurrency, KindLearned, KindStore}

func (u *upstream) name() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.key
}

// configure applies b, keeping all state; wake re-examines waiting calls.
func (u *upstream) configure(b Budget, wake bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.configured = b.Match != ""
	u.setShadow(b)
	u.full = b.enforced().withDefaults()
	u.budget = u.full.scaled(u.share)
	u.setAdaptive(b)
	u.setPerPrincipal(b)
	u.span = u.budget.span()
	if u.budget.Requests > 0 {
		u.reqs.resize(u.budget.Requests)
	}
	if u.budget.Tokens > 0 {
		u.toks.setSpan(u.span)
	}
	if wake {
		u.wakeHead()
	}
}

// admitLocked checks every limit at now and, with charge, charges them all if all pass.
// It does not count refusals: only the caller knows whether one is final (countRefusal).
func (u *upstream) admitLocked(ep *endpoint, req Request, now int64, charge bool) (Ticket, refusal, bool) {
	rf, last := u.checkLocked(ep, req, now)
	if rf.wait > 0 {
		return Ticket{}, rf, false
	}
	if !charge {
		return Ticket{}, rf, true
	}
	if ep != nil && !req.Retry && !ep.cd.last.CompareAndSwap(last, now) {
		// the endpoint was admitted through another upstream key meanwhile
		rf.cooldownOf(ep, max(ep.cd.waitShare(ep.cd.last.Load(), now, u.share), 1))
		return Ticket{}, rf, false
	}
	return u.chargeLocked(ep, req, now), rf, true
}

// checkLocked checks every limit at now, charging nothing; last is the endpoint's last
// admission it saw, for the compare-and-swap that charges the cooldown.
func (u *upstream) checkLocked(ep *endpoint, req Request, now int64) (rf refusal, last int64) {
	if ep != nil && !req.Retry {
		last = ep.cd.last.Load()
		if w := ep.cd.waitShare(last, now, u.share); w > 0 {
			rf.cooldownOf(ep, w)
		}
	}
	u.checkLearnedLocked(ep, req, now, &rf)
	b := &u.budget
	if b.Requests > 0 {
		if rf.consider(KindRequests, ScopeProxy, u.reqs.waitN(now, u.span, ep.units(b.Requests))) {
			rf.limit, rf.window = int64(b.Requests), b.Window
		}
	}
	if b.Tokens > 0 {
		if rf.consider(KindTokens, ScopeProxy, u.toks.wait(now, u.span, b.Tokens, max(req.Tokens, 1))) {
			rf.limit, rf.window = b.Tokens, b.Window
		}
	}
	if b.MinInterval > 0 && u.lastAdmit != 0 {
		if rf.consider(KindInterval, ScopeProxy, u.lastAdmit+int64(b.MinInterval)-now) {
			rf.interval = b.MinInterval
		}
	}
	if b.MaxConcurrent > 0 && u.inflight >= b.MaxConcurrent {
		if rf.consider(KindConcurrency, ScopeProxy, u.callEstimate()) {
			rf.limit, rf.estimated = int64(b.MaxConcurrent), true
		}
	}
	return rf, last
}

// checkLearnedLocked checks what the upstream said (learned blocks and quotas) at now.
func (u *upstream) checkLearnedLocked(ep *endpoint, req Request, now int64, rf *refusal) {
	res := ep.resourceName()
	for _, s := range u.learned {
		if s.resource != "" && s.resource != res {
			continue
		}
		s.check(rf, now, req.Tokens)
		if s.probeSeq != 0 && rf.consider(KindLearned, ScopeUpstream, u.callEstimate()) {
			// the probe after a block is in flight: its answer, not a clock, ends the wait
			rf.source, rf.estimated = s.blockSource, true
		}
		if s.conc.limit > 0 {
			if now >= s.conc.until {
				s.conc = inferredInFlight{}
			} else if u.inflight >= s.conc.limit && rf.consider(KindLearned, ScopeUpstream, u.callEstimate()) {
				rf.source, rf.limit, rf.estimated = s.conc.source, int64(s.conc.limit), true
			}
		}
		if s.inf.limit > 0 {
			if now >= s.inf.until {
				s.inf = inferredBudget{}
			} else if rf.consider(KindLearned, ScopeUpstream, u.recentWait(now, s.inf.limit, s.inf.window+int64(u.budget.WindowPad))) {
				rf.source, rf.limit, rf.window = s.inf.source, s.inf.limit, time.Duration(s.inf.window)
			}
		}
	}
}

// recentCap is how many admission times an upstream keeps, so the most calls per window
// a rate-limited answer can teach is recentCap-1.
const recentCap = 256

// recentWait is how long after now a call waits so that no rolling span holds more than
// limit admissions; zero when it may go now.
func (u *upstream) recentWait(now, limit, span int64) int64 {
	if limit <= 0 || limit >= recentCap {
		return 0
	}
	n := u.admitted - limit + 1 // the limit-th most recent admission
	if n < 1 {
		return 0
	}
	return max(u.recent[n%recentCap]+span-now, 0)
}

// admittedBefore counts the calls admitted before the one numbered seq, at or after from;
// ok is false when the admissions kept do not reach back that far.
func (u *upstream) admittedBefore(seq, from int64) (n int64, ok bool) {
	oldest := max(u.admitted-recentCap+1, 1)
	if seq < oldest || seq > u.admitted {
		return 0, false
	}
	for i := seq - 1; i >= oldest; i-- {
		if u.recent[i%recentCap] >= from {
			n++
		}
	}
	if oldest > 1 && u.recent[oldest%recentCap] >= from {
		return n, false // older calls may fall in the span too
	}
	return n, true
}

// chargeLocked charges an admitted call at now to every budget and learned quota; the
// endpoint's cooldown is the caller's.
func (u *upstream) chargeLocked(ep *endpoint, req Request, now int64) Ticket {
	t := Ticket{up: u, ep: ep, admitted: now, tokens: req.Tokens}
	b := &u.budget
	if b.Requests > 0 {
		for range ep.units(b.Requests) {
			u.reqs.add(now)
		}
	}
	if b.Tokens > 0 && req.Tokens > 0 {
		t.bucket = u.toks.add(now, req.Tokens)
	}
	u.admitted++
	t.seq = u.admitted
	u.recent[t.seq%recentCap] = now
	res := ep.resourceName()
	for _, s := range u.learned {
		if s.resource == "" || s.resource == res {
			s.charge(req.Tokens)
			if s.probe && s.probeSeq == 0 && now >= s.blockUntil {
				s.probeSeq = t.seq // the first call after a block probes; the rest wait for it
			}
		}
	}
	u.countShadowLocked(&t, now)
	u.lastAdmit = max(u.lastAdmit, now)
	t.ahead = u.inflight
	u.inflight++
	u.unheard++
	if ep != nil {
		ep.cd.admitted.Add(1)
	}
	return t
}

// countRefusal counts a final refusal.
func (u *upstream) countRefusal(ep *endpoint, rf *refusal) {
	u.refused[kindIndex(rf.kind)]++
	if ep != nil {
		ep.cd.refused.Add(1)
	}
}

func (ep *endpoint) resourceName() string {
	if ep == nil {
		return ""
	}
	if p := ep.resources().Load(); p != nil {
		return *p
	}
	return ""
}

// callEstimate guesses how long until a call in flight ends: the moving mean of recent
// call durations, one second before any has finished.
func (u *upstream) callEstimate() int64 {
	if u.avgCall <= 0 {
		return int64(time.Second)
	}
	return max(u.avgCall, int64(time.Millisecond))
}

func (u *upstream) release(took int64) {
	if u.inflight > 0 {
		u.inflight--
	}
	if took <= 0 {
		return
	}
	if u.avgCall == 0 {
		u.avgCall = took
	} else {
		u.avgCall += (took - u.avgCall) / 8
	}
}

func (u *upstream) settle(t *Ticket, actual, now int64) {
	delta := actual - t.tokens
	if delta == 0 {
		return
	}
	if u.budget.Tokens > 0 {
		if delta > 0 {
			u.toks.add(now, delta)
		} else if t.bucket != 0 {
			u.toks.refund(t.bucket, -delta)
		}
	}
	if delta > 0 {
		res := t.ep.resourceName()
		for _, s := range u.learned {
			if s.resource == "" || s.resource == res {
				s.tok.spend(delta)
			}
		}
	}
}

// endProbe ends the probe numbered seq, released without an answer: the next call probes.
func (u *upstream) endProbe(seq int64) {
	for _, s := range u.learned {
		if seq != 0 && s.probeSeq == seq {
			s.probeSeq = 0
		}
	}
}

// wakeHead nudges the first waiting call to look again.
func (u *upstream) wakeHead() {
	if len(u.queue) > 0 {
		u.queue[0].nudge()
	}
}

// maxResources bounds the quotas learned per upstream (GitHub has about ten).
const maxResources = 16

func (u *upstream) set(resource string) *learnedSet {
	for _, s := range u.learned {
		if s.resource == resource {
			return s
		}
	}
	if len(u.learned) >= maxResources {
		return nil
	}
	s := &learnedSet{resource: resource}
	u.learned = append(u.learned, s)
	return s
}

// minBlock is how long a rate-limited answer without a usable retry time blocks.
const minBlock = time.Second

// answer is the call an upstream's answer belongs to.
type answer struct {
	seq    int64 // its admission number; zero: unknown
	sent   int64 // when it was admitted, unix nanoseconds
	others int   // calls admitted after it still in flight, which the upstream may not have counted yet in its remaining
	ahead  int   // calls in flight when it was admitted
	// waiting is how many other calls still waited for their answers when this one's
	// came: the most that can have been at the upstream with it, whatever order the
	// calls reached it in. Zero: none, or not known.
	waiting int
}

// bound is the most calls in flight a rate-limited answer to a says the upstream allows:
// the calls still waiting for their answers when it came, which counts a call admitted
// after it that reached the upstream first and leaves out one ahead of it already
// refused (ahead alone does neither), or ahead when none were still waiting.
func (a answer) bound() int {
	if a.waiting > 0 {
		return a.waiting
	}
	return a.ahead
}

// learn applies sig, the upstream's answer to the call a, seen at now.
func (u *upstream) learn(ep *endpoint, sig Signal, a answer, now int64) {
	res := sig.Resource
	if ep != nil && res != "" && res != ep.resourceName() {
		r := res
		ep.resources().Store(&r)
	}
	// the probe's answer releases the calls held for it, unless it was refused as well
	for _, s := range u.learned {
		if a.seq != 0 && s.probeSeq == a.seq {
			s.probeSeq = 0
			s.probe = sig.RateLimited
		}
	}
	if sig.RateLimited {
		u.limited++
	}
	if !sig.RateLimited && sig.Requests.empty() && sig.Tokens.empty() {
		return
	}
	if u.tooManyInFlight(sig, a) {
		return
	}
	s := u.set(res)
	if s == nil {
		if s = u.set(""); s == nil {
			return
		}
	}
	s.req.update(sig.Requests, int64(max(a.others, 0)), a.sent, now)
	s.tok.update(sig.Tokens, 0, a.sent, now)
	if !sig.RateLimited {
		return
	}
	until, src := now+int64(minBlock), sig.Source
	if t := unixNano(sig.RetryAt); t > until {
		until = t
	} else {
		for _, q := range []Quota{sig.Requests, sig.Tokens} {
			if t := unixNano(q.Reset); q.HasRemaining && q.Remaining == 0 && t > until {
				until, src = t, q.Source
			}
		}
	}
	if until > s.blockUntil {
		s.blockUntil, s.blockSource = until, src
	}
	s.probe = true
	if !sig.Requests.empty() {
		return
	}
	u.infer(s, a, until-now, src, now)
}

// tooManyInFlight reports whether sig, the answer to the call a, says only that too many
// calls were in flight, to an adaptive limit: a bare rate-limited answer (no retry time,
// no quota) to a call sent with others in flight. The adaptive limit halves for it
// (adapt429); nothing blocks the upstream and no budget is inferred. A block of a second
// and a requests budget inferred from each such 429 starved an upstream that allows 8 in
// flight to a fifth of what it serves, and the adaptive probe past its ceiling kept that
// budget alive. The caller holds u.mu.
func (u *upstream) tooManyInFlight(sig Signal, a answer) bool {
	return sig.RateLimited && u.adapt != nil && a.ahead > 0 && sig.RetryAt.IsZero() &&
		sig.Requests.empty() && sig.Tokens.empty()
}

// minInFlightLife is the least time a limit on calls in flight inferred from a
// rate-limited answer lasts after the last of them: an upstream's in-flight limit is a
// property of its servers, not of a window, and each lapse costs a burst of 429s.
const minInFlightLife = time.Minute

// inferInFlight learns from a rate-limited answer with no advertised quota, to a call a
// admitted while others were in flight, that the upstream allows at most that many in
// flight, for inferredLife blocks, at least minInFlightLife. Each refusal says the
// upstream allows no more than were ahead of its call, so a refusal with fewer ahead
// lowers it, whether it came from the burst that taught it (whose answers can be heard
// in any order: the fourth call's refusal, 3 ahead, before the third's, 2 ahead) or from
// a call admitted after; only the latter moves after, the mark of the burst.
func (u *upstream) inferInFlight(s *learnedSet, a answer, block int64, src string, now int64) {
	c := &s.conc
	life := now + max(inferredLife*niceCeil(block), int64(minInFlightLife))
	if c.limit > 0 && now < c.until {
		c.until = max(c.until, life)
		if a.bound() < c.limit {
			c.limit, c.source = a.bound(), src
			if a.seq > c.after {
				c.after = u.admitted
			}
		}
		return
	}
	*c = inferredInFlight{limit: a.bound(), until: life, after: u.admitted, source: src}
}

// inferredLife is how many windows a budget inferred from rate-limited answers lasts after
// the last of them.
const inferredLife = 10

// infer learns a requests budget from a rate-limited answer that advertised no quota: the
// calls admitted in the window before the refused one (the window is the block rounded up
// to a usual length) are taken as what the upstream allows per window. When all of them
// were still in flight as it was sent, it learns a limit on calls in flight instead
// (inferInFlight). A later refusal
// only lowers it; it is dropped inferredLife windows after the last refusal.
func (u *upstream) infer(s *learnedSet, a answer, block int64, src string, now int64) {
	if a.seq == 0 {
		return
	}
	window := niceCeil(block)
	live := s.inf.limit > 0 && now < s.inf.until
	if live {
		window = max(window, s.inf.window)
	}
	n, ok := u.admittedBefore(a.seq, a.sent-window)
	// a call refused with others ahead of it while a limit on calls in flight is held
	// and it was sent past that limit's edge says the limit is lower, not that there is
	// a budget a window as well
	conc := s.conc.limit > 0 && now < s.conc.until && a.ahead > 0 && a.bound() < s.conc.limit
	if conc || ok && a.ahead > 0 && n <= int64(a.ahead) {
		// every call of the window was still in flight: the upstream's limit on calls in
		// flight explains the refusal, and a budget of n a window would pace it to a
		// fraction of what it serves
		u.inferInFlight(s, a, block, src, now)
		if live {
			s.inf.until = now + inferredLife*window
		}
		return
	}
	if !ok || n == 0 {
		if live {
			s.inf.until = now + inferredLife*window // still refused: keep what was learned
		}
		return
	}
	if live && window == s.inf.window {
		n = min(n, s.inf.limit)
	}
	s.inf = inferredBudget{limit: n, window: window, until: now + inferredLife*window, source: src}
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// learnedSet is what one upstream quota (or the upstream as a whole) has said.
type learnedSet struct {
	resource    string
	blockUntil  int64 // a rate-limited answer blocks until then
	blockSource string
	// After a rate-limited answer the first call once the block ends is a probe; the
	// others wait for its answer.
	probe    bool
	probeSeq int64 // admission number of the probe in flight; zero: none
	req, tok learnedWindow
	inf      inferredBudget
	conc     inferredInFlight
}

// inferredInFlight is a limit on calls in flight inferred from rate-limited answers that
// advertised no quota, to calls admitted while others were in flight: at most limit in
// flight, until until. An upstream that allows 2 in flight refuses the third at once,
// whatever the rate; a requests budget inferred from that refusal would pace every
// later call to 2 a window, and the burst after it lapsed would meet a 429 again.
type inferredInFlight struct {
	limit  int
	until  int64 // unix nanoseconds
	after  int64 // admissions up to this number cannot lower it: one burst lowers it once
	source string
}

// inferredBudget is a requests budget inferred from rate-limited answers that advertised
// no quota: at most limit admissions to the upstream in any rolling window (plus the
// budget's pad), until until.
type inferredBudget struct {
	limit  int64
	window int64 // nanoseconds
	until  int64 // unix nanoseconds
	source string
}

func (s *learnedSet) check(rf *refusal, now, tokens int64) {
	if rf.consider(KindLearned, ScopeUpstream, s.blockUntil-now) {
		rf.source = s.blockSource
	}
	if w, ok := s.req.wait(now, 1); ok && rf.consider(KindLearned, ScopeUpstream, w) {
		rf.source, rf.limit, rf.window = s.req.source, s.req.limit, time.Duration(s.req.window)
	}
	if tokens > 0 {
		if w, ok := s.tok.wait(now, tokens); ok && rf.consider(KindLearned, ScopeUpstream, w) {
			rf.source, rf.limit, rf.window = s.tok.source, s.tok.limit, time.Duration(s.tok.window)
		}
	}
}

func (s *learnedSet) charge(tokens int64) {
	s.req.spend(1)
	if tokens > 0 {
		s.tok.spend(tokens)
	}
}

// learnedWindow is an advertised quota: limit per window, what remains until the reset.
// It is a fixed window ending at reset; once the reset passes and the limit and window are
// known, the next window starts with the full limit.
type learnedWindow struct {
	limit        int64
	remaining    int64
	hasRemaining bool
	reset        int64 // unix nanoseconds; zero: not known
	window       int64 // nanoseconds; zero: not known
	windowTold   bool  // the upstream stated the window (not inferred from a reset)
	source       string
}

func (w *learnedWindow) roll(now int64) {
	if w.reset == 0 || now < w.reset {
		return
	}
	if w.limit > 0 && w.window > 0 {
		w.reset += ((now-w.reset)/w.window + 1) * w.window
		w.remaining, w.hasRemaining = w.limit, true
		return
	}
	w.reset, w.hasRemaining = 0, false
}

// wait reports how long a call of cost must wait, and whether it must.
func (w *learnedWindow) wait(now, cost int64) (int64, bool) {
	w.roll(now)
	if !w.hasRemaining || w.reset == 0 {
		return 0, false
	}
	if w.limit > 0 {
		cost = min(cost, w.limit)
	}
	if w.remaining >= cost {
		return 0, false
	}
	return w.reset - now, true
}

func (w *learnedWindow) spend(n int64) {
	if w.hasRemaining {
		w.remaining = max(w.remaining-n, 0)
	}
}

// update takes in an advertised quota q seen at now in the answer to a call sent at sent,
// less others calls in flight. Within one window the remaining only goes down: answers
// arrive out of order.
func (w *learnedWindow) update(q Quota, others, sent, now int64) {
	if q.empty() {
		return
	}
	w.roll(now)
	reset := unixNano(q.Reset)
	if reset <= now {
		reset = 0
	}
	if q.Limit > 0 {
		w.limit = q.Limit
	}
	if q.Window > 0 {
		w.window, w.windowTold = int64(q.Window), true
	} else if !w.windowTold && reset != 0 && w.limit > 0 {
		if inferred := inferWindow(reset, sent, now); inferred > w.window {
			w.window = inferred
		}
	}
	if q.HasRemaining {
		r := max(q.Remaining-others, 0)
		sameWindow := w.hasRemaining && w.reset != 0 && (reset == 0 || abs(reset-w.reset) < int64(time.Second))
		if sameWindow && w.remaining < r {
			r = w.remaining
		}
		w.remaining, w.hasRemaining = r, true
	}
	if reset != 0 {
		w.reset = reset
	}
	w.source = q.Source
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// niceWindows are the window lengths upstreams use; a window inferred from a reset is
// rounded up to one of them.
var niceWindows = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
	30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour,
	12 * time.Hour, 24 * time.Hour,
}

// inferWindow guesses the window of a quota from its reset, said in the answer to a call
// sent at sent and seen at now. The upstream counted the call in between, so when it
// restarts the window at each call the window lies between reset-now and reset-sent; a
// reset in whole seconds was likely rounded up, by up to a second. The guess is the
// longest usual window length in that range, else the next usual length above it: never
// shorter than what the reset allows, nor a second longer for the rounding alone.
func inferWindow(reset, sent, now int64) int64 {
	lo, hi := reset-now, reset-now
	if sent > 0 && sent < now {
		hi = reset - sent
	}
	if reset%int64(time.Second) == 0 {
		lo -= int64(time.Second)
	}
	var best int64
	for _, n := range niceWindows {
		if int64(n) >= lo && int64(n) <= hi {
			best = int64(n)
		}
	}
	if best == 0 {
		best = niceCeil(lo)
	}
	return best
}

func niceCeil(d int64) int64 {
	for _, n := range niceWindows {
		if int64(n) >= d {
			return int64(n)
		}
	}
	return d
}
