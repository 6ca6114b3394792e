package ratelimit

import (
	"cmp"
	"slices"
	"time"
)

// Status is a snapshot of the limiter for the rate_limit_status tool.
type Status struct {
	At time.Time
	// Store is "memory", or "shared" when limits live in a Store shared by replicas.
	Store string
	// Degraded is true while the shared Store is unreachable and this replica runs on its
	// fallback share of each budget, since DegradedSince, for DegradedReason.
	Degraded       bool
	DegradedSince  time.Time
	DegradedReason string
	// Endpoints and Upstreams count what this replica admitted; with a shared Store the
	// windows' use is this replica's own, the budgets are shared.
	Endpoints []EndpointStatus // sorted by ID
	Upstreams []UpstreamStatus // sorted by Key
}

// EndpointStatus is the state of one registered endpoint.
type EndpointStatus struct {
	ID       string
	Upstream string        // the upstream it calls; empty when none
	Interval time.Duration // its cooldown; zero: none
	// CooldownUntil is when its cooldown next allows a call; zero when it allows one now.
	CooldownUntil time.Time
	// Wait is how long a call would wait now for its cooldown, its upstream's budget and
	// learned limits (ReadyAt); zero when it could go now.
	Wait     time.Duration
	Admitted int64
	Refused  int64
}

// UpstreamStatus is the state of one upstream.
type UpstreamStatus struct {
	Key        string
	Configured bool   // a Budget was given for it
	Budget     Budget // as configured, with defaults filled in
	// RequestsUsed and TokensUsed are counted in the rolling window (with its pad) at At;
	// RequestsRemaining and TokensRemaining are what the budget has left (zero when the
	// dimension is off).
	RequestsUsed      int
	RequestsRemaining int
	TokensUsed        int64
	TokensRemaining   int64
	InFlight          int
	// NextAllowed is when a call with no cooldown could next go; At when it could now.
	NextAllowed time.Time
	// Learned is what the upstream has said, per quota it named ("" for the whole upstream).
	Learned    []LearnedStatus
	QueueDepth int // calls waiting now
	Admitted   int64
	// Refused counts final refusals by the limit that bound them.
	Refused map[Kind]int64
	// RefusedByScope counts refusals by who refused: ScopeProxy or ScopeUpstream.
	RefusedByScope map[Scope]int64
	// QueueRefused counts the calls the wait queue could not hold, by reason.
	QueueRefused map[QueueReason]int64
	// RateLimitedAnswers counts the 429s (and rate-limit 403s) the upstream sent.
	RateLimitedAnswers int64
	// Fallback is true while the shared store does not answer for this upstream, so
	// that this replica runs it on its fallback share: with Redis Cluster, only the
	// upstreams on an unreachable slot.
	Fallback bool
	// Shadow is what the budget counted when it is a shadow (Budget.Shadow); nil else.
	Shadow *ShadowStatus
	// Adaptive is the adaptive concurrency limit's state (Budget.Adaptive); nil else.
	Adaptive *AdaptiveStatus
}

// LearnedStatus is what an upstream has said about one of its quotas.
type LearnedStatus struct {
	Resource     string
	BlockedUntil time.Time // a rate-limited answer blocks until then; zero when not blocked
	BlockSource  string    // the header that set the block
	Requests     LearnedQuota
	Tokens       LearnedQuota
	// Probing is true while calls wait for the answer to the probe sent after a block.
	Probing bool
	// Inferred is the requests budget inferred from rate-limited answers that advertised
	// no quota; zero when there is none.
	Inferred InferredBudget
	// InFlight is the most calls in flight inferred from rate-limited answers that
	// advertised no quota, to calls sent while others were in flight, until InFlightUntil;
	// zero when there is none.
	InFlight      int
	InFlightUntil time.Time
}

// InferredBudget is a requests budget the limiter inferred from rate-limited answers that
// advertised no quota: at most Limit calls in any rolling Window, until Until.
type InferredBudget struct {
	Limit  int64
	Window time.Duration
	Until  time.Time
	Source string
}

// LearnedQuota is an advertised quota as the limiter counts it down.
type LearnedQuota struct {
	Limit        int64
	Remaining    int64 // valid when HasRemaining
	HasRemaining bool
	Reset        time.Time
	Window       time.Duration // stated by the upstream or inferred from its resets
	Source       string
}

