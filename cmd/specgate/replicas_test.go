package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/internal/upstreamtest"
)

// The multi-replica tests run three specgate processes (the built binary, serve --http)
// sharing one real redis-server, one agent per replica calling the same two endpoints of
// one quota-enforcing upstream: quota.getA has a cooldown, quota.getB has none and soaks
// up the upstream budget, which equals the upstream's own quota.
const (
	replicaCount   = 3
	replicaQuota   = 10              // upstream and budget: requests per window
	replicaWindow  = 2 * time.Second // upstream and budget window, unless a test gives its own
	replicaCool    = time.Second     // cooldown of quota.getA
	replicaShare   = 0.34            // store.fallback_share
	arrivalJitter  = 100 * time.Millisecond
	agentPace      = 10 * time.Millisecond // between an agent's calls: an agent's pace, not a wait for time
	replicaTimeout = 10 * time.Second      // bound on any wait for a process or a recovery
	// store.timeout: the machine running the tests may be loaded, and a Redis call past
	// the 250ms default is held (a store refusal) while Redis answers a ping; before a
	// timeout had to be confirmed so, it put one replica on its fallback share while the
	// others still spent the shared window (TestReplicasOnRedisCluster/upstream_budget saw
	// 12 calls reach a budget of 10). 2s keeps these tests' calls from being held; a dead
	// Redis refuses connections at once all the same
	replicaStoreTimeout = 2 * time.Second
)

const replicaSpec = `openapi: 3.0.3
info: {title: Quota, version: "1"}
paths:
  /a:
    get:
      operationId: getA
      responses: {"200": {description: ok}}
  /b:
    get:
      operationId: getB
      responses: {"200": {description: ok}}
`

// hit is one request the upstream received.
type hit struct {
	at       time.Time
	path     string
	replica  int
	admitted bool
}

// countingUpstream is the quota upstream with a record of which replica asked for what.
// Its quota is replicaQuota per window, and the replicas' budget the same.
type countingUpstream struct {
	quota  *upstreamtest.Server
	ts     *httptest.Server
	window time.Duration

	mu   sync.Mutex
	hits []hit
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

func newCountingUpstream(t testing.TB) *countingUpstream {
	return newCountingUpstreamWindow(t, replicaWindow)
}

// newCountingUpstreamWindow is newCountingUpstream with a quota of replicaQuota per window.
func newCountingUpstreamWindow(t testing.TB, window time.Duration) *countingUpstream {
	u := &countingUpstream{window: window, quota: upstreamtest.New(upstreamtest.Options{
		Model: upstreamtest.SlidingWindow, Limit: replicaQuota, Window: window,
		// Retry-After on a 429 only: rate-limit headers on every answer would let the
		// replicas learn the quota from the upstream, and this test is about specgate's
		// own cooldown and budget.
		Headers: upstreamtest.RetryAfterSeconds,
	})}
	u.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		rep, _ := strconv.Atoi(r.Header.Get("X-Replica"))
		sw := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		u.quota.ServeHTTP(sw, r)
		u.mu.Lock()
		u.hits = append(u.hits, hit{at: at, path: r.URL.Path, replica: rep, admitted: sw.code == http.StatusOK})
		u.mu.Unlock()
	}))
	t.Cleanup(u.ts.Close)
	return u
}

