package ratelimit

import (
	"sync"
	"sync/atomic"
)

// maxArgCooldowns bounds the argument-keyed cooldowns kept at once. Past it,
// the keys whose interval has passed are dropped (they hold nothing a call
// could be refused for); if none has, one key is dropped, so a flood of
// distinct arguments costs memory up to the bound and never more.
const maxArgCooldowns = 8192

// argCooldowns holds the cooldowns kept per endpoint and arguments (see
// Request.CooldownKey). The zero value is ready to use; it is safe for
// concurrent use.
type argCooldowns struct {
	mu   sync.Mutex
	keys map[string]*endpoint
}

// of returns the endpoint ep stands for under key: the same id, upstream
// and learned resource as ep, with a cooldown of its own that has ep's
// current interval.
func (a *argCooldowns) of(ep *endpoint, key string) *endpoint {
	full := ep.id + "\x00" + key
	a.mu.Lock()
	defer a.mu.Unlock()
	d := a.keys[full]
	if d == nil {
		if a.keys == nil {
			a.keys = map[string]*endpoint{}
		}
		if len(a.keys) >= maxArgCooldowns {
			a.sweep()
		}
		d = &endpoint{id: ep.id, argKey: full, base: ep, cd: new(cooldownKey)}
		a.keys[full] = d
	}
	d.cd.interval.Store(ep.cd.interval.Load())
	d.up.Store(ep.up.Load())
	return d
}

// sweep drops the keys whose cooldown had passed by the latest admission
// of any key (the limiter's maths takes no clock of its own), or one key if
// none had. The caller holds a.mu.
func (a *argCooldowns) sweep() {
	var now int64
	for _, d := range a.keys {
		now = max(now, d.cd.last.Load())
	}
	for k, d := range a.keys {
		if d.cd.wait(d.cd.last.Load(), now) <= 0 {
			delete(a.keys, k)
		}
	}
	if len(a.keys) < maxArgCooldowns {
		return
	}
	for k := range a.keys {
		delete(a.keys, k)
		return
	}
}

// cooldownKey is the key a store keeps the endpoint's cooldown under.
func (ep *endpoint) cooldownKey() string {
	if ep.argKey != "" {
		return ep.argKey
	}
	return ep.id
}

// resources is where the endpoint's learned quota resource is kept: the
// registered endpoint's, for an argument-keyed one.
func (ep *endpoint) resources() *atomic.Pointer[string] {
	if ep.base != nil {
		return &ep.base.resource
	}
	return &ep.resource
}
