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

// classesOf returns the class budgets req's endpoint pays; nil when none.
func (l *Limiter) classesOf(req Request) []string {
	ep := l.lookupEndpoint(req.Endpoint)
	if ep == nil {
		return nil
	}
	if c := ep.classes.Load(); c != nil {
		return *c
	}
	return nil
}

// acquireClasses admits req in each of its classes, in order, after checking the
// endpoint's cooldown; on a refusal it releases what it admitted.
func (l *Limiter) acquireClasses(ctx context.Context, req Request, classes []string) ([]Ticket, error) {
	if !req.Retry {
		if ep := l.lookupEndpoint(req.Endpoint); ep != nil {
			key := ep
			if req.CooldownKey != "" {
				key = l.argCooldowns.of(ep, req.CooldownKey)
			}
			now := time.Now()
			if w := key.cd.wait(key.cd.last.Load(), now.UnixNano()); w > 0 {
				var rf refusal
				rf.cooldownOf(key, w)
				key.cd.refused.Add(1)
				return nil, rf.err(key, nil, now)
			}
		}
	}
	out := make([]Ticket, 0, len(classes))
	for _, c := range classes {
		t, err := l.acquire(ctx, Request{Upstream: c, Principal: req.Principal, Background: req.Background, Progress: req.Progress})
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
