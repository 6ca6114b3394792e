package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// soakFloodAgents is how many agents of one principal flood the upstream's queue in
// BenchmarkSoakTwoPrincipals, calling back to back, while one agent of another calls
// every soakOtherPace.
const (
	soakFloodAgents = 16
	soakOtherPace   = time.Second
)

// BenchmarkSoakTwoPrincipals is the team setup where one principal floods: a specgate
// serve process with two bearer tokens (ada, bob) and a budget of replicaQuota per
// replicaWindow with on_limit wait, ada's 16 agents calling back to back (so the queue
// is always full of her calls) and bob's one agent calling once a second, for
// SPECGATE_SOAK_DURATION (default 1m). It reports each principal's queue wait (the
// answer's rateLimit.queueWaitMs), p50 and p99, their calls answered, and the upstream's
// 429s. With a first-come-first-served queue bob waits behind all of ada's calls; the
// fair queue serves him next but one. SPECGATE_BIN runs another build of specgate (an
// older one, to compare). Run it with make soak; it ignores b.N.
func BenchmarkSoakTwoPrincipals(b *testing.B) {
	bin := os.Getenv("SPECGATE_BIN")
	if bin == "" {
		bin = specgateBinary(b)
	}
	up := newCountingUpstream(b)
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "quota.yaml"), []byte(replicaSpec), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(dir, "specgate.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`max_retries: 0
cache_ttl: 0s
specs:
  - name: quota
    location: quota.yaml
    base_url: %s
    upstream: quota-group
    endpoints:
      getB: {disable_ratelimiter: true}
upstreams:
  - match: quota-group
    requests_per_window: %d
    window: %s
    on_limit: wait
    queue_depth: 64
    queue_timeout: 60s
http:
  auth:
    tokens:
      - {token: ada-token, subject: ada}
      - {token: bob-token, subject: bob}
  inbound:
    requests_per_window: 1000000
    tool_calls_per_window: 1000000
`, up.ts.URL, replicaQuota, replicaWindow)), 0o600); err != nil {
		b.Fatal(err)
	}
	os.Setenv("XDG_CACHE_HOME", b.TempDir())
	srv := startServe(b, bin, "--config", cfg, "--log-level", "warn")
	b.Cleanup(func() { srv.cmd.Process.Kill(); <-srv.done })
	url := "http://" + srv.addr + "/mcp"
	agents := map[string][]*agent{}
	for i := range soakFloodAgents + 1 {
		who, token := "ada", "ada-token"
		if i == soakFloodAgents {
			who, token = "bob", "bob-token"
		}
		c := httpMCPClient(b, url, map[string]string{"Authorization": "Bearer " + token})
		agents[who] = append(agents[who], &agent{c: c, codes: map[string]int{}})
	}
	d := soakDuration(b)
	ctx, cancel := context.WithTimeout(b.Context(), d)
	defer cancel()
	var mu sync.Mutex
	waits := map[string][]time.Duration{}
	var wg sync.WaitGroup
	for who, as := range agents {
		for _, a := range as {
			wg.Go(func() {
				for ctx.Err() == nil {
					out, code := a.callFor(context.WithoutCancel(ctx), 90*time.Second, "invoke", map[string]any{"endpointId": "quota.getB"})
					a.mu.Lock()
					a.codes[code]++
					a.mu.Unlock()
					if code == "ok" {
						if rl, ok := out["rateLimit"].(map[string]any); ok {
							ms, _ := rl["queueWaitMs"].(float64)
							mu.Lock()
							waits[who] = append(waits[who], time.Duration(ms)*time.Millisecond)
							mu.Unlock()
						}
					}
					if who == "bob" {
						select {
						case <-ctx.Done():
						case <-time.After(soakOtherPace):
						}
					}
				}
			})
		}
	}
	wg.Wait()
	b.StopTimer()
	for _, who := range []string{"ada", "bob"} {
		w := waits[who]
		slices.Sort(w)
		pct := func(p float64) float64 {
			if len(w) == 0 {
				return 0
			}
			return float64(w[min(int(p*float64(len(w))), len(w)-1)].Milliseconds())
		}
		b.ReportMetric(pct(0.50), who+"-wait-p50-ms")
		b.ReportMetric(pct(0.99), who+"-wait-p99-ms")
		b.ReportMetric(float64(len(w)), who+"-calls")
		codes := map[string]int{}
		for _, a := range agents[who] {
			for k, v := range a.outcomes() {
				codes[k] += v
			}
		}
		b.Logf("%s: %d calls answered ok, outcomes %v", who, len(w), codes)
	}
	b.ReportMetric(float64(up.quota.Limited()), "upstream-429s")
	b.ReportMetric(0, "ns/op")
}