// admitted returns the admitted hits matching keep, in arrival order.
func (u *countingUpstream) admitted(keep func(hit) bool) []time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []time.Time
	for _, h := range u.hits {
		if h.admitted && keep(h) {
			out = append(out, h.at)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// replica is one specgate process.
type replica struct {
	id     int
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	exited chan struct{}

	mu     sync.Mutex
	stderr strings.Builder
}

func (r *replica) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

func (r *replica) running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// writeReplicaConfig writes replica i's config; the replicas differ only in the
// X-Replica header they send upstream, so the upstream can tell them apart.
func writeReplicaConfig(t testing.TB, dir string, i int, upstreamURL string, window time.Duration, backend, redisURL, prefix string) string {
	t.Helper()
	cfg := fmt.Sprintf(`max_retries: 0
specs:
  - name: quota
    location: quota.yaml
    base_url: %s
    upstream: quota-group
    headers:
      X-Replica: "%d"
    endpoints:
      getA: {rate_limit_interval: %s}
      getB: {disable_ratelimiter: true}
upstreams:
  - match: quota-group
    requests_per_window: %d
    window: %s
    on_limit: reject
http:
  inbound:
    requests_per_window: 1000000
    tool_calls_per_window: 1000000
store:
  backend: %s
  redis_url: %s
  key_prefix: "%s"
  fallback_share: %v
  timeout: %s
`, upstreamURL, i, replicaCool, replicaQuota, window, backend, redisURL, prefix, replicaShare, replicaStoreTimeout)
	path := filepath.Join(dir, fmt.Sprintf("replica%d.yaml", i))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sharedRedis is the store the replicas share: a *redistest.Server (backend redis) or a
// *redistest.Cluster (backend redis_cluster); perReplicaMemory gives each its own memory.
type sharedRedis interface{ URL() string }

// perReplicaMemory runs each replica on its own memory store: nothing is shared.
type perReplicaMemory struct{}

func (perReplicaMemory) URL() string { return "redis://127.0.0.1:1/0" } // never dialled

// startReplicas starts n specgate processes on free loopback ports and waits until each
// answers /readyz 200.
func startReplicas(t testing.TB, n int, up *countingUpstream, rd sharedRedis) []*replica {
	t.Helper()
	bin := specgateBinary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "quota.yaml"), []byte(replicaSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("e2e:%s:%d:", t.Name(), time.Now().UnixNano())
	var rs []*replica
	for i := range n {
		backend := "redis"
		switch rd.(type) {
		case *redistest.Cluster:
			backend = "redis_cluster"
		case perReplicaMemory:
			backend = "memory"
		}
		cfg := writeReplicaConfig(t, dir, i, up.ts.URL, up.window, backend, rd.URL(), prefix)
		r := startReplica(t, bin, i, cfg)
		rs = append(rs, r)
	}
	waitReady(t, rs...)
	return rs
}

// startReplica starts `specgate serve --http` with config cfg on a free
// loopback port and waits until it prints its address (not until ready).
func startReplica(t testing.TB, bin string, i int, cfg string) *replica {
	t.Helper()
	r := &replica{id: i, exited: make(chan struct{})}
	r.cmd = exec.Command(bin, "serve", "--http", "127.0.0.1:0", "--config", cfg, "--log-level", "warn")
	r.cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		const marker = "serving MCP (streamable HTTP) at "
		for sc.Scan() {
			line := sc.Text()
			r.mu.Lock()
			r.stderr.WriteString(line + "\n")
			r.mu.Unlock()
			if i := strings.Index(line, marker); i >= 0 {
				addr <- strings.TrimSuffix(line[i+len(marker):], "/mcp")
			}
		}
		r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		if r.running() {
			r.cmd.Process.Kill()
			<-r.exited
		}
		if t.Failed() {
			t.Logf("replica %d stderr:\n%s", r.id, r.log())
		}
	})
	select {
	case r.base = <-addr:
	case <-r.exited:
		t.Fatalf("replica %d exited at start:\n%s", i, r.log())
	case <-time.After(replicaTimeout):
		t.Fatalf("replica %d printed no address:\n%s", i, r.log())
	}
	return r
}

// waitReady waits until each replica answers /readyz 200.
func waitReady(t testing.TB, rs ...*replica) {
	t.Helper()
	for _, r := range rs {
		deadline := time.Now().Add(replicaTimeout)
		for {
			code, _ := getStatus(r.base + "/readyz")
			if code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d: /readyz %d after %s:\n%s", r.id, code, replicaTimeout, r.log())
			}
			time.Sleep(20 * time.Millisecond) // waiting for a process to load its spec
		}
	}
}

func getStatus(url string) (int, string) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// agent is one MCP client on one replica, calling getA and getB in a loop.
type agent struct {
	replica int
	c       *client.Client

	mu    sync.Mutex
	codes map[string]int // outcome ("ok" or the error code) of each invoke
}

func newAgent(t testing.TB, r *replica) *agent {
	t.Helper()
	c, err := client.NewStreamableHttpClient(r.base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), replicaTimeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: fmt.Sprintf("agent%d", r.id), Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return &agent{replica: r.id, c: c, codes: map[string]int{}}
}

