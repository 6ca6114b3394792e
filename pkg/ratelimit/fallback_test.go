package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeStore is a Store that keeps only a requests count and a tokens sum (never
// expiring: the tests here decide before any window ends) and can be made unreachable.
// It counts its calls.
type fakeStore struct {
	mu     sync.Mutex
	down   bool
	count  int   // calls in the shared requests window
	tokens int64 // tokens in the shared tokens window
	admits int   // calls to Admit
	// slow, when set, makes Admit wait that long and fail, while Available still says
	// the store answers: a store that is going away, or with slowUp one that answers a
	// probe but not the call in time (the error wraps ErrStoreSlow)
	slow   time.Duration
	slowUp bool
}

var _ Store = (*fakeStore)(nil)

var errFakeDown = errors.New("fake store down")

func (f *fakeStore) Admit(_ context.Context, a *Admission) (Decision, error) {
	f.mu.Lock()
	if f.slow > 0 {
		d := f.slow
		f.admits++
		f.mu.Unlock()
		time.Sleep(d) // in a synctest bubble: the store's timeout passing
		if f.slowUp {
			return Decision{}, fmt.Errorf("%w: %w", ErrStoreSlow, context.DeadlineExceeded)
		}
		return Decision{}, errFakeDown
	}
	defer f.mu.Unlock()
	f.admits++
	if f.down {
		return Decision{}, errFakeDown
	}
	n, nt := a.Budget.Requests, a.Budget.Tokens
	if n > 0 && f.count >= n {
		return Decision{Kind: KindRequests, Scope: ScopeProxy, Wait: a.Budget.Window, Requests: f.count,
			RequestsFree: a.Budget.Window, Tokens: f.tokens}, nil
	}
	if nt > 0 && f.tokens+tokenCost(a.Tokens, nt) > nt {
		return Decision{Kind: KindTokens, Scope: ScopeProxy, Wait: a.Budget.Window, Requests: f.count,
			Tokens: f.tokens}, nil
	}
	if a.Charge {
		f.count++
		f.tokens += max(a.Tokens, 0)
	}
	d := Decision{OK: true, Requests: f.count, Tokens: f.tokens}
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

func (f *fakeStore) CountEvent(context.Context, Event) (EventCount, error) {
	return EventCount{}, errors.New("fake store counts no events")
}

func (f *fakeStore) Available(string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.down
}

func (f *fakeStore) Degraded() (bool, time.Time, string) { return !f.Available(""), time.Time{}, "" }
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
		// regression: the fallback forgot that time passed. A window seen spent 3.8s before
		// Redis died (of 3s) held every call for a whole window more, the upstream idle.
		{name: "window seen long before the switch has aged out: the plain share at once",
			requests: 10, seen: 0, startUp: true, switchIn: 2 * window, admitted: 3, wait: 3 * window, after: 3},
		{name: "window seen spent long before the switch has aged out: the plain share at once",
			requests: 10, seen: 10, startUp: true, switchIn: 2 * window, admitted: 3, wait: 3 * window, after: 3},
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
				l.admitShared(t.Context(), ep, up, Request{Endpoint: "s.a"}, t0.UnixNano(), false)
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

// TestFallbackAfterUnevenLoadCountsTheSharedTokensWindow: the tokens window was left out
// when the fallback learned to count the shared requests window: after the other
// replicas had spent the shared tokens budget, a replica switching to its fallback
// admitted its whole share of tokens at once, while the upstream's window was still full.
// Now the tokens window holds like the requests window: for one window after it last saw
// it, a replica allows its share of the tokens left there, and one that saw nothing
// allows none until a window after the switch.
func TestFallbackAfterUnevenLoadCountsTheSharedTokensWindow(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const (
		window = time.Minute // no pad: the span is the window
		budget = 1000        // share 0.34: 340 per replica
		own    = 100         // tokens of this replica's call that sees the shared window
	)
	// a charge at `at` counts locally until its token bucket leaves the window
	g := int64(window) / tokenBucketsPerWindow
	bucketGone := func(at time.Time) time.Duration {
		n := at.UnixNano()
		return time.Duration(n - n%g + g + int64(window) - t0.UnixNano())
	}
	tests := []struct {
		name     string
		seen     int64 // tokens in the shared window when this replica last asked; -1: never asked
		startUp  bool  // the store answered when the limiter was made
		switchIn time.Duration
		admitted []int64       // calls (their tokens) admitted at once on the fallback
		wait     time.Duration // the wait of a 1-token call next, counted from t0; 0: its token bucket
		after    []int64       // calls admitted once that wait is over
	}{
		{name: "tokens window seen full: none until a window after it was seen",
			// after: its own call seen at t0 still counts locally, in its token bucket
			seen: budget, startUp: true, switchIn: time.Second, wait: window, after: []int64{240}},
		{name: "tokens window seen partly spent: the share of what was left",
			// floor(0.34 × 600) = 204
			seen: 400, startUp: true, switchIn: time.Second, admitted: []int64{100, 100, 4}, wait: window,
			after: []int64{36}},
		{name: "tokens window seen with one token left: at least 1 is for an empty window only",
			seen: budget - 1, startUp: true, switchIn: time.Second, wait: window, after: []int64{240}},
		{name: "tokens window seen empty: the plain share",
			seen: 0, startUp: true, switchIn: time.Second, admitted: []int64{300, 40}},
		{name: "idle replica saw nothing: none until a window after the switch",
			seen: -1, startUp: true, switchIn: time.Second, wait: time.Second + window, after: []int64{340}},
		{name: "tokens window seen long before the switch has aged out: the plain share at once",
			seen: 0, startUp: true, switchIn: 2 * window, admitted: []int64{340}},
		{name: "tokens window seen spent long before the switch has aged out: the plain share at once",
			seen: budget, startUp: true, switchIn: 2 * window, admitted: []int64{340}},
		{name: "store never answered: the plain share from the start",
			seen: -1, switchIn: time.Second, admitted: []int64{340}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &fakeStore{down: !tt.startUp}
			l := newLimiter(t, Options{Store: st, Endpoints: []Endpoint{{ID: "s.a", Upstream: "up"}},
				Budgets: []Budget{{Match: "up", Tokens: budget, Window: window, WindowPad: -1}}})
			switch {
			case tt.seen > 0:
				// the other replicas' tokens, then this replica's own call, which sees them
				st.tokens = tt.seen - own
				if _, err := l.AdmitAt(Request{Endpoint: "s.a", Tokens: own}, t0); err != nil {
					t.Fatal(err)
				}
			case tt.seen == 0:
				// a check that charges nothing sees the empty window
				ep, up := l.resolve(Request{Endpoint: "s.a"})
				up.mu.Lock()
				l.admitShared(t.Context(), ep, up, Request{Endpoint: "s.a"}, t0.UnixNano(), false)
				up.mu.Unlock()
			}
			st.setDown(true)
			now := t0.Add(tt.switchIn)
			for i, n := range tt.admitted {
				if _, err := l.AdmitAt(Request{Endpoint: "s.a", Tokens: n}, now); err != nil {
					t.Fatalf("fallback call %d (%d tokens) at the switch: %v, want admitted", i, n, err)
				}
			}
			wait := tt.wait
			if wait == 0 {
				wait = bucketGone(now)
			}
			_, err := l.AdmitAt(Request{Endpoint: "s.a", Tokens: 1}, now)
			le := limitErr(t, err)
			if le.Kind != KindTokens {
				t.Fatalf("a 1-token call at the switch: got %v, want a tokens refusal", err)
			}
			if got, want := le.RetryAfter, wait-tt.switchIn; got != want {
				t.Errorf("RetryAfter = %v, want %v", got, want)
			}
			if got, want := l.ReadyAt("s.a", now), wait-tt.switchIn; got != want {
				t.Errorf("ReadyAt on the fallback = %v, want %v", got, want)
			}
			if len(tt.after) == 0 {
				return
			}
			later := t0.Add(wait)
			for i, n := range tt.after {
				if _, err := l.AdmitAt(Request{Endpoint: "s.a", Tokens: n}, later); err != nil {
					t.Fatalf("call %d (%d tokens) once the wait is over: %v, want admitted on the share", i, n, err)
				}
			}
			if _, err := l.AdmitAt(Request{Endpoint: "s.a", Tokens: 1}, later); err == nil {
				t.Errorf("a 1-token call past the share admitted once the wait is over, want the share to hold")
			}
		})
	}
}

// TestFallbackSettleCountsAgainstTheSharedTokensLeft: what a replica may spend of the
// tokens left in the shared window it last saw counts what its calls really cost, not
// only their estimates: a settle of a call admitted on the fallback, or of more tokens
// for a call admitted through the store while it is unreachable, the store never learns.
func TestFallbackSettleCountsAgainstTheSharedTokensLeft(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const window = time.Minute
	for _, tt := range []struct {
		name     string
		fallback bool // settle a call admitted on the fallback; else the call that saw the store
	}{
		{name: "a call admitted on the fallback settled to more", fallback: true},
		{name: "a call admitted through the store settled to more while it is down"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &fakeStore{tokens: 300}
			l := newLimiter(t, Options{Store: st, Endpoints: []Endpoint{{ID: "s.a", Upstream: "up"}},
				Budgets: []Budget{{Match: "up", Requests: 100, Tokens: 1000, Window: window, WindowPad: -1}}})
			seen, err := l.AdmitAt(Request{Endpoint: "s.a", Tokens: 100}, t0) // sees 400 of 1000
			if err != nil {
				t.Fatal(err)
			}
			st.setDown(true)
			now := t0.Add(time.Second)
			tk := seen
			if tt.fallback {
				// floor(0.34 × 600) = 204 tokens left to this replica
				if tk, err = l.AdmitAt(Request{Endpoint: "s.a", Tokens: 100}, now); err != nil {
					t.Fatalf("a fallback call within the share: %v", err)
				}
			}
			tk.SettleAt(200, now) // 100 more tokens than estimated
			spent := int64(100)   // of the 204: the settle's extra
			if tt.fallback {
				spent = 200 // the fallback call, settled
			}
			_, err = l.AdmitAt(Request{Endpoint: "s.a", Tokens: 204 - spent + 1}, now)
			if le := limitErr(t, err); le.Kind != KindTokens || le.RetryAfter != window-time.Second {
				t.Fatalf("a call one token past what is left: %v, want a tokens refusal until a window after t0", err)
			}
			if _, err := l.AdmitAt(Request{Endpoint: "s.a", Tokens: 204 - spent}, now); err != nil {
				t.Fatalf("a call of what is left: %v, want admitted", err)
			}
		})
	}
}

