package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Limiter. The zero Options give a Limiter with no endpoints and no
// budgets: every call is admitted, and only what upstreams say (Ticket.Observe) holds calls.
type Options struct {
	// Endpoints are the endpoints whose cooldown is kept, each with its upstream. Only these
	// ids hold state; calls naming any other endpoint pass the cooldown.
	Endpoints []Endpoint
	// Budgets are the upstream budgets, by Match. Upstreams with no budget still learn from
	// their answers.
	Budgets []Budget
	// MaxUpstreams bounds the upstream keys that hold state; calls to further upstreams pass
	// with only their cooldown. Zero: 1024.
	MaxUpstreams int
	// ProgressInterval is how often Acquire reports progress while a call waits. Zero: 1s.
	ProgressInterval time.Duration
	// Store shares cooldowns, budgets, concurrency leases and learned blocks with other
	// replicas (see package redisstore). Nil: all state stays in this Limiter's memory.
	// The Limiter does not close it.
	Store Store
}

// Endpoint is one callable endpoint.
type Endpoint struct {
	// ID is the endpoint id (for example "petstore.getPetById"), the cooldown's key.
	ID string
	// Upstream is the key of the upstream it calls: host:port of its base URL, or the group
	// name its spec joins. Empty: no upstream budget and no learning, only the cooldown.
	Upstream string
	// Classes names the class budgets (set with SetBudget) each of its calls pays as well
	// as its upstream's; see classes.go.
	Classes []string
	// Cost is how many units of a requests budget each call charges (an upstream that
	// charges some endpoints more, as GitHub's search); 0 and 1 both mean one. A cost
	// above a budget's requests charges the whole budget.
	Cost int
	// Interval is the cooldown between two calls to this endpoint. Zero: no cooldown.
	Interval time.Duration
}

// Request describes one call to be admitted.
type Request struct {
	// Endpoint is the endpoint id. An id that was never registered has no cooldown.
	Endpoint string
	// Upstream overrides the endpoint's registered upstream key. Empty: the registered one.
	Upstream string
	// Tokens is the estimated size of the call in tokens (request plus expected response),
	// charged against token budgets when admitted; Ticket.Settle corrects it. Zero: the call
	// is charged nothing but is still held while a token budget is spent.
	Tokens int64
	// Retry marks a retry of a call already admitted once: the endpoint's
	// cooldown, charged by the first attempt, is neither checked nor charged
	// again. Budgets and learned limits apply as to any call.
	Retry bool
	// Progress, when not nil, is called by Acquire from the waiting goroutine as the call
	// enters the queue and every ProgressInterval while it waits.
	Progress func(Progress)
	// CooldownKey, when not empty, keeps the endpoint's cooldown for this key (the
	// endpoint and its arguments, as a script's calls are keyed) instead of for the
	// endpoint: the endpoint's interval applies to the key, and the endpoint's own last
	// admission is neither checked nor charged, so a loop over distinct arguments is paced
	// by the budgets while an identical repeat within the interval is refused. Empty: the
	// endpoint's cooldown, as for every direct call.
	CooldownKey string
	// Principal is who the call is made for. An upstream's wait queue serves the
	// principals waiting in turn (weighted by Budget.Weights), first come first served
	// within one, so one principal's burst does not hold the others back. It keys the
	// principal's share and its turns: two principals are one only if their keys are equal.
	Principal string
	// Subject is the name Budget.Weights weighs the principal by. Empty: Principal.
	Subject string
	// Background marks a call that a program makes (a script's), which waits behind the
	// direct calls of the same principal.
	Background bool
}

// Progress reports a call waiting in a queue.
type Progress struct {
	Waited   time.Duration // time spent in the queue so far
	Estimate time.Duration // estimated time left; zero when unknown
	Position int           // place in the queue, 1 for the next call to go
}

// EstimateTokens estimates the tokens of a payload of n bytes (about four bytes a token).
func EstimateTokens(n int) int64 { return int64(n+3) / 4 }

