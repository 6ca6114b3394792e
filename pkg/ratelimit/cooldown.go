package ratelimit

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Cooldown is the per-endpoint cooldown: once a call to a key is admitted, another call to
// that key within the key's interval is refused with the exact time left.
//
// Only keys given to Set hold state, so memory is bounded by the caller's endpoint ids;
// AllowAt on any other key always allows and stores nothing. Deciding takes no lock and
// allocates nothing. The zero value is ready to use and holds no keys. A Cooldown is safe
// for concurrent use: of N simultaneous AllowAt calls on one key, exactly one is admitted.
type Cooldown struct {
	mu   sync.Mutex // serialises Set; readers load keys without it
	keys atomic.Pointer[map[string]*cooldownKey]
}

// cooldownKey is one key's state. Both fields are read and written atomically, so the
// interval can change while calls are being decided without losing the last admission.
type cooldownKey struct {
	interval atomic.Int64 // nanoseconds; zero or less: no cooldown
	last     atomic.Int64 // unix nanoseconds of the last admission; zero: never
	admitted atomic.Int64
	refused  atomic.Int64
}

// Set registers key with the given interval, or changes the interval of a registered key at
// once, keeping the time of its last admission. An interval of zero or less turns the
// cooldown off for that key.
func (c *Cooldown) Set(key string, interval time.Duration) {
	c.entry(key).interval.Store(int64(interval))
}

// entry returns the state of key, registering it with no interval when missing.
func (c *Cooldown) entry(key string) *cooldownKey {
	if k := c.lookup(key); k != nil {
		return k
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.keys.Load()
	if old != nil {
		if k := (*old)[key]; k != nil {
			return k
		}
	}
	m := make(map[string]*cooldownKey, mapLen(old)+1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	k := new(cooldownKey)
	m[key] = k
	c.keys.Store(&m)
	return k
}

// entries returns the state of each of keys, registering the missing ones with no
// interval in one copy of the map, so registering n keys costs O(n), not O(n²).
func (c *Cooldown) entries(keys []string) []*cooldownKey {
	out := make([]*cooldownKey, len(keys))
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.keys.Load()
	var m map[string]*cooldownKey // the copy, made at the first missing key
	for i, key := range keys {
		var k *cooldownKey
		if m != nil {
			k = m[key]
		} else if old != nil {
			k = (*old)[key]
		}
		if k == nil {
			if m == nil {
				m = make(map[string]*cooldownKey, mapLen(old)+len(keys)-i)
				if old != nil {
					for kk, v := range *old {
						m[kk] = v
					}
				}
			}
			k = new(cooldownKey)
			m[key] = k
		}
		out[i] = k
	}
	if m != nil {
		c.keys.Store(&m)
	}
	return out
}

func mapLen[V any](m *map[string]V) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

func (c *Cooldown) lookup(key string) *cooldownKey {
	m := c.keys.Load()
	if m == nil {
		return nil
	}
	return (*m)[key]
}

// Interval returns the interval of key and whether key is registered.
func (c *Cooldown) Interval(key string) (time.Duration, bool) {
	k := c.lookup(key)
	if k == nil {
		return 0, false
	}
	return time.Duration(k.interval.Load()), true
}

// AllowAt reports whether a call to key may go at now and, if so, charges the cooldown from
// now. When it may not, retryAfter is the exact time left (never zero): AllowAt at
// now+retryAfter succeeds unless another call was admitted in between.
func (c *Cooldown) AllowAt(key string, now time.Time) (retryAfter time.Duration, ok bool) {
	k := c.lookup(key)
	if k == nil {
		return 0, true
	}
	n := now.UnixNano()
	for {
		last := k.last.Load()
		if w := k.wait(last, n); w > 0 {
			k.refused.Add(1)
			return time.Duration(w), false
		}
		if k.last.CompareAndSwap(last, n) {
			k.admitted.Add(1)
			return 0, true
		}
	}
}

// NextAt returns when key will next allow a call, as seen at now: now itself when it
// allows one already.
func (c *Cooldown) NextAt(key string, now time.Time) time.Time {
	k := c.lookup(key)
	if k == nil {
		return now
	}
	return now.Add(time.Duration(k.wait(k.last.Load(), now.UnixNano())))
}

// wait returns how many nanoseconds after now the key allows a call, given the time of the
// last admission; zero or less means now.
func (k *cooldownKey) wait(last, now int64) int64 {
	iv := k.interval.Load()
	if iv <= 0 || last == 0 {
		return 0
	}
	return last + iv - now
}

// waitShare is wait with the interval stretched by 1/share (share in (0, 1); 1 or more, or
// zero: no stretch), as a replica runs while the shared store is unreachable.
func (k *cooldownKey) waitShare(last, now int64, share float64) int64 {
	if share <= 0 || share >= 1 {
		return k.wait(last, now)
	}
	iv := k.interval.Load()
	if iv <= 0 || last == 0 {
		return 0
	}
	return last + stretch(iv, share) - now
}

// stretch returns d/share rounded up, for share in (0, 1).
func stretch(d int64, share float64) int64 {
	if share <= 0 || share >= 1 || d <= 0 {
		return d
	}
	return int64(math.Ceil(float64(d) / share))
}
