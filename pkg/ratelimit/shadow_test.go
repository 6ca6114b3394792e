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

// TestShadowBudgetsShareAndClassesRefuseNothing: a shadow budget (enforce: false) refused
// the calls over its per_principal share while its requests refused nothing. Now its share
// and its classes (shadows too) follow it: every call goes, and each counts what it would
// have refused.
func TestShadowBudgetsShareAndClassesRefuseNothing(t *testing.T) {
	for _, tt := range []struct {
		name    string
		onLimit OnLimit
	}{{"wait", Wait}, {"reject", Reject}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const writes = "u POST /**"
				l := newLimiter(t, Options{
					Budgets: []Budget{
						{Match: "u", PerPrincipal: 2, Window: time.Minute, WindowPad: -1, OnLimit: tt.onLimit, Shadow: true},
						{Match: writes, Requests: 1, Window: time.Minute, WindowPad: -1, OnLimit: tt.onLimit, Shadow: true},
					},
					Endpoints: []Endpoint{{ID: "api.write", Upstream: "u", Classes: []string{writes}}},
				})
				start := time.Now()
				for i := range 5 {
					tk, err := l.Acquire(t.Context(), Request{Endpoint: "api.write", Principal: "ada"})
					if err != nil {
						t.Fatalf("call %d refused by a shadow budget: %v", i, err)
					}
					tk.Release()
				}
				if waited := time.Since(start); waited != 0 {
					t.Errorf("the calls waited %v for a shadow budget", waited)
				}
				st := l.StatusAt(time.Now(), nil)
				byKey := map[string]UpstreamStatus{}
				for _, u := range st.Upstreams {
					byKey[u.Key] = u
				}
				if sh := byKey["u"].Shadow; sh == nil || sh.Calls != 5 || sh.PerPrincipal != 3 {
					t.Errorf("budget's shadow %+v, want 5 calls, 3 over ada's share of 2", sh)
				}
				if sh := byKey[writes].Shadow; sh == nil || sh.Calls != 5 || sh.WouldRefuse != 4 || sh.ByKind[KindRequests] != 4 {
					t.Errorf("class's shadow %+v, want 5 calls, 4 it would refuse for requests", sh)
				}
			})
		})
	}
}