// A call that waits in the queue while the store goes away reports the whole wait, the
// store call that timed out on its way to the fallback share included.
func TestQueueWaitCountsAStoreTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &fakeStore{}
		l := newLimiter(t, Options{Store: st, Budgets: []Budget{{Match: "u", Requests: 1, Window: 10 * time.Second, WindowPad: -1, QueueTimeout: time.Minute}}})
		tk, err := l.Acquire(t.Context(), Request{Upstream: "u"})
		if err != nil {
			t.Fatal(err)
		}
		tk.Release()
		start := time.Now()
		done := make(chan Ticket)
		go func() {
			tk, err := l.Acquire(t.Context(), Request{Upstream: "u"})
			if err != nil {
				t.Error(err)
			}
			done <- tk
		}()
		synctest.Wait() // queued behind the spent window
		st.mu.Lock()
		st.slow = 1500 * time.Millisecond
		st.mu.Unlock()
		tk = <-done
		if waited := time.Since(start); tk.QueueWait != waited || waited < 10*time.Second+1500*time.Millisecond {
			t.Fatalf("QueueWait %v, but the call waited %v", tk.QueueWait, waited)
		}
	})
}

// setSlow makes every Admit from now on wait d and fail, wrapping ErrStoreSlow when up
// (the store answers a probe), else as a store going away; zero d: none.
func (f *fakeStore) setSlow(d time.Duration, up bool) {
	f.mu.Lock()
	f.slow, f.slowUp = d, up
	f.mu.Unlock()
}