// Limiter governs calls to upstream APIs: per-endpoint cooldowns, upstream budgets, what it
// learns from the upstreams' answers, and a wait queue per upstream. A Limiter is safe for
// concurrent use. It starts no goroutines.
type Limiter struct {
	progressEvery time.Duration
	maxUpstreams  int
	cooldown      Cooldown
	argCooldowns  argCooldowns

	store        Store        // nil: memory
	share        float64      // of each budget while store is unreachable; 1 without a store
	lastFallback atomic.Int64 // unix nanoseconds of the last fallback admission with no upstream
	// sw is when calls with no upstream last moved from the store to the fallback share;
	// each upstream keeps its own (see switchHold). storeStarted is whether the store
	// answered when the Limiter was made: an upstream made later starts on it then.
	sw           switchClock
	storeStarted bool
	draining     atomic.Bool   // see Drain
	drained      chan struct{} // closed by Drain, for calls waiting outside a queue
	drainOnce    sync.Once

	endpoints atomic.Pointer[map[string]*endpoint]
	upstreams atomic.Pointer[map[string]*upstream] // by every key seen, several keys may share one

	mu      sync.Mutex // serialises writers of endpoints and upstreams; guards the fields below
	budgets map[string]Budget
	norm    map[string]string // budget Match by its normal form (see normalKey)
	nUp     int
}

// endpoint ties an endpoint id to its cooldown and upstream.
type endpoint struct {
	id string
	// argKey is the cooldown's key when it is kept per arguments (see
	// Request.CooldownKey); empty for a registered endpoint, whose key is id.
	argKey string
	// base is the registered endpoint an argument-keyed one stands for; nil
	// for a registered endpoint.
	base     *endpoint
	cd       *cooldownKey
	upKey    string // guarded by Limiter.mu
	up       atomic.Pointer[upstream]
	resource atomic.Pointer[string]   // the upstream quota its answers count against, once said
	classes  atomic.Pointer[[]string] // the class budgets it pays; nil: none
	cost     atomic.Int32             // Endpoint.Cost; see units
}

// units is what one call of ep charges a requests budget of limit: its cost, at least 1,
// at most the limit (a nil endpoint charges 1).
func (ep *endpoint) units(limit int) int {
	n := 1
	if ep != nil {
		if b := ep.base; b != nil {
			ep = b
		}
		n = max(int(ep.cost.Load()), 1)
	}
	if limit > 0 {
		n = min(n, limit)
	}
	return n
}

// maxCost bounds Endpoint.Cost.
const maxCost = 1000

// ErrUnknownEndpoint is returned when tuning an endpoint that was never registered.
var ErrUnknownEndpoint = errors.New("unknown endpoint")

// New returns a Limiter for opts, or the first configuration error.
func New(opts Options) (*Limiter, error) {
	l := &Limiter{
		progressEvery: opts.ProgressInterval,
		maxUpstreams:  opts.MaxUpstreams,
		budgets:       map[string]Budget{},
		norm:          map[string]string{},
		store:         opts.Store,
		share:         1,
		drained:       make(chan struct{}),
	}
	if l.store != nil {
		l.share = l.store.FallbackShare()
		if !(l.share > 0 && l.share <= 1) {
			return nil, fmt.Errorf("store fallback share %v is not in (0, 1]", l.share)
		}
		l.storeStarted = l.store.Available("")
		l.sw.start(l.storeStarted)
	}
	if l.progressEvery <= 0 {
		l.progressEvery = time.Second
	}
	if l.maxUpstreams <= 0 {
		l.maxUpstreams = 1024
	}
	for _, b := range opts.Budgets {
		if b.Match == "" {
			return nil, errors.New("budget has no match")
		}
		if err := b.Validate(); err != nil {
			return nil, err
		}
		if _, dup := l.budgets[b.Match]; dup {
			return nil, fmt.Errorf("budget %q is given twice", b.Match)
		}
		if other, dup := l.norm[normalKey(b.Match)]; dup {
			return nil, fmt.Errorf("budgets %q and %q name the same upstream", other, b.Match)
		}
		l.budgets[b.Match] = b
		l.norm[normalKey(b.Match)] = b.Match
	}
	if err := l.SetEndpoints(opts.Endpoints); err != nil {
		return nil, err
	}
	return l, nil
}

func checkEndpoint(e Endpoint) error {
	if e.ID == "" {
		return errors.New("endpoint has no id")
	}
	if e.Interval < 0 {
		return fmt.Errorf("endpoint %s: interval must not be negative", e.ID)
	}
	return nil
}