// call calls a tool and returns its decoded JSON and the outcome: "ok", the tool error's
// code, or "transport: ..." when the call did not get an answer.
func (a *agent) call(ctx context.Context, name string, args map[string]any) (map[string]any, string) {
	return a.callFor(ctx, 5*time.Second, name, args)
}

// callFor is call with a timeout of its own.
func (a *agent) callFor(ctx context.Context, timeout time.Duration, name string, args map[string]any) (map[string]any, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		return nil, "transport: " + err.Error()
	}
	var out map[string]any
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(mcp.TextContent); ok {
			json.Unmarshal([]byte(tc.Text), &out)
		}
	}
	if !res.IsError {
		return out, "ok"
	}
	if e, ok := out["error"].(map[string]any); ok {
		return out, fmt.Sprint(e["code"])
	}
	return out, "unknown error"
}

func (a *agent) invoke(ctx context.Context, endpoint string) {
	_, code := a.call(ctx, "invoke", map[string]any{"endpointId": endpoint})
	a.mu.Lock()
	a.codes[endpoint+" "+code]++
	a.mu.Unlock()
}

// outcomes returns and resets the agent's tally.
func (a *agent) outcomes() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.codes
	a.codes = map[string]int{}
	return out
}

// runAgents runs every agent, each calling endpoints in turn, until stop is closed; the
// returned function waits for them.
func runAgents(ctx context.Context, agents []*agent, stop <-chan struct{}, endpoints ...string) (wait func()) {
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				for _, ep := range endpoints {
					a.invoke(ctx, ep)
				}
				time.Sleep(agentPace)
			}
		})
	}
	return wg.Wait
}

// runFor runs the agents for d.
func runFor(ctx context.Context, agents []*agent, d time.Duration, endpoints ...string) {
	stop := make(chan struct{})
	wait := runAgents(ctx, agents, stop, endpoints...)
	time.Sleep(d) // the length of the run, not a wait for a condition
	close(stop)
	wait()
}

// checkOutcomes fails on any invoke that was neither admitted nor refused with
// rate_limit, and returns the totals.
func checkOutcomes(t *testing.T, phase string, agents []*agent) map[string]int {
	t.Helper()
	total := map[string]int{}
	for _, a := range agents {
		for k, n := range a.outcomes() {
			total[k] += n
			if !strings.HasSuffix(k, " ok") && !strings.HasSuffix(k, " rate_limit") {
				t.Errorf("%s: replica %d: %d× %s", phase, a.replica, n, k)
			}
		}
	}
	t.Logf("%s: agent outcomes %v", phase, total)
	return total
}

// minGap returns the smallest gap between consecutive times.
func minGap(times []time.Time) time.Duration {
	gap := time.Duration(math.MaxInt64)
	for i := 1; i < len(times); i++ {
		gap = min(gap, times[i].Sub(times[i-1]))
	}
	return gap
}

func pathIs(p string) func(hit) bool { return func(h hit) bool { return h.path == p } }

func inSpan(from, to time.Time) func(hit) bool {
	return func(h hit) bool { return !h.at.Before(from) && h.at.Before(to) }
}

func all(fs ...func(hit) bool) func(hit) bool {
	return func(h hit) bool {
		for _, f := range fs {
			if !f(h) {
				return false
			}
		}
		return true
	}
}

// checkBudget fails when the upstream admitted more than its quota in any window or
// answered any 429.
func checkBudget(t *testing.T, up *countingUpstream) {
	t.Helper()
	adm := up.quota.Admissions()
	most := upstreamtest.MaxInWindow(adm, up.window)
	t.Logf("upstream: %d requests, %d admitted, %d 429s; most admitted in any %s: %d (quota %d)",
		up.quota.Requests(), up.quota.Admitted(), up.quota.Limited(), up.window, most, replicaQuota)
	if most > replicaQuota {
		t.Errorf("over-admission: %d upstream admissions in one %s window, budget %d", most, up.window, replicaQuota)
	}
	if n := up.quota.Limited(); n != 0 {
		t.Errorf("upstream answered %d 429s, want 0", n)
	}
}

