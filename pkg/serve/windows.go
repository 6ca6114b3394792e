package serve

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/specgate/specgate/pkg/ratelimit"
)

// WindowCounter counts events per key in rolling windows: the inbound
// budgets per principal and the failed-auth attempts per client IP.
// Windows is the implementation, in memory or shared through Redis.
type WindowCounter interface {
	// Take counts one event for key at now when fewer than limit were
	// counted in the window ending at now. It reports whether the event was
	// counted, how many more would be counted now, and when the next event
	// can be counted (now while remaining > 0). A store that cannot count
	// returns an error; ErrTooManyKeys means the table is full.
	Take(ctx context.Context, key string, limit int, window time.Duration, now time.Time) (ok bool, remaining int, reset time.Time, err error)
}

// ErrTooManyKeys is returned by Take when a new key would exceed the bound
// on keys tracked at once. Active keys are never evicted to make room.
var ErrTooManyKeys = errors.New("too many principals and client IPs tracked at once")

// Windows is the WindowCounter specgate serves with: one ratelimit.Window
// per kind of budget (requests, tool calls, failed auth), each a sliding log
// per key, in memory or shared through a Redis store. It is safe for
// concurrent use. The zero value is not usable: call NewWindows.
type Windows struct {
	store   ratelimit.Store
	maxKeys int

	mu     sync.Mutex
	byKind map[windowKind]*ratelimit.Window
}

type windowKind struct {
	name   string
	limit  int
	window time.Duration
}

var _ WindowCounter = (*Windows)(nil)

// NewWindows returns a counter that tracks at most maxKeys keys of each kind
// at once (if maxKeys <= 0, 10000): idle keys are swept, and when the table
// is still full Take refuses new keys with ErrTooManyKeys. With a store the
// counts are shared by every replica using it; nil counts in memory.
func NewWindows(store ratelimit.Store, maxKeys int) *Windows {
	return &Windows{store: store, maxKeys: maxKeys, byKind: map[windowKind]*ratelimit.Window{}}
}

// kindOf names the budget a key belongs to by its prefix.
func kindOf(key string) string {
	switch {
	case strings.HasPrefix(key, keyRequests):
		return "requests"
	case strings.HasPrefix(key, keyToolCalls):
		return "tool_calls"
	case strings.HasPrefix(key, keyFailedAuth):
		return "failed_auth"
	}
	return "other"
}

// Take implements WindowCounter.
func (w *Windows) Take(ctx context.Context, key string, limit int, window time.Duration, now time.Time) (bool, int, time.Time, error) {
	k := windowKind{name: kindOf(key), limit: limit, window: window}
	w.mu.Lock()
	win, ok := w.byKind[k]
	if !ok {
		var err error
		win, err = ratelimit.NewWindow(ratelimit.WindowOptions{Name: k.name, Limit: limit, Window: window, MaxKeys: w.maxKeys, Store: w.store})
		if err != nil {
			w.mu.Unlock()
			return false, 0, time.Time{}, err
		}
		w.byKind[k] = win
	}
	w.mu.Unlock()
	r := win.AllowAt(ctx, key, now)
	if r.Full {
		return false, 0, time.Time{}, ErrTooManyKeys
	}
	reset := r.Reset
	if !r.Allowed {
		reset = now.Add(r.RetryAfter)
	}
	return r.Allowed, r.Remaining, reset, nil
}