// SetEndpoints is SetEndpoint for each of es in order, but builds the limiter's maps once:
// registering n endpoints costs O(n), where n calls to SetEndpoint cost O(n²). It checks
// every endpoint before changing anything, so on error nothing is registered.
func (l *Limiter) SetEndpoints(es []Endpoint) error {
	for _, e := range es {
		if err := checkEndpoint(e); err != nil {
			return err
		}
	}
	if len(es) == 0 {
		return nil
	}
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cds := l.cooldown.entries(ids)

	oldUps := l.upstreams.Load()
	var ups map[string]*upstream // copy-on-write, made at the first new upstream key
	upstreamOf := func(key string) *upstream {
		if key == "" {
			return nil
		}
		if ups == nil {
			if oldUps != nil {
				if u := (*oldUps)[key]; u != nil {
					return u
				}
			}
			ups = copyMap(oldUps, 2)
		}
		return l.addUpstream(ups, key)
	}
	oldEps := l.endpoints.Load()
	var eps map[string]*endpoint // copy-on-write, made at the first new endpoint
	for i, e := range es {
		cds[i].interval.Store(int64(e.Interval))
		var ep *endpoint
		if eps != nil {
			ep = eps[e.ID]
		} else if oldEps != nil {
			ep = (*oldEps)[e.ID]
		}
		if ep == nil {
			if eps == nil {
				eps = copyMap(oldEps, len(es)-i)
			}
			ep = &endpoint{id: e.ID, cd: cds[i]}
			eps[e.ID] = ep
		}
		ep.upKey = e.Upstream
		ep.up.Store(upstreamOf(e.Upstream))
		ep.setClasses(e.Classes)
		ep.cost.Store(int32(min(max(e.Cost, 0), maxCost)))
	}
	if ups != nil {
		l.upstreams.Store(&ups)
	}
	if eps != nil {
		l.endpoints.Store(&eps)
	}
	return nil
}

// copyMap returns a copy of *m (nil: empty) with room for extra more keys.
func copyMap[V any](m *map[string]V, extra int) map[string]V {
	c := make(map[string]V, mapLen(m)+extra)
	if m != nil {
		for k, v := range *m {
			c[k] = v
		}
	}
	return c
}

// SetEndpoint registers an endpoint, or changes the cooldown interval and upstream of a
// registered one at once, keeping its last admission.
// Each new endpoint copies the endpoint map: to register many, use SetEndpoints.
func (l *Limiter) SetEndpoint(e Endpoint) error {
	if err := checkEndpoint(e); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cooldown.Set(e.ID, e.Interval)
	old := l.endpoints.Load()
	ep := l.lookupEndpoint(e.ID)
	if ep == nil {
		ep = &endpoint{id: e.ID, cd: l.cooldown.lookup(e.ID)}
		m := copyMap(old, 1)
		m[e.ID] = ep
		l.endpoints.Store(&m)
	}
	ep.upKey = e.Upstream
	ep.up.Store(l.upstreamLocked(e.Upstream))
	ep.setClasses(e.Classes)
	ep.cost.Store(int32(min(max(e.Cost, 0), maxCost)))
	return nil
}

// SetCooldown changes the cooldown interval of a registered endpoint at once, keeping its
// last admission. Zero turns its cooldown off.
func (l *Limiter) SetCooldown(endpointID string, interval time.Duration) error {
	if interval < 0 {
		return fmt.Errorf("endpoint %s: interval must not be negative", endpointID)
	}
	ep := l.lookupEndpoint(endpointID)
	if ep == nil {
		return fmt.Errorf("%w %s", ErrUnknownEndpoint, endpointID)
	}
	ep.cd.interval.Store(int64(interval))
	return nil
}

// SetBudget adds the budget b or replaces the budget with the same Match at once. What was
// already admitted stays counted: the request log, token charges, last admission, calls in
// flight and learned limits are kept. Waiting calls are re-examined.
func (l *Limiter) SetBudget(b Budget) error {
	if b.Match == "" {
		return errors.New("budget has no match")
	}
	if err := b.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if other, ok := l.norm[normalKey(b.Match)]; ok && other != b.Match {
		delete(l.budgets, other) // the same upstream written another way: b replaces it
	}
	l.budgets[b.Match] = b
	l.norm[normalKey(b.Match)] = b.Match
	old := l.upstreams.Load()
	if old == nil {
		return nil
	}
	// Keys may now resolve to a different budget (a new bare-host match, say): regroup them,
	// reusing the state already kept under the new name when there is one.
	byName := map[string]*upstream{}
	for _, u := range *old {
		byName[u.key] = u
	}
	m := make(map[string]*upstream, len(*old))
	for k, u := range *old {
		c := l.canonical(k)
		t := byName[c]
		if t == nil {
			t = u
			t.mu.Lock()
			t.key = c
			t.mu.Unlock()
			byName[c] = t
		}
		m[k] = t
	}
	l.upstreams.Store(&m)
	if eps := l.endpoints.Load(); eps != nil {
		for _, ep := range *eps {
			if u := m[ep.upKey]; u != nil {
				ep.up.Store(u)
			}
		}
	}
	for name, u := range byName {
		if bb, ok := l.budgets[name]; ok {
			u.configure(bb, true)
		}
	}
	return nil
}

