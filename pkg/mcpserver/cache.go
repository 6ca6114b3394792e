package mcpserver

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/specgate/specgate/pkg/invoke"
)

// maxCached bounds the results kept for cache_ttl.
const maxCached = 512

// resultCache keeps the last successful result of identical idempotent
// calls. The zero value is ready.
type resultCache struct {
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
}

// cacheKey identifies a call by principal, the fingerprint of the upstream
// credentials it sends, endpoint and arguments; encoding/json sorts map
// keys, so equal arguments give equal keys. The principal and the
// credentials are part of it: no caller is served an answer fetched for
// another, or with other credentials.
func cacheKey(principal, credentials, id string, in invoke.Args, pages int) string {
	b, _ := json.Marshal(struct {
		P map[string]any    `json:"p,omitempty"`
		B any               `json:"b,omitempty"`
		H map[string]string `json:"h,omitempty"`
		C string            `json:"c,omitempty"`
		N int               `json:"n,omitempty"`
	}{in.Parameters, in.RequestBody, in.Headers, in.ContentType, pages})
	return principal + "\x00" + credentials + "\x00" + id + "\x00" + string(b)
}

func (c *resultCache) get(key string, ttl time.Duration, now time.Time) (cachedAnswer, time.Duration, bool) {
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

func (c *resultCache) put(key string, res cachedAnswer, now time.Time) {
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

// auditRecord is one line of the audit log. It never holds argument values
// or headers.
type auditRecord struct {
	Time          string `json:"time"`
	Endpoint      string `json:"endpoint"`
	Principal     string `json:"principal,omitempty"`
	Outcome       string `json:"outcome"`
	Status        int    `json:"status,omitempty"`
	Scope         string `json:"scope,omitempty"`
	Limit         string `json:"limit,omitempty"`
	QueueWaitMs   int64  `json:"queueWaitMs"`
	Attempts      int    `json:"attempts"`
	LatencyMs     int64  `json:"latencyMs"`
	ResponseBytes int64  `json:"responseBytes,omitempty"`
	Cached        bool   `json:"cached,omitempty"`
}

// principalKey is the context key of the caller, set by the HTTP
// transport when it knows who is calling.
type principalKey struct{}

// caller is who is calling: name for the audit log, key for what belongs
// to the caller (stored answers, cached results). The key is unambiguous
// where the name is not: subject "ada@acme" without an org and subject
// "ada" of org "acme" are both named ada@acme.
type caller struct{ name, key string }

// WithPrincipal returns ctx carrying p as the caller.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, caller{name: p.String(), key: p.Key()})
}

func (s *Server) audit(ctx context.Context, rec auditRecord) {
	if s.opts.Audit == nil {
		return
	}
	rec.Time = s.now().UTC().Format(time.RFC3339Nano)
	if c, ok := ctx.Value(principalKey{}).(caller); ok {
		rec.Principal = c.name
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return
	}
	s.audMu.Lock()
	defer s.audMu.Unlock()
	if _, err := s.opts.Audit.Write(append(line, '\n')); err != nil {
		s.log.Warn("audit log write failed", "err", err)
	}
}
