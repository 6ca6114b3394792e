package main

import (
	"context"
	"math"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/internal/upstreamtest"
)

// soakAgents is how many agents the soak runs, spread over the replicas; each calls
// every soakPace, about 300 calls a second in all against a quota of 5 a second.
const (
	soakAgents = 30
	soakPace   = 100 * time.Millisecond
)

// soakDuration is how long each soak runs: SPECGATE_SOAK_DURATION (a Go duration), else
// one minute.
func soakDuration(b *testing.B) time.Duration {
	d := time.Minute
	if v := os.Getenv("SPECGATE_SOAK_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatalf("SPECGATE_SOAK_DURATION: %v", err)
		}
	}
	return d
}

// BenchmarkSoak is the team setup under load: three specgate serve processes, 30 agents
// (MCP over HTTP, ten per replica) calling one endpoint of an upstream with a sliding
// window quota (replicaQuota per replicaWindow, the same budget configured in specgate,
// on_limit reject) every soakPace, for SPECGATE_SOAK_DURATION (default 1m), once per
// store: each replica on its own memory (the control: nothing is shared), one Redis, and
// a three-master Redis Cluster. It reports the upstream's 429s, over-admissions (calls
// specgate sent that made more than the quota in a window), throughput as a share of the
// quota (admitted by the upstream, of the most a sliding window allows in the run)
// and the latency of an admitted call (the upstream answers at once, so this is what
// specgate and MCP over HTTP add), p50 and p99. Run it with make soak; it ignores b.N.
func BenchmarkSoak(b *testing.B) {
	for _, store := range []string{"memory", "redis", "redis_cluster"} {
		b.Run(store, func(b *testing.B) {
			var rd sharedRedis = perReplicaMemory{}
			switch store {
			case "redis":
				rd = redistest.Start(b)
			case "redis_cluster":
				rd = redistest.StartCluster(b, 3)
			}
			up := newCountingUpstream(b)
			rs := startReplicas(b, replicaCount, up, rd)
			var agents []*agent
			for i := range soakAgents {
				agents = append(agents, newAgent(b, rs[i%len(rs)]))
			}
			d := soakDuration(b)
			b.ResetTimer()
			lat := soak(b.Context(), agents, d) // once, whatever b.N: a soak has its own length
			b.StopTimer()
			report(b, up, lat, d)
		})
	}
}

// soak runs every agent calling quota.getB in a loop for d and returns the latency of
// each admitted call, sorted.
func soak(ctx context.Context, agents []*agent, d time.Duration) []time.Duration {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Go(func() {
			for ctx.Err() == nil {
				start := time.Now()
				_, code := a.call(context.WithoutCancel(ctx), "invoke", map[string]any{"endpointId": "quota.getB"})
				took := time.Since(start)
				a.mu.Lock()
				a.codes["quota.getB "+code]++
				a.mu.Unlock()
				if code == "ok" {
					mu.Lock()
					lat = append(lat, took)
					mu.Unlock()
				}
				select {
				case <-ctx.Done():
				case <-time.After(soakPace): // an agent's pace
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(lat)
	return lat
}

func report(b *testing.B, up *countingUpstream, lat []time.Duration, d time.Duration) {
	var sent []time.Time // every call specgate let through
	up.mu.Lock()
	for _, h := range up.hits {
		sent = append(sent, h.at)
	}
	up.mu.Unlock()
	slices.SortFunc(sent, time.Time.Compare)
	over := 0
	for i := 0; i+replicaQuota < len(sent); i++ {
		if sent[i+replicaQuota].Sub(sent[i]) < replicaWindow {
			over++
		}
	}
	// the most a sliding window admits in a run of d from an empty window
	quota := float64(replicaQuota) * math.Ceil(d.Seconds()/replicaWindow.Seconds())
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(int(p*float64(len(lat))), len(lat)-1)].Microseconds()) / 1000
	}
	b.ReportMetric(float64(up.quota.Limited()), "upstream-429s")
	b.ReportMetric(float64(over), "over-admissions")
	b.ReportMetric(float64(upstreamtest.MaxInWindow(sent, replicaWindow)), "most-sent-in-a-window")
	b.ReportMetric(100*float64(up.quota.Admitted())/quota, "%-of-quota")
	b.ReportMetric(float64(up.quota.Requests())/d.Seconds(), "upstream-req/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
