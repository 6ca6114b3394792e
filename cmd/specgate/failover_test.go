package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"
)

// TestReplicasFollowAClusterFailover: three specgate processes on a Redis Cluster with a
// replica per master, their agents calling under load; the master that serves the
// upstream's slot is killed. Each process falls back to its share (/readyz degraded), and
// returns to the shared limits soon after the cluster's replica has taken the slot: the
// store reloads the slot map when it probes a fallen slot, where it used to wait for the
// client's periodic refresh (34.5 s under load in the issue, 57 s after the promotion here).
// No call meanwhile gets anything but an answer or a rate_limit refusal, and the upstream
// sees no window over its quota.
func TestReplicasFollowAClusterFailover(t *testing.T) {
	cl := redistest.StartClusterReplicas(t, 3, 1)
	up := newCountingUpstreamWindow(t, replicaWindow)
	rs := startReplicas(t, replicaCount, up, cl)
	var agents []*agent
	for _, r := range rs {
		agents = append(agents, newAgent(t, r))
	}
	concurrently(t.Context(), agents, replicaCount, "quota.getB")
	checkOutcomes(t, "before", agents)
	checkClusterStatus(t, agents)

	// the upstream's keys share one hash tag, its group's name
	slot := cl.SlotOf("{quota-group}")
	master := cl.OwnerOf(slot)
	stop := make(chan struct{})
	wait := runAgents(t.Context(), agents, stop, "quota.getB")
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wait()
		}
	}()
	cl.Node(master).Stop()
	killed := time.Now()

	degraded := func(r *replica) bool {
		code, body := getStatus(r.base + "/readyz")
		return code != http.StatusOK || strings.Contains(body, `"degraded"`)
	}
	// each replica notices the fallen slot on its next call
	poll(t, 20*time.Second, "every replica degraded after the master was killed", func() bool {
		for _, r := range rs {
			if !degraded(r) {
				return false
			}
		}
		return true
	})
	poll(t, 30*time.Second, "the replica to take the slot", func() bool { return cl.OwnerOf(slot) != master })
	promoted := time.Since(killed)
	poll(t, 30*time.Second, "every replica back on the shared limits", func() bool {
		for _, r := range rs {
			if degraded(r) {
				return false
			}
		}
		return true
	})
	back := time.Since(killed)
	time.Sleep(replicaWindow) // under load on the shared limits again, for the window after
	close(stop)
	wait()
	t.Logf("master killed: the cluster's replica serves the slot after %v, every specgate is back on the shared limits after %v (%v after the promotion)",
		promoted.Round(10*time.Millisecond), back.Round(10*time.Millisecond), (back - promoted).Round(10*time.Millisecond))
	checkOutcomes(t, "failover", agents)
	if lag := back - promoted; lag > 5*time.Second {
		t.Errorf("the replicas followed the failover %v after the cluster's replica took the slot, want within 5s", lag)
	}
	concurrently(t.Context(), agents, replicaCount, "quota.getB")
	checkOutcomes(t, "after", agents)
	checkClusterStatus(t, agents)
	// the fallback shares, the promoted replica's copy of the windows and the shared
	// window after it kept the upstream within its quota throughout
	checkBudget(t, up)
}

// poll waits until cond holds, failing the test after limit. It polls other processes
// (a cluster's election, specgate's probe), not the test's own clock.
func poll(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond) // other processes' progress, bounded
	}
}
