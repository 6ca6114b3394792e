package ratelimit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeStore is a Store that keeps only a requests count (never expiring: the tests here
// decide before any window ends) and can be made unreachable. It counts its calls.
type fakeStore struct {
	mu     sync.Mutex
	down   bool
	count  int // calls in the shared requests window
	admits int // calls to Admit
}

var _ Store = (*fakeStore)(nil)

var errFakeDown = errors.New("fake store down")

func (f *fakeStore) Admit(_ context.Context, a *Admission) (Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.admits++
	if f.down {
		return Decision{}, errFakeDown
	}
	n := a.Budget.Requests
	if n > 0 && f.count >= n {
		return Decision{Kind: KindRequests, Scope: ScopeProxy, Wait: a.Budget.Window, Requests: f.count,
			RequestsFree: a.Budget.Window}, nil
	}
	if a.Charge {
		f.count++
	}
	d := Decision{OK: true, Requests: f.count}
	if n > 0 && f.count >= n {
		d.RequestsFree = a.Budget.Window
	}
	return d, nil
}

func (f *fakeStore) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

func (f *fakeStore) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.admits
}

func (f *fakeStore) Release(context.Context, string, string) error { return nil }
func (f *fakeStore) Settle(context.Context, string, int64, int64, time.Duration) error {
	return nil
}
func (f *fakeStore) Block(context.Context, string, string, time.Duration, string) error {
	return nil
}

func (f *fakeStore) Available() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.down
}

func (f *fakeStore) Degraded() (bool, time.Time, string) { return !f.Available(), time.Time{}, "" }
func (f *fakeStore) FallbackShare() float64              { return 0.34 }

// TestFallbackAfterUnevenLoadCountsTheSharedWindow: the fallback share used to count only
// this replica's own calls, so after the other replicas had filled the shared window a
// replica switching to it admitted its whole share at once, while the upstream's window
// was still full. Now it allows, for one window after it last saw the shared window, its
// share of what was left there, and a replica that saw nothing waits a window.
func TestFallbackAfterUnevenLoadCountsTheSharedWindow(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const window = time.Minute // no pad: the span is the window
	tests := []struct {
		name     string
		requests int
		seen     int  // calls in the shared window when this replica last asked; -1: never asked
		startUp  bool // the store answered when the limiter was made
		switchIn time.Duration
		admitted int           // calls admitted at once on the fallback
		wait     time.Duration // the wait of the next one, counted from t0
		after    int           // calls admitted once that wait is over (the plain share)
	}{
		{name: "window seen full: none until a window after it was seen",
			requests: 10, seen: 10, startUp: true, switchIn: time.Second, wait: window, after: 3},
		{name: "window seen partly spent: the share of what was left",
			// after: its own call seen at t0 has left the window, its two fallback calls have not
			requests: 10, seen: 4, startUp: true, switchIn: time.Second, admitted: 2, wait: window, after: 1},
		{name: "window seen with one call left of two: at least 1 is for an empty window only",
			requests: 2, seen: 1, startUp: true, switchIn: time.Second, wait: window, after: 1},
		{name: "window seen empty: the plain share",
			requests: 10, seen: 0, startUp: true, switchIn: time.Second, admitted: 3, wait: time.Second + window, after: 3},
		{name: "idle replica saw nothing: none until a window after the switch",
			requests: 10, seen: -1, startUp: true, switchIn: time.Second, wait: time.Second + window, after: 3},
		{name: "window seen long before the switch says nothing of the current one",
			requests: 10, seen: 0, startUp: true, switchIn: 2 * window, wait: 3 * window, after: 3},
		{name: "store never answered: the plain share from the start",
			requests: 10, seen: -1, switchIn: time.Second, admitted: 3, wait: time.Second + window, after: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &fakeStore{down: !tt.startUp}
			l := newLimiter(t, Options{Store: st, Endpoints: []Endpoint{{ID: "s.a", Upstream: "up"}},
				Budgets: []Budget{{Match: "up", Requests: tt.requests, Window: window, WindowPad: -1}}})
			switch {
			case tt.seen > 0:
				// the other replicas' calls, then this replica's own, which sees them
				st.count = tt.seen - 1
				if _, err := l.AdmitAt(Request{Endpoint: "s.a"}, t0); err != nil {
					t.Fatal(err)
				}
			case tt.seen == 0:
				// a check that charges nothing sees the empty window
				ep, up := l.resolve(Request{Endpoint: "s.a"})
				up.mu.Lock()
				l.admitShared(ep, up, Request{Endpoint: "s.a"}, t0.UnixNano(), false)
				up.mu.Unlock()
			}
			st.setDown(true)
			now := t0.Add(tt.switchIn)
			for i := range tt.admitted {
				if _, err := l.AdmitAt(Request{Endpoint: "s.a"}, now); err != nil {
					t.Fatalf("fallback call %d at the switch: %v, want admitted", i, err)
				}
			}
			_, err := l.AdmitAt(Request{Endpoint: "s.a"}, now)
			le := limitErr(t, err)
			if le.Kind != KindRequests {
				t.Fatalf("call %d at the switch: got %v, want a requests refusal", tt.admitted, err)
			}
			if got, want := le.RetryAfter, tt.wait-tt.switchIn; got != want {
				t.Errorf("RetryAfter = %v, want %v", got, want)
			}
			if got, want := l.ReadyAt("s.a", now), tt.wait-tt.switchIn; got != want {
				t.Errorf("ReadyAt on the fallback = %v, want %v", got, want)
			}
			later := t0.Add(tt.wait)
			for i := range tt.after {
				if _, err := l.AdmitAt(Request{Endpoint: "s.a"}, later); err != nil {
					t.Fatalf("call %d a window later: %v, want admitted on the share", i, err)
				}
			}
			if _, err := l.AdmitAt(Request{Endpoint: "s.a"}, later); err == nil {
				t.Errorf("call %d a window later admitted, want the share (%d) to hold", tt.after, tt.after)
			}
		})
	}
}

