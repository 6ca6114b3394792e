package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/specgate/specgate/pkg/serve"
)

// extMeta declares the 2026-07-28 tasks extension in a request's own
// capabilities.
var extMeta = map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
	"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}

// TestTasksExtensionIsARun: a 2026-07-28 client that declares the tasks
// extension gets a task handle for run_script at once (resultType task, the
// run's id), polls tasks/get until the run's final tool result is inlined
// (completed), is acknowledged by tasks/update and tasks/cancel, and finds
// no tasks/result or tasks/list; bob cannot see ada's task.
func TestTasksExtensionIsARun(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	synctest.Test(t, func(t *testing.T) {
		srv, up := longFixture(t, served, nil)
		h := serve.NewHandler(srv, serve.Options{Tokens: map[string]Principal{"tok-ada": {Subject: "ada"}, "tok-bob": {Subject: "bob"}}})
		start := time.Now()
		raw, msg := taskRPC(t, h, "tok-ada", "tools/call", map[string]any{"name": "run_script",
			"arguments": map[string]any{"code": threeLookups}, "_meta": extMeta})
		if msg != "" {
			t.Fatalf("run_script: %s", msg)
		}
		var handle map[string]any
		_ = json.Unmarshal(raw, &handle)
		id, _ := handle["taskId"].(string)
		if handle["resultType"] != "task" || handle["status"] != "working" || !strings.HasPrefix(id, "run-") || time.Since(start) != 0 {
			t.Fatalf("handle %v after %v, want a working task at once", handle, time.Since(start))
		}
		if _, ok := handle["ttlMs"].(float64); !ok {
			t.Errorf("handle has no ttlMs: %v", handle)
		}
		get := func(token string) (map[string]any, string) {
			raw, msg := taskRPC(t, h, token, "tasks/get", map[string]any{"taskId": id, "_meta": extMeta})
			var out map[string]any
			_ = json.Unmarshal(raw, &out)
			return out, msg
		}
		if _, msg := get("tok-bob"); !strings.Contains(msg, "not found") {
			t.Errorf("bob's tasks/get of ada's task: %q, want not found", msg)
		}
		if _, msg := taskRPC(t, h, "tok-bob", "tasks/cancel", map[string]any{"taskId": id, "_meta": extMeta}); !strings.Contains(msg, "not found") {
			t.Errorf("bob's tasks/cancel of ada's task: %q, want not found", msg)
		}
		for _, m := range []string{"tasks/result", "tasks/list"} {
			if _, msg := taskRPC(t, h, "tok-ada", m, map[string]any{"taskId": id, "_meta": extMeta}); msg == "" {
				t.Errorf("%s answered on the extension, which has none", m)
			}
		}
		if raw, msg := taskRPC(t, h, "tok-ada", "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{}, "_meta": extMeta}); msg != "" || !strings.Contains(string(raw), `"complete"`) {
			t.Errorf("tasks/update: %s %s", raw, msg)
		}
		synctest.Wait() // the first lookup is answered at once
		task, msg := get("tok-ada")
		if msg != "" || task["status"] != "working" || task["resultType"] != "complete" || !strings.Contains(task["statusMessage"].(string), "of 3 done") {
			t.Fatalf("tasks/get while running: %v %s", task, msg)
		}
		time.Sleep(90 * time.Second)
		task, _ = get("tok-ada")
		result, _ := task["result"].(map[string]any)
		sc, _ := result["structuredContent"].(map[string]any)
		if task["status"] != "completed" || sc["status"] != "done" || len(sc["result"].([]any)) != 3 {
			t.Fatalf("tasks/get after the run: %v", task)
		}
		if n := up.requests.Load(); n != 3 {
			t.Errorf("upstream got %d requests, want 3", n)
		}
		// Cancel: acknowledged, and the next run stops sending.
		raw, _ = taskRPC(t, h, "tok-ada", "tools/call", map[string]any{"name": "run_script",
			"arguments": map[string]any{"code": threeLookups}, "_meta": extMeta})
		_ = json.Unmarshal(raw, &handle)
		id = handle["taskId"].(string)
		if raw, msg := taskRPC(t, h, "tok-ada", "tasks/cancel", map[string]any{"taskId": id, "_meta": extMeta}); msg != "" || !strings.Contains(string(raw), `"complete"`) {
			t.Fatalf("tasks/cancel: %s %s", raw, msg)
		}
		sent := up.requests.Load()
		time.Sleep(5 * time.Minute)
		if task, _ := get("tok-ada"); task["status"] != "cancelled" || up.requests.Load() != sent {
			t.Errorf("after the cancel: %v, %d more requests", task["status"], up.requests.Load()-sent)
		}
	})
}
