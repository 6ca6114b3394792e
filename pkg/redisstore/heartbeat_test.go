package redisstore

import (
	"testing"

	"github.com/specgate/specgate/internal/redistest"
)

// A replica that made no call did not notice Redis going away: /readyz
// said ready until a call failed. The heartbeat pings while Redis answers
// and degrades the store when it does not; the probe brings it back.
func TestHeartbeatNoticesRedisGoneWhileIdle(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    func(t *testing.T) (backend, func())
	}{
		{"redis", func(t *testing.T) (backend, func()) {
			r := redistest.Start(t)
			return r, r.Stop
		}},
		{"cluster", func(t *testing.T) (backend, func()) {
			c := redistest.StartCluster(t, 3)
			stop := func() {
				for i := range 3 {
					c.Node(i).Stop()
				}
			}
			return c, stop
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, stop := tc.b(t)
			st := newTestStore(t, b, 0.5)
			st.heartbeat(t.Context())
			if d, _, reason := st.Degraded(); d {
				t.Fatalf("degraded while Redis answers: %s", reason)
			}
			stop()
			st.heartbeat(t.Context())
			if d, _, _ := st.Degraded(); !d {
				t.Fatal("the heartbeat did not notice Redis gone")
			}
		})
	}
}

// With one node of a cluster down the heartbeat leaves the store whole:
// only the calls to that node's slots fall back.
func TestHeartbeatOneClusterNodeDownKeepsTheRest(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	st := newTestStore(t, c, 0.5)
	c.Node(1).Stop()
	st.heartbeat(t.Context())
	if d, _, reason := st.Degraded(); d {
		t.Fatalf("one node down degraded the whole store: %s", reason)
	}
}
