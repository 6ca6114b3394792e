package ratelimit

// A shadow budget (Budget.Shadow) is tried before it is enforced: the calls admitted to
// its upstream are counted against its requests, minimum interval and concurrency as if
// it held them, and each call that arrived when one of them had no room is counted as one
// it would have refused (or queued), by the limit that bound it; nothing is refused or
// held because of it. The counts are this replica's, in memory, with or without a store.
// Token budgets are not shadowed. Its PerPrincipal share is a shadow too: a call over its
// principal's share goes, counted (ShadowStatus.PerPrincipal); its classes, shadows of
// their own, count in their own status.
type shadowState struct {
	b        Budget // with defaults
	span     int64
	reqs     requestLog
	last     int64 // unix nanoseconds of the last call counted; zero: none
	inflight int
	calls    int64
	would    map[Kind]int64
	overPP   int64 // calls over their principal's share (Budget.PerPrincipal)
}

// ShadowStatus is what a shadow budget counted.
type ShadowStatus struct {
	Budget Budget // as configured, with defaults filled in
	// Calls is how many calls it counted; WouldRefuse how many of them arrived when it had
	// no room, and ByKind by the limit that bound each.
	Calls        int64
	WouldRefuse  int64
	ByKind       map[Kind]int64
	RequestsUsed int // in the rolling window at the status's time, at most the budget's requests
	InFlight     int
	// PerPrincipal is how many calls arrived when their principal had spent its share
	// (Budget.PerPrincipal): each went, and is counted here, apart from WouldRefuse.
	PerPrincipal int64
}

// enforced is b without the limits a shadow budget only counts.
func (b Budget) enforced() Budget {
	if !b.Shadow {
		return b
	}
	b.Requests, b.MinInterval, b.MaxConcurrent = 0, 0, 0
	return b
}

// setShadow keeps, replaces or drops the shadow state for b. The caller holds u.mu.
func (u *upstream) setShadow(b Budget) {
	if !b.Shadow {
		u.shadow = nil
		return
	}
	b = b.withDefaults()
	if u.shadow == nil {
		u.shadow = &shadowState{would: map[Kind]int64{}}
	}
	sh := u.shadow
	sh.b, sh.span = b, b.span()
	if b.Requests > 0 {
		sh.reqs.resize(b.Requests)
	}
}

// countShadowLocked counts the call t admits at now against the shadow budget, when
// there is one. The caller holds u.mu, charging t.
func (u *upstream) countShadowLocked(t *Ticket, now int64) {
	sh := u.shadow
	if sh == nil {
		return
	}
	var rf refusal
	b := &sh.b
	if b.Requests > 0 {
		rf.consider(KindRequests, ScopeProxy, sh.reqs.wait(now, sh.span))
		sh.reqs.add(now)
	}
	if b.MinInterval > 0 && sh.last != 0 {
		rf.consider(KindInterval, ScopeProxy, sh.last+int64(b.MinInterval)-now)
	}
	if b.MaxConcurrent > 0 && sh.inflight >= b.MaxConcurrent {
		rf.consider(KindConcurrency, ScopeProxy, 1)
	}
	sh.last = now
	sh.inflight++
	sh.calls++
	if rf.wait > 0 {
		sh.would[rf.kind]++
	}
	t.shadow = sh
}

// releaseShadow ends the call's count in flight. The caller holds u.mu.
func (t *Ticket) releaseShadow() {
	if t.shadow != nil {
		t.shadow.inflight--
		t.shadow = nil
	}
}

func (sh *shadowState) status(now int64) *ShadowStatus {
	if sh == nil {
		return nil
	}
	s := &ShadowStatus{Budget: sh.b, Calls: sh.calls, InFlight: sh.inflight, ByKind: map[Kind]int64{}, PerPrincipal: sh.overPP}
	for k, n := range sh.would {
		s.ByKind[k] = n
		s.WouldRefuse += n
	}
	if sh.b.Requests > 0 {
		s.RequestsUsed = sh.reqs.used(now, sh.span)
	}
	return s
}