// TestReplicasShareCooldownAndBudget: three specgate processes on one Redis keep one
// cooldown and one upstream budget between them. First the agents call only getA, so the
// cooldown alone decides: exactly one admission per interval across the three. Then they
// also call getB, past the budget: never more than the quota in any window, no 429.
func TestReplicasShareCooldownAndBudget(t *testing.T) {
	rd := redistest.Start(t)
	up := newCountingUpstream(t)
	rs := startReplicas(t, replicaCount, up, rd)
	var agents []*agent
	for _, r := range rs {
		agents = append(agents, newAgent(t, r))
	}
	byReplica := func(keep func(hit) bool) map[int]int {
		n := map[int]int{}
		up.mu.Lock()
		defer up.mu.Unlock()
		for _, h := range up.hits {
			if h.admitted && keep(h) {
				n[h.replica]++
			}
		}
		return n
	}

	// Cooldown alone.
	const coolRun = 3500 * time.Millisecond
	start := time.Now()
	runFor(t.Context(), agents, coolRun, "quota.getA")
	end := time.Now()
	checkOutcomes(t, "cooldown phase", agents)
	a := up.admitted(all(pathIs("/a"), inSpan(start, end)))
	var gaps []time.Duration
	for i := 1; i < len(a); i++ {
		gaps = append(gaps, a[i].Sub(a[i-1]).Round(time.Millisecond))
	}
	t.Logf("cooldown phase: %d admissions of getA in %s (cooldown %s), by replica %v, gaps %v",
		len(a), end.Sub(start).Round(time.Millisecond), replicaCool, byReplica(all(pathIs("/a"), inSpan(start, end))), gaps)
	// the first call goes at once, then one each time the cooldown ends
	if want := int(end.Sub(start)/replicaCool) + 1; len(a) < want-1 || len(a) > want {
		t.Errorf("getA admitted %d times in %s with a %s cooldown across replicas, want %d (or %d)",
			len(a), end.Sub(start), replicaCool, want, want-1)
	}
	for _, g := range gaps {
		if g < replicaCool-arrivalJitter || g > replicaCool+arrivalJitter {
			t.Errorf("getA admissions %s apart, want the cooldown %s (±%s): one replica's cooldown did not hold for the others, or admissions lagged",
				g, replicaCool, arrivalJitter)
		}
	}

	// Past the budget.
	const budgetRun = 3 * time.Second
	start = time.Now()
	runFor(t.Context(), agents, budgetRun, "quota.getA", "quota.getB")
	end = time.Now()
	out := checkOutcomes(t, "budget phase", agents)
	if out["quota.getB rate_limit"] == 0 {
		t.Errorf("no call was refused by the budget: the run did not reach it")
	}
	t.Logf("budget phase: upstream admissions by replica %v", byReplica(inSpan(start, end)))
	checkBudget(t, up)
	aAll := up.admitted(pathIs("/a"))
	if most := upstreamtest.MaxInWindow(aAll, replicaCool-arrivalJitter); most > 1 {
		t.Errorf("cooldown broken across replicas: %d admissions of getA within %s", most, replicaCool-arrivalJitter)
	}
}

