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

func TestEndpointCostChargesSeveralUnits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{
			Budgets:   []Budget{{Match: "u", Requests: 10, Window: time.Minute, WindowPad: -1, OnLimit: Reject}},
			Endpoints: []Endpoint{{ID: "api.search", Upstream: "u", Cost: 4}, {ID: "api.get", Upstream: "u"}, {ID: "api.huge", Upstream: "u", Cost: 50}},
		})
		call := func(id string) error {
			tk, err := l.Acquire(t.Context(), Request{Endpoint: id})
			if err == nil {
				tk.Release()
			}
			return err
		}
		for range 2 {
			if err := call("api.search"); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * time.Second)
		if err := call("api.get"); err != nil {
			t.Fatal(err)
		}
		// 9 of 10 units spent: a search (4) waits until the first two searches leave the
		// window, 50 s from now; a plain get (1) still fits
		if le := limitErr(t, call("api.search")); le.Kind != KindRequests || le.RetryAfter != 50*time.Second {
			t.Fatalf("a third search: %+v", le)
		}
		if err := call("api.get"); err != nil {
			t.Fatalf("a get with one unit left: %v", err)
		}
		if u := l.StatusAt(time.Now(), nil).Upstreams[0]; u.RequestsUsed != 10 {
			t.Errorf("requests used %d units, want 10", u.RequestsUsed)
		}
		// a cost above the budget charges the whole budget, so it can still go
		time.Sleep(time.Minute)
		if err := call("api.huge"); err != nil {
			t.Fatalf("a cost of 50 in a budget of 10: %v", err)
		}
		if err := call("api.get"); err == nil {
			t.Fatal("a get went through a budget the huge call spent")
		}
	})
}
