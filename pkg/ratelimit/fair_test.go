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

// admissions queues the calls of reqs in order, each entering the queue before the next
// starts, behind one call admitted at once, and returns the order they were admitted in.
func admissions(t *testing.T, l *Limiter, reqs []Request) []string {
	t.Helper()
	first, err := l.Acquire(t.Context(), Request{Upstream: "u", Principal: "first"})
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			tk, err := l.Acquire(t.Context(), r)
			if err != nil {
				t.Errorf("call %d (%s): %v", i, r.Principal, err)
				return
			}
			defer tk.Release()
			mu.Lock()
			order = append(order, label(r))
			mu.Unlock()
		})
		synctest.Wait()
	}
	wg.Wait()
	return order
}

func label(r Request) string {
	if r.Background {
		return r.Principal + "*"
	}
	return r.Principal
}

func calls(principal string, n int, background bool) []Request {
	out := make([]Request, n)
	for i := range out {
		out[i] = Request{Upstream: "u", Principal: principal, Background: background}
	}
	return out
}

func TestFairQueueOneBurstDoesNotHoldOthersBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 1, Window: time.Second, WindowPad: -1, QueueDepth: 32, QueueTimeout: time.Minute}}})
		start := time.Now()
		reqs := append(calls("ada", 20, false), calls("bob", 1, false)...)
		var bobAt time.Duration
		var mu sync.Mutex
		var wg sync.WaitGroup
		first, err := l.Acquire(t.Context(), Request{Upstream: "u", Principal: "ada"})
		if err != nil {
			t.Fatal(err)
		}
		first.Release()
		for _, r := range reqs {
			wg.Go(func() {
				tk, err := l.Acquire(t.Context(), r)
				if err != nil {
					t.Errorf("%s: %v", r.Principal, err)
					return
				}
				tk.Release()
				if r.Principal == "bob" {
					mu.Lock()
					bobAt = time.Since(start)
					mu.Unlock()
				}
			})
			synctest.Wait()
		}
		wg.Wait()
		// ada's first queued call was tagged with bob's tag and came first; bob goes next,
		// at 2 s, where first come first served had him wait 21 s.
		if bobAt != 2*time.Second {
			t.Fatalf("bob admitted after %v, want 2s", bobAt)
		}
	})
}

func TestFairQueueTakesTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 1, Window: time.Second, WindowPad: -1}}})
		reqs := append(calls("ada", 4, false), calls("bob", 4, false)...)
		got := fmt.Sprint(admissions(t, l, reqs))
		if want := "[ada bob ada bob ada bob ada bob]"; got != want {
			t.Fatalf("order %s, want %s", got, want)
		}
	})
}

func TestFairQueueWeights(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 1, Window: time.Second, WindowPad: -1,
			Weights: map[string]float64{"ada": 2}}}})
		reqs := append(calls("ada", 8, false), calls("bob", 4, false)...)
		order := admissions(t, l, reqs)
		// in every stretch of three admissions while both wait, ada has two
		for i := 0; i+3 <= 9; i += 3 {
			n := 0
			for _, p := range order[i : i+3] {
				if p == "ada" {
					n++
				}
			}
			if n != 2 {
				t.Fatalf("order %v: admissions %d..%d give ada %d, want 2", order, i, i+2, n)
			}
		}
	})
}

func TestFairQueueDirectCallsGoBeforeTheSamePrincipalsScript(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 1, Window: time.Second, WindowPad: -1}}})
		reqs := append(calls("ada", 3, true), calls("ada", 1, false)...)
		reqs = append(reqs, calls("bob", 1, true)...)
		got := fmt.Sprint(admissions(t, l, reqs))
		// ada's direct call takes the earliest of ada's places; bob's script call still
		// gets its turn among ada's
		if want := "[ada bob* ada* ada* ada*]"; got != want {
			t.Fatalf("order %s, want %s", got, want)
		}
	})
}

func TestFairQueueForgetsAPrincipalThatLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 1, Window: time.Minute, WindowPad: -1, QueueTimeout: time.Hour}}})
		if _, err := l.Acquire(t.Context(), Request{Upstream: "u"}); err != nil {
			t.Fatal(err)
		}
		up := (*l.upstreams.Load())["u"]
		var wg sync.WaitGroup
		ctx, cancel := context.WithCancel(t.Context())
		for range 5 {
			wg.Go(func() { _, _ = l.Acquire(ctx, Request{Upstream: "u", Principal: "ada"}) })
			synctest.Wait()
		}
		cancel()
		wg.Wait()
		up.mu.Lock()
		defer up.mu.Unlock()
		if len(up.queue) != 0 || len(up.finish) != 0 {
			t.Fatalf("queue %d, finish tags %v after every call left", len(up.queue), up.finish)
		}
	})
}

func TestBudgetWeightsValidated(t *testing.T) {
	for _, w := range []float64{0, -1, 1001} {
		b := Budget{Match: "u", Weights: map[string]float64{"ada": w}}
		if err := b.Validate(); err == nil {
			t.Errorf("weight %v accepted", w)
		}
	}
	if err := (Budget{Match: "u", Weights: map[string]float64{"ada": 0.5}}).Validate(); err != nil {
		t.Errorf("weight 0.5 refused: %v", err)
	}
}

func TestDrainAnswersWaitingCallsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", MaxConcurrent: 1}}})
		held, err := l.Acquire(t.Context(), Request{Upstream: "u"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := l.Acquire(t.Context(), Request{Upstream: "u"})
				errs <- err
			}()
		}
		synctest.Wait()
		l.Drain()
		for range 3 {
			var qe *QueueError
			if err := <-errs; !errors.As(err, &qe) || qe.Reason != QueueShutdown || qe.RetryAfter <= 0 {
				t.Fatalf("queued call got %v, want a shutdown QueueError", err)
			}
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("drained calls answered after %v, want at once", waited)
		}
		// a call that would wait from now on is answered the same way; the one in
		// flight is untouched and releases as usual
		var qe *QueueError
		if _, err := l.Acquire(t.Context(), Request{Upstream: "u"}); !errors.As(err, &qe) || qe.Reason != QueueShutdown {
			t.Fatalf("a call after Drain got %v", err)
		}
		held.Release()
		if tk, err := l.Acquire(t.Context(), Request{Upstream: "u"}); err != nil {
			t.Fatalf("a call that can go now after Drain: %v", err)
		} else {
			tk.Release()
		}
	})
}

// TestFairQueueSameSubjectOfTwoOrgsTakesTwoTurns: the queue's turns follow
// Request.Principal (the key), while Budget.Weights finds a principal by
// Request.Subject, as the configuration names it.
func TestFairQueueSameSubjectOfTwoOrgsTakesTwoTurns(t *testing.T) {
	named := func(key, subject string, n int) []Request {
		out := calls(key, n, false)
		for i := range out {
			out[i].Subject = subject
		}
		return out
	}
	tests := []struct {
		name    string
		weights map[string]float64
		reqs    []Request
		want    string
	}{
		{"ada of other waits one turn behind ada of acme's burst", nil,
			append(named("acme/ada", "ada", 4), named("other/ada", "ada", 1)...),
			"[acme/ada other/ada acme/ada acme/ada acme/ada]"},
		{"a weight is found by subject", map[string]float64{"ada": 4},
			append(named("acme/ada", "ada", 5), named("/bob", "bob", 2)...),
			"[acme/ada /bob acme/ada acme/ada acme/ada /bob acme/ada]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 1, Window: time.Second, WindowPad: -1,
					Weights: tt.weights}}})
				if got := fmt.Sprint(admissions(t, l, tt.reqs)); got != tt.want {
					t.Errorf("order %s, want %s", got, tt.want)
				}
			})
		})
	}
}

// TestQueueFullOfOnePrincipalLetsAnotherIn: the queue's depth was one bound for all, so
// ada's calls filled it and bob's got queue_full every time. Now a principal below its
// share of the depth (depth over the principals waiting) takes the last place of the
// principal holding the most, which leaves with queue_full; one at its share is refused.
func TestQueueFullOfOnePrincipalLetsAnotherIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 1, Window: time.Minute, WindowPad: -1,
			QueueDepth: 4, QueueTimeout: 10 * time.Minute}}})
		first, err := l.Acquire(t.Context(), Request{Upstream: "u", Principal: "ada"})
		if err != nil {
			t.Fatal(err)
		}
		first.Release()
		var mu sync.Mutex
		var admitted, full []string
		var wg sync.WaitGroup
		enter := func(principal string) {
			wg.Go(func() {
				tk, err := l.Acquire(t.Context(), Request{Upstream: "u", Principal: principal})
				mu.Lock()
				defer mu.Unlock()
				var qe *QueueError
				switch {
				case err == nil:
					tk.Release()
					admitted = append(admitted, principal)
				case errors.As(err, &qe) && qe.Reason == QueueFull && qe.RetryAfter > 0:
					full = append(full, principal)
				default:
					t.Errorf("%s: %v", principal, err)
				}
			})
			synctest.Wait()
		}
		fullNow := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), full...)
		}
		for range 5 { // the fifth finds the queue full of ada's own
			enter("ada")
		}
		if got := fmt.Sprint(fullNow()); got != "[ada]" {
			t.Fatalf("refused %s, want [ada]: alone, ada may fill the queue", got)
		}
		for _, tt := range []struct {
			principal, want string
		}{
			{"bob", "[ada ada]"},         // bob holds 0 of a share of 2: ada's last leaves
			{"bob", "[ada ada ada]"},     // bob holds 1 of 2: ada's last again
			{"bob", "[ada ada ada bob]"}, // bob holds his 2: refused
			{"ada", "[ada ada ada bob ada]"},
			{"cy", "[ada ada ada bob ada bob]"}, // cy holds 0 of 1 (4/3): of the two holding 2, bob (the later name) loses one
		} {
			enter(tt.principal)
			if got := fmt.Sprint(fullNow()); got != tt.want {
				t.Fatalf("after %s entered, refused %s, want %s", tt.principal, got, tt.want)
			}
		}
		time.Sleep(5 * time.Minute) // the budget admits one call a minute: the queue empties
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		if got := fmt.Sprint(admitted); got != "[ada bob cy ada]" {
			t.Errorf("admitted %s, want [ada bob cy ada] (turns by principal)", got)
		}
		st := l.StatusAt(time.Now(), nil)
		if st.Upstreams[0].QueueRefused[QueueFull] != int64(len(full)) {
			t.Errorf("status counts %d queue_full, want %d", st.Upstreams[0].QueueRefused[QueueFull], len(full))
		}
	})
}