// TestReadyAtWithStoreAsksNothing: ReadyAt with a store ran the whole admission script,
// under the upstream's lock, for every search hit. It now answers from this replica's
// state and what the store last said, and never calls the store.
func TestReadyAtWithStoreAsksNothing(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	st := &fakeStore{}
	l := newLimiter(t, Options{Store: st,
		Endpoints: []Endpoint{{ID: "s.a", Upstream: "up", Interval: time.Second}, {ID: "s.b", Upstream: "up"},
			{ID: "s.c", Interval: 2 * time.Second}},
		Budgets: []Budget{{Match: "up", Requests: 2, Window: time.Minute, WindowPad: -1, MinInterval: 100 * time.Millisecond}}})
	ready := func(id string, at time.Time) time.Duration {
		t.Helper()
		before := st.calls()
		w := l.ReadyAt(id, at)
		if n := st.calls() - before; n != 0 {
			t.Fatalf("ReadyAt(%s) called the store %d times, want 0", id, n)
		}
		return w
	}
	if w := ready("s.a", t0); w != 0 {
		t.Errorf("before any call: ReadyAt = %v, want 0", w)
	}
	for _, id := range []string{"s.a", "s.c"} {
		if _, err := l.AdmitAt(Request{Endpoint: id}, t0); err != nil {
			t.Fatal(err)
		}
	}
	// this replica's own cooldowns and minimum interval, as configured (not stretched)
	if w := ready("s.a", t0); w != time.Second {
		t.Errorf("after a call: ReadyAt(s.a) = %v, want the cooldown 1s", w)
	}
	if w := ready("s.b", t0); w != 100*time.Millisecond {
		t.Errorf("after a call: ReadyAt(s.b) = %v, want the minimum interval 100ms", w)
	}
	if w := ready("s.c", t0.Add(time.Second)); w != time.Second {
		t.Errorf("after a call: ReadyAt(s.c) = %v, want the rest of the cooldown 1s", w)
	}
	// another replica's call fills the shared window: the store's answer says so
	st.count++
	if _, err := l.AdmitAt(Request{Endpoint: "s.b"}, t0.Add(time.Second)); err == nil {
		t.Fatal("admitted past the shared budget")
	}
	if w := ready("s.b", t0.Add(2*time.Second)); w != time.Minute-time.Second {
		t.Errorf("shared window full: ReadyAt(s.b) = %v, want what the store said less the time since, 59s", w)
	}
}
