package ratelimit

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestClassesPaceWritesNotReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const writes = "u POST /**"
		l := newLimiter(t, Options{
			Budgets: []Budget{
				{Match: "u", Requests: 100, Window: time.Minute},
				{Match: writes, MinInterval: time.Second, QueueTimeout: time.Minute},
			},
			Endpoints: []Endpoint{
				{ID: "api.read", Upstream: "u"},
				{ID: "api.write", Upstream: "u", Classes: []string{writes}},
			},
		})
		start := time.Now()
		var mu sync.Mutex
		at := map[string][]time.Duration{}
		var wg sync.WaitGroup
		for range 3 {
			for _, id := range []string{"api.read", "api.write"} {
				wg.Go(func() {
					tk, err := l.Acquire(t.Context(), Request{Endpoint: id})
					if err != nil {
						t.Errorf("%s: %v", id, err)
						return
					}
					tk.Release()
					mu.Lock()
					at[id] = append(at[id], time.Since(start))
					mu.Unlock()
				})
			}
		}
		wg.Wait()
		if got := at["api.read"]; len(got) != 3 || got[2] != 0 {
			t.Errorf("reads admitted at %v, want all at once", got)
		}
		if got := at["api.write"]; len(got) != 3 || got[0] != 0 || got[1] != time.Second || got[2] != 2*time.Second {
			t.Errorf("writes admitted at %v, want one a second", got)
		}
		st := l.StatusAt(time.Now(), nil)
		for _, u := range st.Upstreams {
			if u.Key == "u" && u.Admitted != 6 || u.Key == writes && u.Admitted != 3 {
				t.Errorf("%s admitted %d", u.Key, u.Admitted)
			}
		}
	})
}

func TestClassRefusalNamesTheClassAndChargesNothingElse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const search = "u GET /search/**"
		l := newLimiter(t, Options{
			Budgets: []Budget{
				{Match: "u", Requests: 10, Window: time.Minute},
				{Match: search, Requests: 1, Window: time.Minute, WindowPad: -1, OnLimit: Reject},
			},
			Endpoints: []Endpoint{{ID: "api.search", Upstream: "u", Classes: []string{search}, Interval: time.Second}},
		})
		tk, err := l.Acquire(t.Context(), Request{Endpoint: "api.search"})
		if err != nil {
			t.Fatal(err)
		}
		tk.Release()
		// the cooldown refuses before the class is asked
		if _, err := l.Acquire(t.Context(), Request{Endpoint: "api.search"}); limitErr(t, err).Kind != KindCooldown {
			t.Fatalf("want the cooldown first, got %v", err)
		}
		time.Sleep(time.Second)
		_, err = l.Acquire(t.Context(), Request{Endpoint: "api.search"})
		var le *LimitError
		if !errors.As(err, &le) || le.Key != search || le.Kind != KindRequests || le.RetryAfter != time.Minute-time.Second {
			t.Fatalf("got %v, want the search class's request budget", err)
		}
		for _, u := range l.StatusAt(time.Now(), nil).Upstreams {
			if u.Key == "u" && u.Admitted != 1 {
				t.Errorf("the upstream was charged %d calls, want 1", u.Admitted)
			}
		}
	})
}
