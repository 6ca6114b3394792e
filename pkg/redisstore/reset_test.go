package redisstore

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// TestReplicasStayInBudgetWhenRedisComesBackEmpty: two replicas run on their fallback
// shares while Redis is down; it restarts empty. The calls they made meanwhile were never
// in Redis, and the third replica, which had not run on its share, spent the whole budget
// against the empty store: 23 to 26 requests in a window of 20. Every replica that finds
// the store reset keeps to its share for a window. The times are explicit, each the
// clock of the moment (Redis decides with its own).
func TestReplicasStayInBudgetWhenRedisComesBackEmpty(t *testing.T) {
	for _, tc := range []struct {
		name string
		down time.Duration // how long Redis is down, on the fallback's clock
	}{
		{"restart", 5 * time.Second},
		{"flap of a second", time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			const (
				share  = 0.34
				limit  = 20 // share: 6 per replica
				window = time.Minute
			)
			r := newReplicas(t, srv, 3, share, ratelimit.Options{
				Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
				Budgets:   []ratelimit.Budget{{Match: "up", Requests: limit, Window: window, WindowPad: -1}},
			})
			admitted := 0
			admit := func(l *ratelimit.Limiter, at time.Time, n int) {
				for range n {
					tk, err := l.AdmitAt(ratelimit.Request{Endpoint: "svc.get"}, at)
					if err != nil {
						return
					}
					tk.ReleaseAt(at)
					admitted++
				}
			}
			for _, l := range r.ls {
				admit(l, time.Now(), 1)
			}
			srv.Stop()
			t0 := time.Now()
			for _, l := range r.ls[:2] {
				admit(l, t0, limit)
				admit(l, t0.Add(tc.down), limit)
			}
			fallback := admitted - 3
			srv.Restart()
			for _, st := range r.sts {
				waitUntil(t, 3*time.Second, func() bool { return st.Available("") })
			}
			// the hand-over is even: no replica takes more than its share of the window
			for i, l := range r.ls {
				before := admitted
				admit(l, time.Now(), limit)
				if got, most := admitted-before, part(share, limit); got > most {
					t.Errorf("replica %d took %d of the window after Redis came back, want at most its share %d", i, got, most)
				}
			}
			if admitted > limit {
				t.Errorf("%d admitted in one window of %d (%d on the fallback shares), want at most %d",
					admitted, limit, fallback, limit)
			}
			if fallback == 0 {
				t.Error("no call ran on the fallback share: the test proves nothing")
			}
			t.Logf("%d admitted in the window, %d of them on the fallback shares", admitted, fallback)
		})
	}
}

// TestReplicasStayInBudgetThroughAFlap: Redis stops answering for a second (paused, its
// data kept); two replicas run on their fallback shares meanwhile. Their admissions were
// never written to Redis, so a replica that had not noticed the flap spent what the window
// still seemed to hold: 30 in a window of 20. What a replica admitted on its share goes
// into the shared window with its next admission through the store.
func TestReplicasStayInBudgetThroughAFlap(t *testing.T) {
	srv := redistest.Start(t)
	const (
		share  = 0.34
		limit  = 20
		window = time.Minute
	)
	var sts []*Store
	var ls []*ratelimit.Limiter
	for range 3 {
		st, err := New(t.Context(), Options{URL: srv.URL(), KeyPrefix: testPrefix(t), FallbackShare: share,
			Timeout: 100 * time.Millisecond, ProbeInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		sts = append(sts, st)
		ls = append(ls, newLimiter(t, ratelimit.Options{Store: st,
			Endpoints: []ratelimit.Endpoint{{ID: "svc.get", Upstream: "up"}},
			Budgets:   []ratelimit.Budget{{Match: "up", Requests: limit, Window: window, WindowPad: -1}}}))
	}
	admitted := 0
	admit := func(l *ratelimit.Limiter, n int) {
		for range n {
			at := time.Now()
			tk, err := l.AdmitAt(ratelimit.Request{Endpoint: "svc.get"}, at)
			if err != nil {
				return
			}
			tk.ReleaseAt(at)
			admitted++
		}
	}
	for _, l := range ls {
		admit(l, 1)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Do(t.Context(), "CLIENT", "PAUSE", 1000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	for _, l := range ls[:2] {
		admit(l, limit)
	}
	fallback := admitted - 3
	for _, st := range sts[:2] {
		waitUntil(t, 5*time.Second, func() bool { return st.Available("") })
	}
	for _, l := range ls {
		admit(l, limit)
	}
	if admitted > limit {
		t.Errorf("%d admitted in one window of %d (%d on the fallback shares), want at most %d", admitted, limit, fallback, limit)
	}
	if fallback == 0 {
		t.Error("no call ran on the fallback share: the test proves nothing")
	}
	t.Logf("%d admitted in the window, %d of them on the fallback shares", admitted, fallback)
}
