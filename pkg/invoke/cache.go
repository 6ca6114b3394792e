package invoke

import (
	"encoding/json"
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
	res cachedAnswer
	at  time.Time
}

// cachedAnswer points at the stored answer of a call: a hit is rendered
// from the answer store like a fresh answer, with the caller's own jq and
// budget, and misses once the store has let the answer go.
type cachedAnswer struct {
	responseID string
	size       int64
	// etag and lastModified are the validators the answer came with, for a
	// conditional request (see Caller.Validators); empty when it had none.
	etag, lastModified string
}

// cacheKey identifies a call by principal, the fingerprint of the upstream
// credentials it sends, endpoint and arguments; encoding/json sorts map
// keys, so equal arguments give equal keys. The principal and the
// credentials are part of it: no caller is served an answer fetched for
// another, or with other credentials.
func cacheKey(principal, credentials, id string, in Args, pages int) string {
	return principal + "\x00" + credentials + "\x00" + id + "\x00" + string(argsText(in, pages))
}

// argsText is a call's arguments as one text that is the same for the same
// arguments (encoding/json sorts map keys): what identifies a call for the
// result cache and the argument-keyed cooldown.
func argsText(in Args, pages int) []byte {
	b, _ := json.Marshal(struct {
		P map[string]any    `json:"p,omitempty"`
		B any               `json:"b,omitempty"`
		H map[string]string `json:"h,omitempty"`
		C string            `json:"c,omitempty"`
		N int               `json:"n,omitempty"`
	}{in.Parameters, in.RequestBody, in.Headers, in.ContentType, pages})
	return b
}

func (c *ResultCache) get(key string, ttl time.Duration, now time.Time) (cachedAnswer, time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return cachedAnswer{}, 0, false
	}
	age := now.Sub(e.at)
	if age >= ttl || age < 0 {
		return cachedAnswer{}, 0, false
	}
	return e.res, age, true
}

func (c *ResultCache) put(key string, res cachedAnswer, now time.Time) {
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
