package ratelimit

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestPerPrincipalShareInsideTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 100, Window: time.Minute, WindowPad: -1,
			PerPrincipal: 2, OnLimit: Reject}}})
		call := func(p string) error {
			tk, err := l.Acquire(t.Context(), Request{Upstream: "u", Principal: p})
			if err == nil {
				tk.Release()
			}
			return err
		}
		for range 2 {
			if err := call("ada"); err != nil {
				t.Fatal(err)
			}
		}
		var le *LimitError
		if err := call("ada"); !errors.As(err, &le) || le.Key != "u per principal" || le.Limit != 2 || le.RetryAfter != time.Minute {
			t.Fatalf("ada's third call: %v", err)
		}
		for range 2 {
			if err := call("bob"); err != nil {
				t.Fatalf("bob: %v", err)
			}
		}
		if err := call(""); err != nil {
			t.Fatalf("a call with no principal: %v", err)
		}
		if u := l.StatusAt(time.Now(), nil).Upstreams[0]; u.Admitted != 5 {
			t.Errorf("admitted %d, want 5 (ada's third charged nothing upstream)", u.Admitted)
		}
	})
}

func TestPerPrincipalShareWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 100, Window: time.Minute, WindowPad: -1,
			PerPrincipal: 1, QueueTimeout: 2 * time.Minute}}})
		start := time.Now()
		for i := range 2 {
			tk, err := l.Acquire(t.Context(), Request{Upstream: "u", Principal: "ada"})
			if err != nil {
				t.Fatal(err)
			}
			tk.Release()
			if got, want := time.Since(start), time.Duration(i)*time.Minute; got != want {
				t.Fatalf("ada's call %d admitted after %v, want %v", i, got, want)
			}
			// the wait for her share is part of the call's queueWaitMs
			if want := time.Duration(i) * time.Minute; tk.QueueWait != want {
				t.Fatalf("ada's call %d reports a queue wait of %v, want %v", i, tk.QueueWait, want)
			}
		}
		// the wait for a share is told as progress, at once and every interval
		var told []Progress
		lp := newLimiter(t, Options{ProgressInterval: 20 * time.Second, Budgets: []Budget{{Match: "u", Requests: 100, Window: time.Minute,
			WindowPad: -1, PerPrincipal: 1, QueueTimeout: 2 * time.Minute}}})
		for range 2 {
			tk, err := lp.Acquire(t.Context(), Request{Upstream: "u", Principal: "ada", Progress: func(p Progress) { told = append(told, p) }})
			if err != nil {
				t.Fatal(err)
			}
			tk.Release()
		}
		want := []Progress{{Estimate: time.Minute}, {Waited: 20 * time.Second, Estimate: 40 * time.Second},
			{Waited: 40 * time.Second, Estimate: 20 * time.Second}}
		if len(told) != len(want) {
			t.Fatalf("progress while waiting for a share: %+v, want %+v", told, want)
		}
		for i := range want {
			if told[i] != want[i] {
				t.Fatalf("progress while waiting for a share: %+v, want %+v", told, want)
			}
		}
		// past the queue timeout: refused at once with the exact wait
		l2 := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 100, Window: time.Hour, PerPrincipal: 1, QueueTimeout: time.Minute}}})
		tk, err := l2.Acquire(t.Context(), Request{Upstream: "u", Principal: "ada"})
		if err != nil {
			t.Fatal(err)
		}
		tk.Release()
		at := time.Now()
		if _, err := l2.Acquire(t.Context(), Request{Upstream: "u", Principal: "ada"}); limitErr(t, err).Kind != KindRequests || time.Since(at) != 0 {
			t.Fatalf("a wait past the queue timeout: %v after %v", err, time.Since(at))
		}
	})
}

// TestDrainAnswersCallsWaitingForTheirPrincipalsShare: on SIGTERM the calls waiting for a
// per_principal share were not drained; they waited on, to be cut with a bare EOF at
// shutdown_timeout. They get the retryable shutdown answer of every queued call, with the
// time they waited.
func TestDrainAnswersCallsWaitingForTheirPrincipalsShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 100, Window: time.Minute, WindowPad: -1,
			PerPrincipal: 1, QueueTimeout: 2 * time.Minute}}})
		tk, err := l.Acquire(t.Context(), Request{Upstream: "u", Principal: "ada"})
		if err != nil {
			t.Fatal(err)
		}
		tk.Release()
		done := make(chan error, 1)
		go func() {
			_, err := l.Acquire(t.Context(), Request{Upstream: "u", Principal: "ada"})
			done <- err
		}()
		time.Sleep(3 * time.Second) // in the bubble: the call waits for ada's share
		synctest.Wait()
		l.Drain()
		synctest.Wait()
		select {
		case err := <-done:
			var qe *QueueError
			if !errors.As(err, &qe) || qe.Reason != QueueShutdown {
				t.Fatalf("the waiting call: %v, want a QueueError for shutdown", err)
			}
			if qe.Waited != 3*time.Second {
				t.Errorf("Waited = %v, want 3s", qe.Waited)
			}
		default:
			t.Fatal("the call waiting for its share was not answered at the drain")
		}
		// a call that would wait from now on is answered at once too
		if _, err := l.Acquire(t.Context(), Request{Upstream: "u", Principal: "ada"}); err == nil {
			t.Fatal("a call over its share was admitted while draining")
		} else if qe := (*QueueError)(nil); !errors.As(err, &qe) || qe.Reason != QueueShutdown {
			t.Fatalf("a call over its share while draining: %v, want a QueueError for shutdown", err)
		}
	})
}
