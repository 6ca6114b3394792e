package ratelimit

import (
	"context"
	"time"
)

// Classes are sub-budgets of an upstream: an endpoint registered with Endpoint.Classes
// pays, on every call, the budget of each class it names (budgets set with SetBudget like
// any other, under names of their own) as well as its upstream's. A call waits for its
// classes first, in each class's queue, then for its upstream; a class refuses with a
// *LimitError (or *QueueError) whose key is the class's name. So writes can be paced one a
// second while reads are not, or a search API kept to its own budget, on one upstream.
// Cooldowns are the endpoint's own and are checked before any class is charged; what the
// upstream answers is learned by the upstream, and an adaptive class limit hears of
// rate-limited answers and clean ones as its upstream does.

// classNames returns the class budgets ep pays (an argument-keyed endpoint, those of the
// endpoint it stands for); nil when none, or for no endpoint.
func (ep *endpoint) classNames() []string {
	if ep == nil {
		return nil
	}
	if ep.base != nil {
		ep = ep.base
	}
	if c := ep.classes.Load(); c != nil {
		return *c
	}
	return nil
}

// acquireClasses admits req in each of the classes of ep, in order, after checking ep's
// cooldown (charging nothing); on a refusal it releases what it admitted.
func (l *Limiter) acquireClasses(ctx context.Context, ep *endpoint, req Request, classes []string) ([]Ticket, error) {
	now := time.Now()
	if _, rf, ok := admitCooldown(ep, req, now.UnixNano(), false, 1); !ok { // the plain interval: the admission itself stretches it on a fallback share
		ep.cd.refused.Add(1)
		return nil, rf.err(ep, nil, now)
	}
	out := make([]Ticket, 0, len(classes))
	for _, c := range classes {
		cr := Request{Upstream: c, Principal: req.Principal, Subject: req.Subject, Background: req.Background, Progress: req.Progress}
		cep, cup := l.resolve(cr)
		t, err := l.acquire(ctx, cep, cup, cr)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func releaseAll(ts []Ticket) {
	for i := range ts {
		ts[i].Release()
	}
}

func (ep *endpoint) setClasses(c []string) {
	if len(c) == 0 {
		ep.classes.Store(nil)
		return
	}
	c = append([]string(nil), c...)
	ep.classes.Store(&c)
}
