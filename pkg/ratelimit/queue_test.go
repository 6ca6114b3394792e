package ratelimit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestAcquireQueueFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 1, Window: time.Second, WindowPad: -1}}})
		start := time.Now()
		var mu sync.Mutex
		var order []int
		var waits []time.Duration
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() {
				tk, err := l.Acquire(t.Context(), Request{Upstream: "u"})
				if err != nil {
					t.Errorf("call %d: %v", i, err)
					return
				}
				defer tk.Release()
				mu.Lock()
				order = append(order, i)
				waits = append(waits, time.Since(start))
				mu.Unlock()
			})
			synctest.Wait() // each call enters the queue before the next starts
		}
		wg.Wait()
		for i := range order {
			if order[i] != i {
				t.Fatalf("order %v, want FIFO", order)
			}
			if want := time.Duration(i) * time.Second; waits[i] != want {
				t.Fatalf("call %d admitted after %v, want %v", i, waits[i], want)
			}
		}
	})
}

func TestAcquireQueueTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", MaxConcurrent: 1, QueueTimeout: 5 * time.Second}}})
		held, err := l.Acquire(t.Context(), Request{Upstream: "u"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = l.Acquire(t.Context(), Request{Upstream: "u"})
		var qe *QueueError
		if !errors.As(err, &qe) || qe.Reason != QueueTimeout {
			t.Fatalf("got %v, want queue_timeout", err)
		}
		if waited := time.Since(start); waited != 5*time.Second {
			t.Fatalf("gave up after %v, want 5s", waited)
		}
		held.Release()
		st := l.StatusAt(time.Now(), nil)
		if st.Upstreams[0].QueueRefused[QueueTimeout] != 1 || st.Upstreams[0].QueueDepth != 0 {
			t.Fatalf("status %+v", st.Upstreams[0])
		}
	})
}

func TestAcquireRefusesAtOnceWhenWaitExceedsLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 1, Window: time.Minute, WindowPad: -1, QueueTimeout: 10 * time.Second}}})
		if _, err := l.Acquire(t.Context(), Request{Upstream: "u"}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		// the known wait (60s) exceeds the queue timeout
		_, err := l.Acquire(t.Context(), Request{Upstream: "u"})
		if le := limitErr(t, err); le.Kind != KindRequests || le.RetryAfter != time.Minute {
			t.Fatalf("got %s %v", le.Kind, le.RetryAfter)
		}
		// and the call's deadline
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		l2 := newLimiter(t, Options{Budgets: []Budget{{Match: "u", MinInterval: 8 * time.Second}}})
		if _, err := l2.Acquire(ctx, Request{Upstream: "u"}); err != nil {
			t.Fatal(err)
		}
		_, err = l2.Acquire(ctx, Request{Upstream: "u"})
		if le := limitErr(t, err); le.Kind != KindInterval {
			t.Fatalf("got %s", le.Kind)
		}
		if time.Since(start) != 0 {
			t.Fatal("refusal was not at once")
		}
	})
}

func TestAcquireRejectMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", MinInterval: time.Second, OnLimit: Reject}}})
		if _, err := l.Acquire(t.Context(), Request{Upstream: "u"}); err != nil {
			t.Fatal(err)
		}
		_, err := l.Acquire(t.Context(), Request{Upstream: "u"})
		if le := limitErr(t, err); le.Kind != KindInterval || le.RetryAfter != time.Second {
			t.Fatalf("got %s %v", le.Kind, le.RetryAfter)
		}
	})
}

func TestAcquireCooldownIsNeverQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Endpoints: []Endpoint{{ID: "e", Upstream: "u", Interval: 10 * time.Second}}})
		if _, err := l.Acquire(t.Context(), Request{Endpoint: "e"}); err != nil {
			t.Fatal(err)
		}
		_, err := l.Acquire(t.Context(), Request{Endpoint: "e"})
		if le := limitErr(t, err); le.Kind != KindCooldown || le.RetryAfter != 10*time.Second {
			t.Fatalf("got %s %v", le.Kind, le.RetryAfter)
		}
	})
}

func TestAcquireQueueFullAndCancelFreesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", MaxConcurrent: 1, QueueDepth: 1}}})
		held, err := l.Acquire(t.Context(), Request{Upstream: "u"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := l.Acquire(ctx, Request{Upstream: "u"})
			done <- err
		}()
		synctest.Wait()
		_, err = l.Acquire(t.Context(), Request{Upstream: "u"})
		var qe *QueueError
		if !errors.As(err, &qe) || qe.Reason != QueueFull || qe.RetryAfter <= 0 {
			t.Fatalf("got %v, want queue_full", err)
		}
		start := time.Now()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call got %v", err)
		}
		if time.Since(start) != 0 {
			t.Fatal("cancellation did not leave the queue at once")
		}
		// its place is free again
		admitted := make(chan Ticket, 1)
		go func() {
			tk, err := l.Acquire(t.Context(), Request{Upstream: "u"})
			if err != nil {
				t.Error(err)
			}
			admitted <- tk
		}()
		synctest.Wait()
		held.Release()
		tk := <-admitted
		if tk.QueueWait != 0 {
			t.Fatalf("QueueWait %v, want 0 in a bubble with no time passing", tk.QueueWait)
		}
		tk.Release()
	})
}

func TestAcquireProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{
			Budgets:          []Budget{{Match: "u", MinInterval: 3500 * time.Millisecond}},
			ProgressInterval: time.Second,
		})
		if _, err := l.Acquire(t.Context(), Request{Upstream: "u"}); err != nil {
			t.Fatal(err)
		}
		var got []Progress
		tk, err := l.Acquire(t.Context(), Request{Upstream: "u", Progress: func(p Progress) { got = append(got, p) }})
		if err != nil {
			t.Fatal(err)
		}
		if tk.QueueWait != 3500*time.Millisecond {
			t.Fatalf("QueueWait %v", tk.QueueWait)
		}
		want := []Progress{
			{Waited: 0, Estimate: 3500 * time.Millisecond, Position: 1},
			{Waited: time.Second, Estimate: 3500 * time.Millisecond, Position: 1},
			{Waited: 2 * time.Second, Estimate: 3500 * time.Millisecond, Position: 1},
			{Waited: 3 * time.Second, Estimate: 3500 * time.Millisecond, Position: 1},
		}
		if len(got) != len(want) {
			t.Fatalf("progress %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i].Waited != want[i].Waited || got[i].Position != 1 {
				t.Fatalf("progress %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}

func TestAcquireWaitsOutLearnedHoldWithinDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Endpoints: []Endpoint{{ID: "a", Upstream: "u"}, {ID: "b", Upstream: "u"}}})
		tk, err := l.Acquire(t.Context(), Request{Endpoint: "a"})
		if err != nil {
			t.Fatal(err)
		}
		tk.Observe(429, hdr("Retry-After", "40"), nil)
		tk.Release()
		// the queue timeout (30s) does not bound a learned hold; the deadline does
		ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
		defer cancel()
		start := time.Now()
		tk, err = l.Acquire(ctx, Request{Endpoint: "b"})
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 40*time.Second || tk.QueueWait != waited {
			t.Fatalf("waited %v (QueueWait %v), want 40s", waited, tk.QueueWait)
		}
		tk.Observe(429, hdr("Retry-After", "40"), nil)
		tk.Release()
		// a hold past the deadline is refused at once with the exact wait: the second 429,
		// after one call in its window, also taught a budget of one call per minute (plus
		// the 250ms pad) from b's admission, which outlasts the 40s block
		ctx2, cancel2 := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel2()
		_, err = l.Acquire(ctx2, Request{Endpoint: "a"})
		if le := limitErr(t, err); le.Scope != ScopeUpstream || le.Kind != KindLearned || le.RetryAfter != time.Minute+250*time.Millisecond {
			t.Fatalf("got %s %s %v", le.Scope, le.Kind, le.RetryAfter)
		}
	})
}

func TestAcquireConcurrentAgentsStayInBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: n, Window: 2 * time.Second, MaxConcurrent: 4, QueueDepth: 16}}})
		var mu sync.Mutex
		var admitted []time.Time
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 15 {
					tk, err := l.Acquire(t.Context(), Request{Upstream: "u"})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					admitted = append(admitted, time.Now())
					mu.Unlock()
					time.Sleep(100 * time.Millisecond) // the upstream call, on the bubble's fake clock
					tk.Release()
				}
			})
		}
		wg.Wait()
		if len(admitted) != 120 {
			t.Fatalf("%d admitted, want 120", len(admitted))
		}
		span := 2*time.Second + DefaultWindowPad
		for i := n; i < len(admitted); i++ {
			if d := admitted[i].Sub(admitted[i-n]); d < span {
				t.Fatalf("%d admissions within %v", n+1, d)
			}
		}
		// 120 calls at 20 per 2.25s, 4 at a time for 100ms each: every window's 20 calls go
		// in its first 400ms, so the last goes 400ms into the sixth window
		if got, want := admitted[len(admitted)-1].Sub(admitted[0]), 5*span+400*time.Millisecond; got != want {
			t.Fatalf("took %v, want %v (full use of the budget)", got, want)
		}
	})
}
