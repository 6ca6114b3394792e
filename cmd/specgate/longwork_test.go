package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"
)

// longReplicaConfig is a replica of the quota spec on the shared Redis whose
// runs answer within a second and whose budget waits (10 per 2s).
func longReplicaConfig(t *testing.T, dir string, i int, upstreamURL, redisURL, prefix string) string {
	t.Helper()
	cfg := fmt.Sprintf(`max_retries: 0
specs:
  - name: quota
    location: quota.yaml
    base_url: %s
    upstream: quota-group
    headers:
      X-Replica: "%d"
    disable_ratelimiter: true
upstreams:
  - match: quota-group
    requests_per_window: %d
    window: %s
    on_limit: wait
    queue_timeout: 1m
scripts:
  answer_within: 1s
http:
  shutdown_timeout: 2s
  inbound:
    requests_per_window: 1000000
    tool_calls_per_window: 1000000
store:
  backend: redis
  redis_url: %s
  key_prefix: "%s"
`, upstreamURL, i, replicaQuota, replicaWindow, redisURL, prefix)
	path := filepath.Join(dir, fmt.Sprintf("long%d.yaml", i))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// lookups is a script of n paced calls, reporting its progress.
func lookups(n int) string {
	return fmt.Sprintf(`let ok = 0;
for (let i = 1; i <= %d; i++) {
  const r = await api.invoke("quota.getB", {});
  if (r.statusCode === 200) ok++;
  api.progress(i, %d);
}
return ok;`, n, n)
}

// TestReplicasAnswerForEachOthersRuns: a run started on one replica is
// collected on another (the record lives in the shared Redis), and a run
// whose replica was SIGKILLed reads as lost within 20s of the kill.
func TestReplicasAnswerForEachOthersRuns(t *testing.T) {
	rd := redistest.Start(t)
	up := newCountingUpstream(t)
	bin := specgateBinary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "quota.yaml"), []byte(replicaSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("long:%d:", time.Now().UnixNano())
	a := startReplica(t, bin, 0, longReplicaConfig(t, dir, 0, up.ts.URL, rd.URL(), prefix))
	b := startReplica(t, bin, 1, longReplicaConfig(t, dir, 1, up.ts.URL, rd.URL(), prefix))
	waitReady(t, a, b)
	onA, onB := newAgent(t, a), newAgent(t, b)
	ctx := t.Context()

	// 25 calls at 10 per 2s take about 4s: started on a, answered by b.
	out, code := onA.callFor(ctx, 10*time.Second, "run_script", map[string]any{"code": lookups(25)})
	if code != "ok" || out["status"] != "running" {
		t.Fatalf("run_script on a: %s %v", code, out)
	}
	id, _ := out["runId"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for out["status"] == "running" && time.Now().Before(deadline) {
		out, code = onB.callFor(ctx, 35*time.Second, "script_result", map[string]any{"runId": id, "waitSeconds": 5})
		if code != "ok" {
			t.Fatalf("script_result on b: %s %v", code, out)
		}
	}
	if out["status"] != "done" || out["result"] != float64(25) {
		t.Fatalf("replica b's answer for a's run: %v", out)
	}
	if n := len(up.admitted(pathIs("/b"))); n != 25 {
		t.Errorf("upstream admitted %d calls, want 25", n)
	}

	// A longer run on a, then a is killed: b says lost within 20s.
	out, code = onA.callFor(ctx, 10*time.Second, "run_script", map[string]any{"code": lookups(200)})
	if code != "ok" || out["status"] != "running" {
		t.Fatalf("second run_script on a: %s %v", code, out)
	}
	id, _ = out["runId"].(string)
	if out, code = onB.call(ctx, "script_result", map[string]any{"runId": id, "waitSeconds": 0}); out["status"] != "running" {
		t.Fatalf("b before the kill: %s %v", code, out)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	killed := time.Now()
	for {
		out, code = onB.callFor(ctx, 35*time.Second, "script_result", map[string]any{"runId": id, "waitSeconds": 5})
		if code != "ok" {
			t.Fatalf("script_result on b after the kill: %s %v", code, out)
		}
		if out["status"] != "running" {
			break
		}
		if time.Since(killed) > 25*time.Second {
			t.Fatalf("b still says running %v after a was killed", time.Since(killed))
		}
	}
	took := time.Since(killed)
	if out["status"] != "lost" || took > 20*time.Second {
		t.Fatalf("after the kill, in %v: %v", took, out)
	}
	calls, _ := out["calls"].(map[string]any)
	if total, _ := calls["total"].(float64); total < 1 || !strings.Contains(fmt.Sprint(out["hint"]), "Run it again") {
		t.Errorf("a lost run's answer: %v", out)
	}
	t.Logf("a's run read as lost on b %.1fs after a was killed, with %v calls recorded", took.Seconds(), calls["total"])

	// A replica told to stop takes no new run, gives its runs
	// http.shutdown_timeout (2s) to end, and records the rest as lost at
	// once: b says so without waiting out the lost rule.
	c := startReplica(t, bin, 2, longReplicaConfig(t, dir, 2, up.ts.URL, rd.URL(), prefix))
	waitReady(t, c)
	onC := newAgent(t, c)
	out, code = onC.callFor(ctx, 10*time.Second, "run_script", map[string]any{"code": lookups(200)})
	if code != "ok" || out["status"] != "running" {
		t.Fatalf("run_script on c: %s %v", code, out)
	}
	id, _ = out["runId"].(string)
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	<-c.exited
	if code := c.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("c exited %d after SIGTERM:\n%s", code, c.log())
	}
	out, code = onB.call(ctx, "script_result", map[string]any{"runId": id, "waitSeconds": 0})
	if code != "ok" || out["status"] != "lost" {
		t.Fatalf("b on c's run after c stopped: %s %v", code, out)
	}
	if took := time.Since(stopped); took > 5*time.Second {
		t.Errorf("c's run read as lost %v after SIGTERM, want within the 2s shutdown timeout and a little", took)
	}
}