// TestSlowStoreHoldsTheCallOffTheFallbackShare: a replica whose store calls time out
// while the store still answers a probe (the other replicas reach it and spend the shared
// window) went to its fallback share and spent its part of what it had last seen left on
// top of theirs: 11 in a window of 10 here, 12 in a window of 10 through a real Redis.
// A slow answer is not an outage: the call is asked again, then held (KindStore) within
// its caller's context and queue timeout, and admitted through the store once it answers;
// a caller that leaves meanwhile gets its context's error with nothing charged. A store
// whose probe gets no answer either is an outage, and the fallback share governs.
func TestSlowStoreHoldsTheCallOffTheFallbackShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const window = 10 * time.Second
		st := &fakeStore{count: 6}
		l := newLimiter(t, Options{Store: st, Endpoints: []Endpoint{{ID: "s.a", Upstream: "up"}},
			Budgets: []Budget{{Match: "up", Requests: 10, Window: window, WindowPad: -1, QueueTimeout: 3 * time.Second}}})
		if _, err := l.Acquire(t.Context(), Request{Endpoint: "s.a"}); err != nil {
			t.Fatal(err) // sees 7 of 10 spent
		}
		st.mu.Lock()
		st.count = 10 // the other replicas spend the rest through the store
		st.mu.Unlock()
		st.setSlow(300*time.Millisecond, true)

		before := st.calls()
		_, err := l.AdmitAt(Request{Endpoint: "s.a"}, time.Now())
		le := limitErr(t, err)
		if le.Kind != KindStore || !le.Estimated || le.Key != "up" {
			t.Fatalf("AdmitAt with the store slow: %+v, want an estimated store hold of up", le)
		}
		if n := st.calls() - before; n != 2 {
			t.Errorf("the store was asked %d times, want 2 (the call and once more)", n)
		}
		if down, _, _ := l.Degraded(); down {
			t.Error("degraded on a slow answer")
		}

		// a caller whose context ends while held: its context's error, nothing charged
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err = l.Acquire(ctx, Request{Endpoint: "s.a"})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire ended by its deadline while held: %v, want context.DeadlineExceeded", err)
		}
		// held no longer than the queue timeout
		start := time.Now()
		_, err = l.Acquire(t.Context(), Request{Endpoint: "s.a"})
		var qe *QueueError
		if !errors.As(err, &qe) || qe.Reason != QueueTimeout {
			t.Fatalf("Acquire held past the queue timeout: %v, want a QueueError for the timeout", err)
		}
		// the queue timeout counts from joining the queue, and the store calls under way
		// (each pair 600ms here) end before the answer
		if waited := time.Since(start); waited < 3*time.Second || waited > 3*time.Second+3*600*time.Millisecond {
			t.Errorf("held %v, want the queue timeout 3s and the store calls around it", waited)
		}

		// the store answers again, the window's calls have left it: admitted through it
		st.setSlow(0, false)
		st.mu.Lock()
		st.count = 0
		st.mu.Unlock()
		tk, err := l.Acquire(t.Context(), Request{Endpoint: "s.a"})
		if err != nil {
			t.Fatalf("Acquire with the store answering: %v", err)
		}
		tk.Release()
		st.mu.Lock()
		shared := st.count
		st.mu.Unlock()
		if shared != 1 {
			t.Errorf("the shared window holds %d calls, want 1: only the call admitted through the store", shared)
		}

		// the probe got no answer either: an outage, the fallback share governs at once
		// (its share, 3, less its own two calls still in the window)
		st.setSlow(300*time.Millisecond, false)
		for i := range 1 {
			if _, err := l.AdmitAt(Request{Endpoint: "s.a"}, time.Now()); err != nil {
				t.Fatalf("call %d with the store down: %v, want admitted on the fallback share", i, err)
			}
		}
		if _, err := l.AdmitAt(Request{Endpoint: "s.a"}, time.Now()); err == nil {
			t.Error("admitted past the fallback share")
		} else if le := limitErr(t, err); le.Kind != KindRequests {
			t.Errorf("past the fallback share: %v, want its requests refusal", err)
		}
	})
}