// StatusAt returns a snapshot at now. With match not nil only the endpoints it accepts are
// listed, and only their upstreams.
func (l *Limiter) StatusAt(now time.Time, match func(endpointID string) bool) Status {
	n := now.UnixNano()
	st := Status{At: now, Store: "memory"}
	if l.store != nil {
		st.Store = "shared"
		st.Degraded, st.DegradedSince, st.DegradedReason = l.store.Degraded()
	}
	ups := map[*upstream]bool{}
	if m := l.endpoints.Load(); m != nil {
		for id, ep := range *m {
			if match != nil && !match(id) {
				continue
			}
			u := ep.up.Load()
			es := EndpointStatus{
				ID:       id,
				Interval: time.Duration(ep.cd.interval.Load()),
				Wait:     l.ReadyAt(id, now),
				Admitted: ep.cd.admitted.Load(),
				Refused:  ep.cd.refused.Load(),
			}
			if w := ep.cd.wait(ep.cd.last.Load(), n); w > 0 {
				es.CooldownUntil = now.Add(time.Duration(w))
			}
			if u != nil {
				es.Upstream = u.name()
				ups[u] = true
			}
			st.Endpoints = append(st.Endpoints, es)
		}
	}
	if match == nil {
		if m := l.upstreams.Load(); m != nil {
			for _, u := range *m {
				ups[u] = true
			}
		}
	}
	for u := range ups {
		st.Upstreams = append(st.Upstreams, u.status(n))
	}
	slices.SortFunc(st.Endpoints, func(a, b EndpointStatus) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(st.Upstreams, func(a, b UpstreamStatus) int { return cmp.Compare(a.Key, b.Key) })
	return st
}

func (u *upstream) status(now int64) UpstreamStatus {
	u.mu.Lock()
	defer u.mu.Unlock()
	b := u.budget
	s := UpstreamStatus{
		Key:                u.key,
		Configured:         u.configured,
		Budget:             u.full,
		InFlight:           u.inflight,
		QueueDepth:         len(u.queue),
		Admitted:           u.admitted,
		RateLimitedAnswers: u.limited,
		Fallback:           u.store != nil && !u.store.Available(u.key),
		Refused:            map[Kind]int64{},
		RefusedByScope:     map[Scope]int64{},
		QueueRefused:       map[QueueReason]int64{},
		Shadow:             u.shadow.status(now),
		Adaptive:           u.adapt.status(),
	}
	if b.Requests > 0 {
		s.RequestsUsed = u.reqs.used(now, u.span)
		s.RequestsRemaining = max(b.Requests-s.RequestsUsed, 0)
	}
	if b.Tokens > 0 {
		u.toks.expire(now, u.span)
		s.TokensUsed = u.toks.sum
		s.TokensRemaining = max(b.Tokens-s.TokensUsed, 0)
	}
	s.NextAllowed = time.Unix(0, now)
	if _, rf, ok := u.admitLocked(nil, Request{}, now, false); !ok {
		s.NextAllowed = time.Unix(0, now+rf.wait)
	}
	for _, ls := range u.learned {
		x := LearnedStatus{
			Resource:    ls.resource,
			BlockSource: ls.blockSource,
			Requests:    ls.req.status(),
			Tokens:      ls.tok.status(),
			Probing:     ls.probeSeq != 0,
		}
		if ls.inf.limit > 0 && ls.inf.until > now {
			x.Inferred = InferredBudget{Limit: ls.inf.limit, Window: time.Duration(ls.inf.window),
				Until: time.Unix(0, ls.inf.until), Source: ls.inf.source}
		}
		if ls.conc.limit > 0 && ls.conc.until > now {
			x.InFlight, x.InFlightUntil = ls.conc.limit, time.Unix(0, ls.conc.until)
		}
		if ls.blockUntil > now {
			x.BlockedUntil = time.Unix(0, ls.blockUntil)
		}
		s.Learned = append(s.Learned, x)
	}
	for i, k := range kinds {
		if c := u.refused[i]; c > 0 {
			s.Refused[k] = c
			scope := ScopeProxy
			if k == KindLearned {
				scope = ScopeUpstream
			}
			s.RefusedByScope[scope] += c
		}
	}
	if u.queueFull > 0 {
		s.QueueRefused[QueueFull] = u.queueFull
	}
	if u.queueTimeout > 0 {
		s.QueueRefused[QueueTimeout] = u.queueTimeout
	}
	return s
}

func (w *learnedWindow) status() LearnedQuota {
	q := LearnedQuota{
		Limit:        w.limit,
		Remaining:    w.remaining,
		HasRemaining: w.hasRemaining,
		Window:       time.Duration(w.window),
		Source:       w.source,
	}
	if w.reset != 0 {
		q.Reset = time.Unix(0, w.reset)
	}
	return q
}
