package ratelimit

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// WindowOptions configure a Window.
type WindowOptions struct {
	// Name tells Windows on one store apart ("requests", "tool_calls", "failed_auth"); it
	// is part of their Redis keys. Required with a Store.
	Name string
	// Limit is the most events per key in any rolling Window. Required, positive.
	Limit int
	// Window is the length of the rolling window. Zero: one minute.
	Window time.Duration
	// MaxKeys bounds the keys held in memory at once: idle keys are swept, and when all
	// are active a new key is refused (Full) rather than one evicted. Zero: 10000.
	MaxKeys int
	// Store shares the counts with other replicas. Nil: memory. While the store is
	// unreachable, each replica allows floor(FallbackShare × Limit), at least 1.
	Store *RedisStore
}

// WindowResult is a Window's answer for one event.
type WindowResult struct {
	// Allowed is true when the event was counted within the limit.
	Allowed bool
	// Limit is the limit that applied (the fallback share of it while the store is
	// unreachable); Remaining is what is left of it after this event.
	Limit     int
	Remaining int
	// Reset is when the next event for the key can pass: the decision's now while
	// Remaining is above zero (X-RateLimit-Reset, rounded up to whole seconds).
	Reset time.Time
	// RetryAfter is, when refused, the exact wait until an event passes; zero when allowed.
	RetryAfter time.Duration
	// Full is true when the event was refused because MaxKeys other keys are active.
	Full bool
}

// Window counts events per key (a principal, a client IP) and allows at most Limit of
// them in any rolling Window: the inbound budgets of HTTP serving. Refused events are not
// counted. A Window is safe for concurrent use and starts no goroutines.
type Window struct {
	name    string
	limit   int
	window  int64
	maxKeys int
	store   *RedisStore

	mu        sync.Mutex // guards the fields below
	keys      map[string]*requestLog
	nextSweep int64
}

// NewWindow returns a Window for opts, or the first configuration error.
func NewWindow(opts WindowOptions) (*Window, error) {
	if opts.Limit <= 0 || opts.Limit > maxRequests {
		return nil, errors.New("window: limit must be in 1..1048576")
	}
	if opts.Window < 0 || opts.MaxKeys < 0 {
		return nil, errors.New("window: window and max keys must not be negative")
	}
	if opts.Store != nil && opts.Name == "" {
		return nil, errors.New("window: a name is required with a store")
	}
	w := &Window{name: opts.Name, limit: opts.Limit, window: int64(opts.Window), maxKeys: opts.MaxKeys,
		store: opts.Store, keys: map[string]*requestLog{}}
	if w.window == 0 {
		w.window = int64(time.Minute)
	}
	if w.maxKeys == 0 {
		w.maxKeys = 10000
	}
	return w, nil
}

// Allow is AllowAt now.
func (w *Window) Allow(ctx context.Context, key string) WindowResult {
	return w.AllowAt(ctx, key, time.Now())
}

// AllowAt counts one event for key at now if it fits. With a store, Redis decides with its
// own clock (now only dates the answer) and ctx bounds the call.
func (w *Window) AllowAt(ctx context.Context, key string, now time.Time) WindowResult {
	if st := w.store; st != nil && st.Available() {
		if r, err := w.allowRedis(ctx, key, now); err == nil {
			if r.Allowed {
				w.mu.Lock()
				w.memLocked(key, now.UnixNano(), w.fallbackLimit(), true) // counted if Redis goes away
				w.mu.Unlock()
			}
			return r
		}
	}
	limit := w.limit
	if w.store != nil {
		limit = w.fallbackLimit()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.memLocked(key, now.UnixNano(), limit, false)
}

func (w *Window) fallbackLimit() int {
	return Budget{Requests: w.limit}.scaled(w.store.FallbackShare()).Requests
}

// memLocked decides on the memory table; force counts the event whatever the limit.
func (w *Window) memLocked(key string, now int64, limit int, force bool) WindowResult {
	r := WindowResult{Limit: limit}
	log := w.keys[key]
	if log == nil {
		if len(w.keys) >= w.maxKeys {
			w.sweepLocked(now)
		}
		if len(w.keys) >= w.maxKeys {
			r.Full, r.RetryAfter = true, time.Duration(w.window)
			r.Reset = time.Unix(0, now+w.window)
			return r
		}
		log = &requestLog{}
		w.keys[key] = log
	}
	log.resize(limit)
	if wait := log.wait(now, w.window); wait > 0 && !force {
		r.RetryAfter, r.Reset = time.Duration(wait), time.Unix(0, now+wait)
		return r
	}
	log.add(now)
	r.Allowed = true
	r.Remaining = max(limit-log.usedSorted(now, w.window), 0)
	r.Reset = time.Unix(0, now)
	if r.Remaining == 0 {
		r.Reset = time.Unix(0, max(now, now+log.wait(now, w.window)))
	}
	return r
}

// sweepLocked drops keys with no event left in the window, at most every window/8.
func (w *Window) sweepLocked(now int64) {
	if now < w.nextSweep {
		return
	}
	w.nextSweep = now + w.window/8
	for k, log := range w.keys {
		if log.n == 0 || log.ring[(log.head+log.n-1)%len(log.ring)]+w.window <= now {
			delete(w.keys, k)
		}
	}
}

// usedSorted counts the entries still in the window at now; the log is ordered.
func (r *requestLog) usedSorted(now, span int64) int {
	i := sort.Search(r.n, func(i int) bool { return r.ring[(r.head+i)%len(r.ring)]+span > now })
	return r.n - i
}

func (w *Window) allowRedis(ctx context.Context, key string, now time.Time) (WindowResult, error) {
	st := w.store
	win := micros(time.Duration(w.window))
	uid := st.id + ":" + strconv.FormatUint(st.seq.Add(1), 36)
	v, err := st.run(ctx, windowScript, []string{st.prefix + "w:" + w.name + ":" + key}, w.limit, win, uid)
	if err != nil {
		return WindowResult{}, err
	}
	r, ok := v.([]any)
	if !ok || len(r) != 3 {
		err := errors.New("redis store: unexpected reply to window")
		st.fail(err)
		return WindowResult{}, err
	}
	res := WindowResult{Allowed: toInt(r[0]) == 1, Limit: w.limit, Remaining: int(toInt(r[2]))}
	wait := time.Duration(toInt(r[1])) * time.Microsecond
	res.Reset = now.Add(wait)
	if !res.Allowed {
		res.RetryAfter = max(wait, time.Microsecond)
	}
	return res, nil
}

// windowScript counts one event in a sorted set if fewer than limit are in the window.
// Reply: allowed, wait until the next event can pass (microseconds), remaining.
var windowScript = redis.NewScript(luaPrelude + `
local lim, win = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', num(now - win))
local c = redis.call('ZCARD', KEYS[1])
if c >= lim then
  local e = redis.call('ZRANGE', KEYS[1], c - lim, c - lim, 'WITHSCORES')
  return {0, tonumber(e[2]) + win - now, 0}
end
redis.call('ZADD', KEYS[1], num(now), num(now) .. '-' .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], num(math.ceil(win / 1000) + 1000))
local rem, wait = lim - c - 1, 0
if rem == 0 then
  local e = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  wait = tonumber(e[2]) + win - now
end
return {1, wait, rem}
`)
