package redisstore

import (
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

func TestWindowRedisSharedAndFallback(t *testing.T) {
	srv := redistest.Start(t)
	const limit, win = 4, 400 * time.Millisecond
	var ws []*ratelimit.Window
	for range 2 { // two replicas
		ws = append(ws, newWindow(t, ratelimit.WindowOptions{Name: "requests", Limit: limit, Window: win,
			Store: newTestStore(t, srv, 0.5)}))
	}
	start := time.Now()
	for i := range limit {
		r := ws[i%2].AllowAt(t.Context(), "ada@acme", time.Now())
		if !r.Allowed || r.Remaining != limit-1-i {
			t.Fatalf("event %d: %+v, want allowed with %d remaining", i, r, limit-1-i)
		}
	}
	r := ws[0].AllowAt(t.Context(), "ada@acme", time.Now())
	if r.Allowed || r.RetryAfter <= 0 || r.RetryAfter > win {
		t.Fatalf("over the shared limit: %+v, want refused with a wait within %v", r, win)
	}
	if elapsed := time.Since(start); r.RetryAfter < win-elapsed-time.Millisecond {
		t.Errorf("RetryAfter %v is shorter than the window less the %v elapsed", r.RetryAfter, elapsed)
	}
	time.Sleep(r.RetryAfter)
	if r := ws[1].AllowAt(t.Context(), "ada@acme", time.Now()); !r.Allowed {
		t.Fatalf("after the wait: %+v, want allowed", r)
	}

	// Redis gone: a key this replica saw nothing of runs on its share of the limit at
	// once (inbound windows favour letting a principal in over a bounded overage),
	// counting what it allowed itself
	srv.Stop()
	time.Sleep(win) // let the shared events leave the window
	switched := time.Now()
	allowed := 0
	for range 5 {
		if r := ws[0].AllowAt(t.Context(), "bob@acme", switched); r.Allowed {
			allowed++
			if r.Limit != limit/2 {
				t.Errorf("fallback limit %d, want %d", r.Limit, limit/2)
			}
		}
	}
	if allowed != limit/2 {
		t.Errorf("allowed %d on the fallback share, want %d", allowed, limit/2)
	}
}

// TestWindowFallbackAfterUnevenLoadCountsTheSharedWindow: the inbound Window's fallback
// used to count only the events each replica had allowed itself, so once Redis died a
// replica allowed a principal or client IP its whole share at once, even when the other
// replicas had just spent the key's shared window. Now, for one window after it last saw
// a key's shared window, a replica allows its share of what was left there, none when it
// was full, and none for a key it saw nothing of until a window after the switch. The
// fallback decides with explicit times; the window is long enough that nothing leaves it.
func TestWindowFallbackAfterUnevenLoadCountsTheSharedWindow(t *testing.T) {
	srv := redistest.Start(t)
	const (
		share  = 0.34
		limit  = 9 // share: 3 per replica
		window = time.Minute
	)
	var ws []*ratelimit.Window
	var sts []*Store
	for range 3 { // three replicas, each with its own store
		sts = append(sts, newTestStore(t, srv, share))
		ws = append(ws, newWindow(t, ratelimit.WindowOptions{Name: "requests", Limit: limit, Window: window,
			Store: sts[len(sts)-1]}))
	}
	t0 := time.Now()
	spend := func(w *ratelimit.Window, key string, n int) {
		t.Helper()
		for i := range n {
			if r := w.AllowAt(t.Context(), key, t0); !r.Allowed {
				t.Fatalf("%s: event %d through Redis: %+v, want allowed", key, i, r)
			}
		}
	}
	spend(ws[1], "full", limit-1)
	spend(ws[0], "full", 1) // sees the window full
	spend(ws[1], "part", 2)
	spend(ws[0], "part", 1) // sees 3 of 9: floor(0.34 × 6) = 2 left to it
	spend(ws[1], "other", 1)
	spend(ws[0], "spent", limit) // one replica spends a key's whole window
	srv.Stop()
	sw := t0.Add(time.Millisecond)

	refused := func(w *ratelimit.Window, key string, at time.Time, wait time.Duration) {
		t.Helper()
		r := w.AllowAt(t.Context(), key, at)
		if r.Allowed || r.RetryAfter != wait || !r.Reset.Equal(at.Add(wait)) {
			t.Errorf("%s at %v: %+v, want refused for %v", key, at.Sub(t0), r, wait)
		}
	}
	refused(ws[0], "full", sw, window-time.Millisecond) // a window after it was seen
	for i, rem := range []int{1, 0} {
		r := ws[0].AllowAt(t.Context(), "part", sw)
		if !r.Allowed || r.Limit != 2 || r.Remaining != rem {
			t.Errorf("part: fallback event %d: %+v, want allowed, %d remaining of the 2 left", i, r, rem)
		}
		if rem == 0 && !r.Reset.Equal(t0.Add(window)) {
			t.Errorf("part: Reset %v after the last event left, want a window after it was seen", r.Reset.Sub(t0))
		}
	}
	refused(ws[0], "part", sw, window-time.Millisecond)
	// never seen here: the plain share at once (an inbound window lets an unseen
	// principal in rather than hold it for a window)
	for i := range 3 {
		if r := ws[0].AllowAt(t.Context(), "other", sw); !r.Allowed || r.Limit != 3 {
			t.Errorf("other: fallback event %d: %+v, want allowed on the share of 3", i, r)
		}
	}
	refused(ws[0], "other", sw, window)
	// seen full by the busy replica: it refuses; the others never saw it and allow
	// their shares, the bounded overage of an outage
	if r := ws[0].AllowAt(t.Context(), "spent", sw); r.Allowed {
		t.Errorf("spent: the replica that saw the window full allowed an event: %+v", r)
	}
	for i, w := range ws[1:] {
		if r := w.AllowAt(t.Context(), "spent", sw); !r.Allowed || r.Limit != 3 {
			t.Errorf("spent: replica %d, which never saw the key: %+v, want allowed on its share", i+1, r)
		}
	}
	for i, st := range sts {
		if st.Available("spent") {
			t.Errorf("replica %d: store still available with Redis down", i)
		}
	}

	// a window after the switch, each replica has its share of every key again
	later := sw.Add(window)
	for _, key := range []string{"full", "other"} {
		for i := range 3 {
			if r := ws[0].AllowAt(t.Context(), key, later); !r.Allowed || r.Limit != 3 {
				t.Errorf("%s: event %d a window after the switch: %+v, want allowed on the share of 3", key, i, r)
			}
		}
		refused(ws[0], key, later, window)
	}
	n := 0
	for _, w := range ws {
		for range limit {
			if r := w.AllowAt(t.Context(), "spent", later); r.Allowed {
				n++
			}
		}
	}
	if n != limit {
		t.Errorf("spent: %d events allowed a window after the switch by the three replicas, want their shares, %d", n, limit)
	}
}
