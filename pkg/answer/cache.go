package answer

import (
	"sync"
	"time"
)

// maxCached bounds the results kept for cache_ttl.
const maxCached = 512

// ResultCache keeps the last successful result of identical idempotent
// calls, as a pointer to its stored answer. The zero value is ready; it is
// safe for concurrent use.
type ResultCache struct {
	mu      sync.Mutex
	entries map[string]cached
	order   []string // insertion order, oldest first
}

type cached struct {
	res Cached
	at  time.Time
}

// Cached points at the stored answer of a call: a hit is rendered from the
// answer store like a fresh answer, with the caller's own jq and budget,
// and misses once the store has let the answer go.
type Cached struct {
	ResponseID string
	Size       int64
	// ETag and LastModified are the validators the answer came with, for a
	// conditional request; empty when it had none.
	ETag, LastModified string
}

// Get returns the entry under key while it is younger than ttl at now, and
// its age.
func (c *ResultCache) Get(key string, ttl time.Duration, now time.Time) (Cached, time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return Cached{}, 0, false
	}
	age := now.Sub(e.at)
	if age >= ttl || age < 0 {
		return Cached{}, 0, false
	}
	return e.res, age, true
}

// Put keeps res under key as of now; past maxCached entries the oldest go.
func (c *ResultCache) Put(key string, res Cached, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]cached{}
	}
	if _, ok := c.entries[key]; !ok {
		c.order = append(c.order, key)
	}
	c.entries[key] = cached{res: res, at: now}
	for len(c.order) > maxCached {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}