// TestReplicasSurviveRedisOutage kills Redis mid-run and starts it again on the same
// port: no replica crashes or stops answering, none spends more than its fallback share
// while Redis is down, /readyz says degraded (still 200), and they all return to Redis.
func TestReplicasSurviveRedisOutage(t *testing.T) {
	rd := redistest.Start(t)
	up := newCountingUpstream(t)
	rs := startReplicas(t, replicaCount, up, rd)
	var agents []*agent
	for _, r := range rs {
		agents = append(agents, newAgent(t, r))
	}
	share := int(math.Floor(replicaShare * replicaQuota))

	stop := make(chan struct{})
	wait := runAgents(t.Context(), agents, stop, "quota.getA", "quota.getB")
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wait()
		}
	}()
	time.Sleep(1500 * time.Millisecond) // Redis up for a while, so the switch carries state
	checkOutcomes(t, "before the outage", agents)

	rd.Stop()
	killedAt := time.Now()
	// Every replica notices at its next call to Redis: readyz says degraded, still 200.
	for _, r := range rs {
		deadline := time.Now().Add(replicaTimeout)
		for {
			code, body := getStatus(r.base + "/readyz")
			if code != http.StatusOK {
				t.Fatalf("replica %d: /readyz %d while Redis is down, want 200: %s", r.id, code, body)
			}
			if strings.Contains(body, "degraded") {
				t.Logf("replica %d degraded after %s: %s", r.id, time.Since(killedAt).Round(time.Millisecond), strings.TrimSpace(body))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d: /readyz not degraded %s after Redis died: %s", r.id, replicaTimeout, body)
			}
			time.Sleep(20 * time.Millisecond) // polling for the replica to notice
		}
	}
	time.Sleep(3 * time.Second) // Redis down: longer than the window and the stretched cooldown
	for _, r := range rs {
		if code, body := getStatus(r.base + "/healthz"); code != http.StatusOK {
			t.Errorf("replica %d: /healthz %d while Redis is down: %s", r.id, code, body)
		}
		if code, body := getStatus(r.base + "/readyz"); code != http.StatusOK || !strings.Contains(body, "degraded") {
			t.Errorf("replica %d: /readyz %d %s while Redis is down, want 200 and degraded", r.id, code, body)
		}
		if _, body := getStatus(r.base + "/metrics"); !strings.Contains(body, "\nspecgate_store_degraded 1\n") {
			t.Errorf("replica %d: /metrics lacks specgate_store_degraded 1 while Redis is down", r.id)
		}
	}
	if res, code := agents[0].call(t.Context(), "rate_limit_status", map[string]any{}); code != "ok" {
		t.Errorf("rate_limit_status while Redis is down: %s", code)
	} else if !strings.Contains(string(mustJSON(res)), `"degraded":true`) {
		t.Errorf("rate_limit_status does not say the store is degraded: %s", mustJSON(res))
	}
	checkOutcomes(t, "redis down", agents)

	rd.Restart()
	restartedAt := time.Now()
	for _, r := range rs {
		deadline := time.Now().Add(replicaTimeout)
		for {
			code, body := getStatus(r.base + "/readyz")
			if code == http.StatusOK && !strings.Contains(body, "degraded") {
				t.Logf("replica %d back on Redis %s after the restart", r.id, time.Since(restartedAt).Round(time.Millisecond))
				if _, body := getStatus(r.base + "/metrics"); !strings.Contains(body, "\nspecgate_store_degraded 0\n") {
					t.Errorf("replica %d: /metrics lacks specgate_store_degraded 0 once back on Redis", r.id)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d: still degraded %s after Redis came back: %d %s", r.id, replicaTimeout, code, body)
			}
			time.Sleep(20 * time.Millisecond) // polling for the replica's probe
		}
	}
	time.Sleep(time.Second) // run on Redis again
	close(stop)
	wait()
	checkOutcomes(t, "after the restart", agents)

	for _, r := range rs {
		if !r.running() {
			t.Errorf("replica %d exited during the run:\n%s", r.id, r.log())
		}
	}
	// While Redis was down, no replica went over its share of the budget, and each kept
	// its cooldown stretched by 1/share.
	for _, r := range rs {
		mine := func(h hit) bool { return h.replica == r.id }
		down := up.admitted(all(mine, inSpan(killedAt, restartedAt)))
		most := upstreamtest.MaxInWindow(down, replicaWindow)
		a := up.admitted(all(mine, pathIs("/a"), inSpan(killedAt, restartedAt)))
		t.Logf("replica %d while Redis was down: %d admissions, most in any %s: %d (share %d); getA %d",
			r.id, len(down), replicaWindow, most, share, len(a))
		if most > share {
			t.Errorf("replica %d: %d upstream admissions in one %s window while Redis was down, share %d",
				r.id, most, replicaWindow, share)
		}
		stretched := time.Duration(math.Round(float64(replicaCool) / replicaShare))
		if len(a) > 1 && minGap(a) < stretched-arrivalJitter {
			t.Errorf("replica %d: getA admitted %s apart while Redis was down, cooldown stretched to %s",
				r.id, minGap(a), stretched)
		}
	}
	down := up.admitted(inSpan(killedAt, restartedAt))
	t.Logf("all replicas while Redis was down: %d admissions, most in any %s: %d", len(down), replicaWindow,
		upstreamtest.MaxInWindow(down, replicaWindow))
	checkBudget(t, up)

	// A replica that lived through the outage still shuts down cleanly.
	for _, r := range rs {
		r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
			if code := r.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("replica %d exited %d after SIGTERM:\n%s", r.id, code, r.log())
			}
		case <-time.After(replicaTimeout):
			t.Errorf("replica %d did not exit within %s of SIGTERM", r.id, replicaTimeout)
		}
	}
}

