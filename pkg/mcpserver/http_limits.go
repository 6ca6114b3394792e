package mcpserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
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

// clientIP returns the address a request comes from: the socket's peer,
// unless the peer is a trusted proxy, in which case the right-most
// X-Forwarded-For entry that is not a trusted proxy.
func clientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := remoteAddr(r)
	if !peer.IsValid() || !inPrefixes(peer, trusted) {
		return peer
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	addr := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			// A hop we cannot read: the last proxy we trust is all we know.
			return addr
		}
		addr = a.Unmap()
		if !inPrefixes(addr, trusted) {
			return addr
		}
	}
	return addr
}

func remoteAddr(r *http.Request) netip.Addr {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func inPrefixes(a netip.Addr, list []netip.Prefix) bool {
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ipKey groups client addresses the way one client holds them: an IPv4
// address alone, an IPv6 address by its /64.
func ipKey(a netip.Addr) string {
	if !a.IsValid() {
		return "unknown"
	}
	if a.Is6() && !a.Is4In6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.Unmap().String()
}
