package ratelimit

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestShadowBudgetCountsAndRefusesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 2, Window: time.Second, WindowPad: -1,
			MaxConcurrent: 3, Shadow: true}}})
		var held []Ticket
		for i := range 5 {
			tk, err := l.Acquire(t.Context(), Request{Upstream: "u"})
			if err != nil {
				t.Fatalf("call %d refused by a shadow budget: %v", i, err)
			}
			held = append(held, tk)
		}
		st := l.StatusAt(time.Now(), nil).Upstreams[0]
		sh := st.Shadow
		if sh == nil {
			t.Fatal("no shadow status")
		}
		// calls 3, 4 and 5 found the 2 requests spent; 4 and 5 also found 3 in flight,
		// but each is counted once, by the limit with the longest wait; the window
		// is seen as full (its used count stops at the limit)
		if sh.Calls != 5 || sh.WouldRefuse != 3 || sh.ByKind[KindRequests] != 3 || sh.RequestsUsed != 2 || sh.InFlight != 5 {
			t.Fatalf("shadow %+v", sh)
		}
		if st.Admitted != 5 || st.QueueDepth != 0 || len(st.Refused) != 0 {
			t.Fatalf("enforced side %+v", st)
		}
		for i := range held {
			held[i].Release()
		}
		time.Sleep(time.Second) // synctest: the window passes at once
		if _, err := l.Acquire(t.Context(), Request{Upstream: "u"}); err != nil {
			t.Fatal(err)
		}
		sh = l.StatusAt(time.Now(), nil).Upstreams[0].Shadow
		if sh.Calls != 6 || sh.WouldRefuse != 3 || sh.InFlight != 1 {
			t.Fatalf("after the window: shadow %+v", sh)
		}
	})
}

func TestShadowBudgetBecomesEnforced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, Options{Budgets: []Budget{{Match: "u", Requests: 1, Window: time.Minute, WindowPad: -1, Shadow: true, OnLimit: Reject}}})
		for range 2 {
			tk, err := l.Acquire(t.Context(), Request{Upstream: "u"})
			if err != nil {
				t.Fatal(err)
			}
			tk.Release()
		}
		if err := l.SetBudget(Budget{Match: "u", Requests: 1, Window: time.Minute, WindowPad: -1, OnLimit: Reject}); err != nil {
			t.Fatal(err)
		}
		if st := l.StatusAt(time.Now(), nil).Upstreams[0]; st.Shadow != nil {
			t.Fatalf("an enforced budget still reports a shadow: %+v", st.Shadow)
		}
		tk, err := l.Acquire(t.Context(), Request{Upstream: "u"})
		if err != nil {
			t.Fatal(err)
		}
		tk.Release()
		if _, err := l.Acquire(t.Context(), Request{Upstream: "u"}); limitErr(t, err).Kind != KindRequests {
			t.Fatalf("the enforced budget let a second call through")
		}
	})
}
