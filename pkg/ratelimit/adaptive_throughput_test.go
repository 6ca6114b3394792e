package ratelimit

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// inflightUpstream serves calls of 100 ms and answers a bare 429 at once to a call past
// limit in flight, as an upstream that says "too many in flight" with no header does.
type inflightUpstream struct {
	limit    int32
	inflight atomic.Int32
}

func (u *inflightUpstream) call() int {
	defer u.inflight.Add(-1)
	if u.inflight.Add(1) > u.limit {
		return http.StatusTooManyRequests
	}
	time.Sleep(100 * time.Millisecond)
	return http.StatusOK
}

// served runs 24 agents calling through l for d against up, each retrying after a
// refusal as a model would (after RetryAfter), and returns the calls answered 200 in
// each second.
func served(t *testing.T, l *Limiter, up *inflightUpstream, d time.Duration) []int {
	t.Helper()
	start := time.Now()
	perSecond := make([]int, int(d/time.Second))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() {
			for time.Since(start) < d {
				tk, err := l.Acquire(t.Context(), Request{Upstream: "u"})
				if err != nil {
					time.Sleep(time.Second)
					continue
				}
				status := up.call()
				tk.Observe(status, http.Header{}, nil)
				tk.Release()
				if at := int(time.Since(start) / time.Second); status == http.StatusOK && at < len(perSecond) {
					mu.Lock()
					perSecond[at]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return perSecond
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestAdaptiveConcurrencyKeepsUpWithABare429InFlightLimit: against an upstream that
// answers a bare 429 past 8 calls in flight, max_concurrent: auto served 69-107 calls per
// 5 s against 392-399 for a fixed max_concurrent: 8: each 429 blocked the upstream for a
// second and inferred a requests budget. A bare 429 to a call sent with others in flight
// is a concurrency signal: the limit halves, nothing blocks. The adaptive limit serves at
// least 60% of the fixed one's throughput, in each 5 s of the run, and recovers within
// 10 s once the upstream allows more.
func TestAdaptiveConcurrencyKeepsUpWithABare429InFlightLimit(t *testing.T) {
	const run = 30 * time.Second
	var fixed int
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", MaxConcurrent: 8, QueueDepth: 32, QueueTimeout: 20 * time.Second}}})
		fixed = sum(served(t, l, &inflightUpstream{limit: 8}, run))
	})
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Adaptive: true, QueueDepth: 32, QueueTimeout: 20 * time.Second}}})
		up := &inflightUpstream{limit: 8}
		got := served(t, l, up, run)
		t.Logf("fixed max_concurrent 8: %d calls in %v; auto: %d, per second %v", fixed, run, sum(got), got)
		for i := 0; i+5 <= len(got); i += 5 {
			if n, want := sum(got[i:i+5]), fixed/6*6/10; n < want {
				t.Errorf("auto served %d calls in seconds %d-%d, want at least %d (60%% of the fixed limit's)", n, i, i+5, want)
			}
		}
		// the upstream speeds up: twice the calls in flight
		up.limit = 16
		again := served(t, l, up, 20*time.Second)
		t.Logf("after the upstream allows 16 in flight, per second %v", again)
		if n := sum(again[10:15]); n < fixed/6 {
			t.Errorf("10 s after the upstream sped up: %d calls in 5 s, want at least the fixed 8's %d", n, fixed/6)
		}
	})
}