// TestReplicasFallbackAfterUnevenLoadStaysInBudget: one replica spends the whole budget
// while Redis is up, then Redis dies and all three call. The fallback used to count only
// each replica's own recent admissions, so the two idle ones each admitted their share at
// once while the upstream's window was still full of the busy one's calls, and the
// upstream answered 429. Now, for a window after the switch, a replica allows only its
// share of what it last saw left in the shared window (none when it saw it full, or saw
// nothing); then each runs on its share, within the budget.
func TestReplicasFallbackAfterUnevenLoadStaysInBudget(t *testing.T) {
	rd := redistest.Start(t)
	up := newCountingUpstream(t)
	rs := startReplicas(t, replicaCount, up, rd)
	var agents []*agent
	for _, r := range rs {
		agents = append(agents, newAgent(t, r))
	}
	runFor(t.Context(), agents[:1], 1500*time.Millisecond, "quota.getB")
	checkOutcomes(t, "one replica busy", agents)
	rd.Stop()
	killedAt := time.Now()
	// longer than a window plus pad after the switch, so the shares are used as well
	runFor(t.Context(), agents, replicaWindow+2*time.Second, "quota.getB")
	out := checkOutcomes(t, "after the switch", agents)
	if out["quota.getB ok"] == 0 {
		t.Error("no call admitted on the fallback share a window after the switch")
	}
	t.Logf("after the switch: %d upstream admissions", len(up.admitted(inSpan(killedAt, time.Now()))))
	checkBudget(t, up)
}

// concurrently runs one call per agent in calls, all at once, and waits for them.
func concurrently(ctx context.Context, agents []*agent, calls int, endpoint string) {
	var wg sync.WaitGroup
	for i := range calls {
		a := agents[i%len(agents)]
		wg.Go(func() { a.invoke(ctx, endpoint) })
	}
	wg.Wait()
}

// TestReplicasOnRedisCluster: three specgate processes on a three-master Redis Cluster
// (every admission script touched up to seven keys with no hash tag, so the cluster
// refused each with CROSSSLOT and every replica ran on its fallback share). Now: a
// shared cooldown puts one call on the wire; an upstream budget of 10 per 3 s admits
// exactly 10 of 15 concurrent calls across replicas; no store error reaches the model,
// and rate_limit_status reports no fallback. The two run on their own replicas and
// upstreams (key prefixes apart) on the one cluster, so each starts from empty windows.
func TestReplicasOnRedisCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	const window = 3 * time.Second
	agentsOn := func(t *testing.T, up *countingUpstream) []*agent {
		var agents []*agent
		for _, r := range startReplicas(t, replicaCount, up, cl) {
			agents = append(agents, newAgent(t, r))
		}
		return agents
	}
	t.Run("shared cooldown", func(t *testing.T) {
		up := newCountingUpstreamWindow(t, window)
		agents := agentsOn(t, up)
		concurrently(t.Context(), agents, 3*replicaCount, "quota.getA")
		out := checkOutcomes(t, "cooldown", agents)
		if n := len(up.admitted(pathIs("/a"))); n != 1 || out["quota.getA ok"] != 1 {
			t.Errorf("getA with a shared cooldown: %d on the wire, %d ok; want exactly 1", n, out["quota.getA ok"])
		}
		checkClusterStatus(t, agents)
	})
	t.Run("upstream budget", func(t *testing.T) {
		up := newCountingUpstreamWindow(t, window)
		agents := agentsOn(t, up)
		concurrently(t.Context(), agents, replicaQuota+5, "quota.getB")
		out := checkOutcomes(t, "budget", agents)
		if got := out["quota.getB ok"]; got != replicaQuota {
			t.Errorf("%d of %d concurrent getB admitted across replicas, want exactly the budget %d per %s",
				got, replicaQuota+5, replicaQuota, window)
		}
		if n := len(up.admitted(pathIs("/b"))); n != replicaQuota {
			t.Errorf("%d getB on the wire, want %d", n, replicaQuota)
		}
		checkBudget(t, up)
		checkClusterStatus(t, agents)
	})
}