// Budget returns the budget configured for match and whether there is one.
func (l *Limiter) Budget(match string) (Budget, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.budgets[match]
	if !ok {
		if m, found := l.norm[normalKey(match)]; found {
			b, ok = l.budgets[m]
		}
	}
	return b, ok
}

// BudgetFor returns the Match of the budget an upstream key resolves to (a host:port to its
// bare host's budget, say), and whether one does.
func (l *Limiter) BudgetFor(key string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.canonical(key)
	_, ok := l.budgets[m]
	return m, ok
}

func (l *Limiter) lookupEndpoint(id string) *endpoint {
	m := l.endpoints.Load()
	if m == nil {
		return nil
	}
	return (*m)[id]
}

// upstream returns the state of the upstream key, creating it on first use.
func (l *Limiter) upstream(key string) *upstream {
	if key == "" {
		return nil
	}
	if m := l.upstreams.Load(); m != nil {
		if u := (*m)[key]; u != nil {
			return u
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.upstreamLocked(key)
}

func (l *Limiter) upstreamLocked(key string) *upstream {
	if key == "" {
		return nil
	}
	old := l.upstreams.Load()
	if old != nil {
		if u := (*old)[key]; u != nil {
			return u
		}
	}
	m := copyMap(old, 2)
	u := l.addUpstream(m, key)
	if u != nil {
		l.upstreams.Store(&m)
	}
	return u
}

// addUpstream returns the state of key in m, a private copy of the upstream map, adding
// it (under key and its canonical name) when missing; nil past MaxUpstreams. The caller
// holds l.mu and publishes m.
func (l *Limiter) addUpstream(m map[string]*upstream, key string) *upstream {
	if u := m[key]; u != nil {
		return u
	}
	c := l.canonical(key)
	u := m[c]
	if u == nil {
		if l.nUp >= l.maxUpstreams {
			return nil
		}
		l.nUp++
		u = &upstream{key: c, share: l.share, store: l.store}
		u.sw.start(l.storeStarted)
		u.configure(l.budgets[c], false)
	}
	m[key], m[c] = u, u
	return u
}

// canonical names the state a key belongs to: the Match of the budget that matches the key,
// else of the budget that matches its bare host, else the key. Keys and matches compare in
// their normal form (see normalKey), so a budget for "API.example.com" holds for
// "api.example.com.:443".
func (l *Limiter) canonical(key string) string {
	if _, ok := l.budgets[key]; ok {
		return key
	}
	nk := normalKey(key)
	if m, ok := l.norm[nk]; ok {
		return m
	}
	if host, _, err := net.SplitHostPort(nk); err == nil {
		if m, ok := l.norm[host]; ok {
			return m
		}
	}
	return key
}

func (l *Limiter) resolve(req Request) (*endpoint, *upstream) {
	ep := l.lookupEndpoint(req.Endpoint)
	if ep != nil && req.CooldownKey != "" {
		ep = l.argCooldowns.of(ep, req.CooldownKey)
	}
	if req.Upstream != "" {
		return ep, l.upstream(req.Upstream)
	}
	if ep == nil {
		return nil, nil
	}
	return ep, ep.up.Load()
}

// AdmitAt decides at now whether req may go, checking the endpoint's cooldown, every
// dimension of its upstream's budget and what the upstream said, all with the one now, and
// charges them all only if all pass. On refusal the error is a *LimitError naming the limit
// with the longest wait. AdmitAt never waits and never queues (see Acquire); it allocates
// nothing when it admits. The Ticket must be released when the call ends.
func (l *Limiter) AdmitAt(req Request, now time.Time) (Ticket, error) {
	ep, up := l.resolve(req)
	t, rf, ok := l.admit(detached(), ep, up, req, now.UnixNano(), true)
	if !ok {
		return Ticket{}, rf.err(ep, up, now)
	}
	return t, nil
}

// ReadyAt returns how long after now a call to the endpoint would wait for its cooldown,
// its upstream's budget and learned limits; zero when it could go now. It charges nothing
// and does not count calls already waiting in the queue. With a Store it never asks the
// store: it is a hint from what this replica knows (its own calls and what the store last
// said), and only an admission is sure.
func (l *Limiter) ReadyAt(endpointID string, now time.Time) time.Duration {
	ep, up := l.resolve(Request{Endpoint: endpointID})
	if l.store != nil {
		return time.Duration(l.readyLocal(ep, up, now.UnixNano()))
	}
	_, rf, ok := l.admit(detached(), ep, up, Request{Endpoint: endpointID}, now.UnixNano(), false)
	if ok {
		return 0
	}
	return time.Duration(rf.wait)
}

// admit is the one check-and-charge. With charge false it only checks. ctx bounds the
// call to a store.
func (l *Limiter) admit(ctx context.Context, ep *endpoint, up *upstream, req Request, now int64, charge bool) (Ticket, refusal, bool) {
	if up == nil {
		if l.store != nil {
			return l.admitShared(ctx, ep, nil, req, now, charge)
		}
		return admitCooldown(ep, req, now, charge, 1)
	}
	var t Ticket
	var rf refusal
	var ok bool
	up.mu.Lock()
	if l.store == nil {
		t, rf, ok = up.admitLocked(ep, req, now, charge)
	} else {
		t, rf, ok = l.admitShared(ctx, ep, up, req, now, charge)
	}
	if !ok && charge && rf.ctxErr == nil {
		up.countRefusal(ep, &rf)
	}
	up.mu.Unlock()
	return t, rf, ok
}

// admitUp is admit for a call with an upstream; the caller holds up.mu.
func (l *Limiter) admitUp(ctx context.Context, ep *endpoint, up *upstream, req Request, now int64, charge bool) (Ticket, refusal, bool) {
	if l.store != nil {
		return l.admitShared(ctx, ep, up, req, now, charge)
	}
	return up.admitLocked(ep, req, now, charge)
}

// admitCooldown admits a call with no upstream: only the endpoint's cooldown, stretched
// by 1/share, applies.
func admitCooldown(ep *endpoint, req Request, now int64, charge bool, share float64) (Ticket, refusal, bool) {
	{
		if ep == nil || req.Retry {
			return Ticket{ep: ep, admitted: now}, refusal{}, true
		}
		for {
			last := ep.cd.last.Load()
			if w := ep.cd.waitShare(last, now, share); w > 0 {
				rf := refusal{}
				rf.cooldownOf(ep, w)
				if charge {
					ep.cd.refused.Add(1)
				}
				return Ticket{}, rf, false
			}
			if !charge {
				return Ticket{}, refusal{}, true
			}
			if ep.cd.last.CompareAndSwap(last, now) {
				ep.cd.admitted.Add(1)
				return Ticket{ep: ep, admitted: now}, refusal{}, true
			}
		}
	}
}

// refusal is a refused admission before it becomes a *LimitError (which allocates).
type refusal struct {
	kind      Kind
	scope     Scope
	wait      int64
	limit     int64
	window    time.Duration
	interval  time.Duration
	source    string
	estimated bool
	cooldown  bool  // the endpoint's cooldown refused: such calls are never queued
	ctxErr    error // the caller's context ended while the store decided
}

// consider keeps the limit with the longest wait, so waiting RetryAfter clears them all.
func (r *refusal) consider(kind Kind, scope Scope, wait int64) bool {
	if wait <= r.wait {
		return false
	}
	*r = refusal{kind: kind, scope: scope, wait: wait, cooldown: r.cooldown}
	return true
}

func (r *refusal) cooldownOf(ep *endpoint, wait int64) {
	r.cooldown = true
	if r.consider(KindCooldown, ScopeProxy, wait) {
		r.interval = time.Duration(ep.cd.interval.Load())
	}
}

func (r *refusal) err(ep *endpoint, up *upstream, now time.Time) error {
	if r.ctxErr != nil {
		return r.ctxErr
	}
	e := &LimitError{
		Scope:      r.scope,
		Kind:       r.kind,
		Interval:   r.interval,
		Limit:      r.limit,
		Window:     r.window,
		Source:     r.source,
		RetryAfter: time.Duration(r.wait),
		RetryAt:    now.Add(time.Duration(r.wait)),
		Estimated:  r.estimated,
	}
	switch {
	case r.kind == KindCooldown && ep != nil, up == nil && ep != nil:
		e.Key = ep.id
	case up != nil:
		e.Key = up.name()
	}
	return e
}
