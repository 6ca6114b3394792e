package ratelimit

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestAdaptiveConcurrencyFindsTheUpstreamsLimit runs 20 parallel calls, each retried
// until it succeeds, against an upstream that answers a bare 429 past 2 calls in flight:
// the adaptive limit finds 2 and holds it, at the cost of a few 429s.
func TestAdaptiveConcurrencyFindsTheUpstreamsLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Adaptive: true, MaxConcurrent: 8, QueueDepth: 32, QueueTimeout: time.Hour}}})
		var inflight, peak, refused atomic.Int32
		var mu sync.Mutex
		var trace []string
		upstream := func() int {
			n := inflight.Add(1)
			defer inflight.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			if n > 2 {
				refused.Add(1)
				return http.StatusTooManyRequests
			}
			time.Sleep(100 * time.Millisecond)
			return http.StatusOK
		}
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				for attempt := 0; ; attempt++ {
					tk, err := l.Acquire(t.Context(), Request{Upstream: "u", Retry: attempt > 0})
					if err != nil {
						t.Errorf("call %d: %v", i, err)
						return
					}
					status := upstream()
					tk.Observe(status, http.Header{}, nil)
					tk.Release()
					st := l.StatusAt(time.Now(), nil).Upstreams[0].Adaptive
					mu.Lock()
					trace = append(trace, fmt.Sprintf("%d→%d", status, st.Limit))
					mu.Unlock()
					if status == http.StatusOK {
						return
					}
				}
			})
		}
		wg.Wait()
		st := l.StatusAt(time.Now(), nil).Upstreams[0]
		t.Logf("trace (status→limit): %v", trace)
		if n := refused.Load(); n > 4 {
			t.Errorf("%d upstream 429s, want at most 4", n)
		}
		// after 8 runs clean at the ceiling the limit may probe one above it
		if st.Adaptive == nil || st.Adaptive.Limit < 1 || st.Adaptive.Limit > 3 || st.Adaptive.Ceiling != 2 {
			t.Errorf("adaptive %+v, want the ceiling at 2 and the limit at most one above", st.Adaptive)
		}
		if p := peak.Load(); p > 3 {
			t.Errorf("%d calls in flight at the upstream at once, want at most 3", p)
		}
	})
}

func TestAdaptiveConcurrencyRisesOnCleanAnswersAndHalvesOnTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Adaptive: true, MinConcurrent: 2, MaxConcurrent: 4}}})
		limit := func() int { return l.StatusAt(time.Now(), nil).Upstreams[0].Adaptive.Limit }
		first, err := l.Acquire(t.Context(), Request{Upstream: "u"}) // makes the upstream's state; no answer counted
		if err != nil {
			t.Fatal(err)
		}
		first.Release()
		if got := limit(); got != 2 {
			t.Fatalf("starts at %d, want min 2", got)
		}
		ok := func(n int) {
			for range n {
				tk, err := l.Acquire(t.Context(), Request{Upstream: "u"})
				if err != nil {
					t.Fatal(err)
				}
				tk.Observe(http.StatusOK, http.Header{}, nil)
				tk.Release()
			}
		}
		ok(2)
		if got := limit(); got != 3 {
			t.Fatalf("after 2 clean answers at 2: %d, want 3", got)
		}
		ok(3 + 4)
		if got := limit(); got != 4 {
			t.Fatalf("at its max: %d, want 4", got)
		}
		tk, err := l.Acquire(t.Context(), Request{Upstream: "u"})
		if err != nil {
			t.Fatal(err)
		}
		tk.ObserveTimeout()
		tk.Release()
		if got := limit(); got != 2 {
			t.Fatalf("after a timeout at 4: %d, want 2", got)
		}
		if err := (Budget{Match: "u", Adaptive: true, MinConcurrent: 5, MaxConcurrent: 2}).Validate(); err == nil {
			t.Error("min above max accepted")
		}
	})
}