// checkClusterStatus fails unless every agent's rate_limit_status says the store is
// shared, not degraded, and no upstream on the fallback share.
func checkClusterStatus(t *testing.T, agents []*agent) {
	t.Helper()
	for _, a := range agents {
		st, code := a.call(t.Context(), "rate_limit_status", map[string]any{})
		if code != "ok" {
			t.Fatalf("rate_limit_status: %s", code)
		}
		if s, _ := st["store"].(map[string]any); s["backend"] != "shared" || s["degraded"] == true {
			t.Errorf("replica %d: store %v, want shared and not degraded", a.replica, s)
		}
		ups, _ := st["upstreams"].([]any)
		for _, u := range ups {
			if u.(map[string]any)["fallback"] == true {
				t.Errorf("replica %d: upstream %v on the fallback share with the cluster up", a.replica, u)
			}
		}
	}
}

// TestReplicasFallbackAfterAnAgedSpentWindow: the replicas spend an upstream budget of 10
// per 3 s through Redis; Redis dies 3.8 s later (the window and its pad long over). The
// fallback used to forget that time had passed and refused every call for a whole window
// more ("request budget (0 per 3s) is spent: try again in 3.25 seconds"), the upstream
// idle. Now each replica admits its share at once, and the upstream answers no 429.
func TestReplicasFallbackAfterAnAgedSpentWindow(t *testing.T) {
	rd := redistest.Start(t)
	const window = 3 * time.Second
	up := newCountingUpstreamWindow(t, window)
	rs := startReplicas(t, replicaCount, up, rd)
	var agents []*agent
	for _, r := range rs {
		agents = append(agents, newAgent(t, r))
	}
	concurrently(t.Context(), agents, replicaQuota+5, "quota.getB")
	if out := checkOutcomes(t, "spend", agents); out["quota.getB ok"] != replicaQuota {
		t.Fatalf("spent %d through Redis, want the budget %d", out["quota.getB ok"], replicaQuota)
	}
	time.Sleep(3800 * time.Millisecond) // processes keep their own clocks: the gap is real
	rd.Stop()
	killedAt := time.Now()
	concurrently(t.Context(), agents, replicaQuota+5, "quota.getB")
	out := checkOutcomes(t, "after Redis died", agents)
	if got := out["quota.getB ok"]; got < replicaCount || got > replicaQuota {
		t.Errorf("%d of %d admitted on the fallback share, want each replica's share at once (%d..%d)",
			got, replicaQuota+5, replicaCount, replicaQuota)
	}
	share := int(math.Floor(replicaShare * replicaQuota))
	for _, r := range rs {
		n := len(up.admitted(all(inSpan(killedAt, time.Now()), func(h hit) bool { return h.replica == r.id })))
		if n < 1 || n > share {
			t.Errorf("replica %d admitted %d on its fallback share right after Redis died, want 1..%d", r.id, n, share)
		}
	}
	checkBudget(t, up)
}

// With store.backend redis, an answer stored by one replica is read by
// another: read_response may land on any stateless replica behind a load
// balancer. Each replica on its own memory store cannot, and says not_found.
func TestReplicasShareStoredAnswers(t *testing.T) {
	for _, tt := range []struct {
		name   string
		store  func(t *testing.T) sharedRedis
		shared bool
	}{
		{"redis", func(t *testing.T) sharedRedis { return redistest.Start(t) }, true},
		{"memory", func(t *testing.T) sharedRedis { return perReplicaMemory{} }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs := startReplicas(t, 2, newCountingUpstream(t), tt.store(t))
			a, b := newAgent(t, rs[0]), newAgent(t, rs[1])
			first, code := a.call(t.Context(), "invoke", map[string]any{"endpointId": "quota.getB"})
			id, _ := first["responseId"].(string)
			if code != "ok" || id == "" {
				t.Fatalf("invoke on replica 0: %s %v", code, first)
			}
			again, code := b.call(t.Context(), "read_response", map[string]any{"responseId": id})
			if !tt.shared {
				if code != "not_found" {
					t.Errorf("read_response on replica 1 of replica 0's answer: %s %v", code, again)
				}
				return
			}
			if code != "ok" || fmt.Sprint(again["body"]) != fmt.Sprint(first["body"]) || again["endpointId"] != "quota.getB" {
				t.Errorf("read_response on replica 1: %s %v, want the body %v", code, again, first["body"])
			}
		})
	}
}
