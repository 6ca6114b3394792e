package ratelimit

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"
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
	// unreachable, each replica allows per key floor(FallbackShare × Limit), at least 1,
	// counting the events it allowed itself; for one window after the switch it also
	// counts what the store last said of the key: see Window.
	Store Store
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
//
// With a store, each event the store allows is also counted in memory, and each answer
// keeps how many events the key's shared window held. While the store is unreachable a
// replica runs on its share of Limit per key, as a Limiter's requests budget does: for one
// window after it last saw the key's shared window (holding count events, shortly before
// the switch), it allows floor(share × (Limit - count)) events of the key, none when that
// window was full; a key it saw nothing of in the window before the switch gets the plain
// share at once (unlike upstream budgets, which hold such a window: here locking a
// principal out for a window is worse than a bounded overage). A store that never
// answered leaves no switch.
type Window struct {
	name    string
	limit   int
	window  int64
	maxKeys int
	store   Store
	share   float64     // the store's fallback share; 1 without a store
	sw      switchClock // the switch to the fallback share

	mu        sync.Mutex // guards the fields below
	keys      map[string]*windowKey
	nextSweep int64
}

// windowKey is one key's events in memory and what the store last said of its window.
type windowKey struct {
	log  requestLog
	seen seenWindow
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
		store: opts.Store, share: 1, keys: map[string]*windowKey{}}
	if w.store != nil {
		w.share = w.store.FallbackShare()
		w.sw.start(w.store.Available(""))
	}
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

// AllowAt counts one event for key at now if it fits. With a store, the store decides with
// its own clock (now only dates the answer) and ctx bounds the call.
func (w *Window) AllowAt(ctx context.Context, key string, now time.Time) WindowResult {
	n := now.UnixNano()
	if st := w.store; st != nil && st.Available(key) {
		if r, count, err := w.allowShared(ctx, key, now); err == nil {
			w.sw.onStore()
			w.mu.Lock()
			if k := w.entryLocked(key, n); k != nil {
				if r.Allowed {
					k.log.resize(w.fallbackLimit())
					k.log.add(n) // counted if Redis goes away
				}
				k.seen.see(count, n)
			}
			w.mu.Unlock()
			return r
		}
	}
	limit, sw := w.limit, int64(0)
	if w.store != nil {
		if ctx.Err() == nil { // a caller that gave up says nothing of the store
			w.sw.switchAt(n)
		}
		limit, sw = w.fallbackLimit(), w.sw.switched()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.memLocked(key, n, limit, sw)
}

func (w *Window) fallbackLimit() int {
	return Budget{Requests: w.limit}.scaled(w.share).Requests
}

// entryLocked returns key's entry, made if there is room; nil when MaxKeys other keys are
// active.
func (w *Window) entryLocked(key string, now int64) *windowKey {
	k := w.keys[key]
	if k == nil {
		if len(w.keys) >= w.maxKeys {
			w.sweepLocked(now)
		}
		if len(w.keys) >= w.maxKeys {
			return nil
		}
		k = &windowKey{}
		w.keys[key] = k
	}
	return k
}

// memLocked decides on the memory table, limit events per key; sw is the switch from the
// store to the fallback share (zero or less: none), for the hold just after it.
func (w *Window) memLocked(key string, now int64, limit int, sw int64) WindowResult {
	r := WindowResult{Limit: limit}
	k := w.entryLocked(key, now)
	if k == nil {
		r.Full, r.RetryAfter = true, time.Duration(w.window)
		r.Reset = time.Unix(0, now+w.window)
		return r
	}
	k.log.resize(limit)
	hold, allow, holds := k.seen.hold(sw, w.window, now, int64(w.limit), int64(limit), 1, w.share, false)
	if holds {
		r.Limit = int(allow)
	}
	if wait := max(k.log.wait(now, w.window), hold); wait > 0 {
		r.RetryAfter, r.Reset = time.Duration(wait), time.Unix(0, now+wait)
		return r
	}
	k.log.add(now)
	r.Allowed = true
	r.Remaining = max(limit-k.log.usedSorted(now, w.window), 0)
	if sw > 0 {
		k.seen.after++
	}
	if holds {
		r.Remaining = min(r.Remaining, int(allow-k.seen.after))
	}
	r.Reset = time.Unix(0, now)
	if r.Remaining == 0 {
		next := k.log.wait(now, w.window)
		if holds {
			hold, _, _ = k.seen.hold(sw, w.window, now, int64(w.limit), int64(limit), 1, w.share, false)
			next = max(next, hold)
		}
		r.Reset = time.Unix(0, max(now, now+next))
	}
	return r
}

// sweepLocked drops keys with no event left in the window, at most every window/8, unless
// the store saw the key recently enough that it counts just after a switch to the
// fallback share (see seenWindow.hold).
func (w *Window) sweepLocked(now int64) {
	if now < w.nextSweep {
		return
	}
	w.nextSweep = now + w.window/8
	for key, k := range w.keys {
		log := &k.log
		idle := log.n == 0 || log.ring[(log.head+log.n-1)%len(log.ring)]+w.window <= now
		if idle && k.seen.at+2*w.window <= now {
			delete(w.keys, key)
		}
	}
}

// usedSorted counts the entries still in the window at now; the log is ordered.
func (r *requestLog) usedSorted(now, span int64) int {
	i := sort.Search(r.n, func(i int) bool { return r.ring[(r.head+i)%len(r.ring)]+span > now })
	return r.n - i
}

// allowShared decides on the store; count is how many events the key's shared window
// held when it decided, this one included when allowed.
func (w *Window) allowShared(ctx context.Context, key string, now time.Time) (res WindowResult, count int64, err error) {
	c, err := w.store.CountEvent(ctx, Event{Window: w.name, Key: key, Limit: w.limit, Span: time.Duration(w.window)})
	if err != nil {
		return WindowResult{}, 0, err
	}
	res = WindowResult{Allowed: c.Allowed, Limit: w.limit, Remaining: c.Remaining, Reset: now.Add(c.Wait)}
	if !res.Allowed {
		res.RetryAfter = max(c.Wait, time.Microsecond)
	}
	return res, c.Count, nil
}
