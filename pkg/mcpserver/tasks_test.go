package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/runs"
	"github.com/specgate/specgate/pkg/serve"
)

// taskRPC posts one JSON-RPC request to h as token's holder, in memory,
// and returns its result, or its error's message.
func taskRPC(t *testing.T, h http.Handler, token, method string, params any) (json.RawMessage, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/mcp", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	text := rec.Body.String()
	if d, ok := strings.CutPrefix(text, "event: message\ndata: "); ok {
		text = d
	}
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s: %d %q", method, rec.Code, rec.Body.String())
	}
	if out.Error != nil {
		return nil, out.Error.Message
	}
	return out.Result, ""
}

func taskOfResult(t *testing.T, raw json.RawMessage) mcp.Task {
	t.Helper()
	var task mcp.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatal(err)
	}
	return task
}

// TestHTTPTasksBelongToTheirPrincipal: run_script as an MCP task over
// stateless HTTP, where mcp-go files every caller's tasks under one empty
// session: the task id is the run id, tasks/get shows the run with its
// progress line, tasks/result is script_result's final answer, and bob
// cannot get, wait on, cancel or list ada's task.
func TestHTTPTasksBelongToTheirPrincipal(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	synctest.Test(t, func(t *testing.T) {
		srv, up := longFixture(t, served, nil)
		h := serve.NewHandler(srv, serve.Options{Tokens: map[string]Principal{"tok-ada": {Subject: "ada"}, "tok-bob": {Subject: "bob"}}})
		start := time.Now()
		created, msg := taskRPC(t, h, "tok-ada", "tools/call", map[string]any{"name": "run_script",
			"arguments": map[string]any{"code": threeLookups}, "task": map[string]any{"ttl": 60000}})
		if msg != "" {
			t.Fatalf("creating the task: %s", msg)
		}
		var c struct{ Task mcp.Task }
		_ = json.Unmarshal(created, &c)
		id := c.Task.TaskId
		if c.Task.Status != mcp.TaskStatusWorking || !strings.HasPrefix(id, "run-") || time.Since(start) != 0 {
			t.Fatalf("created %+v after %v, want a working run-... at once", c.Task, time.Since(start))
		}
		time.Sleep(time.Second) // the first lookup goes; the second waits 40s
		got, _ := taskRPC(t, h, "tok-ada", "tasks/get", map[string]any{"taskId": id})
		if task := taskOfResult(t, got); task.Status != mcp.TaskStatusWorking || task.StatusMessage != "1 of 3 done, 1 calls done: item 1" {
			t.Errorf("ada's tasks/get: %+v", task)
		}
		for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			if _, msg := taskRPC(t, h, "tok-bob", m, map[string]any{"taskId": id}); msg != "task not found" {
				t.Errorf("bob's %s of ada's task: %q, want task not found", m, msg)
			}
		}
		list, _ := taskRPC(t, h, "tok-bob", "tasks/list", map[string]any{})
		if !strings.Contains(string(list), `"tasks":[]`) {
			t.Errorf("bob's tasks/list: %s", list)
		}
		list, _ = taskRPC(t, h, "tok-ada", "tasks/list", map[string]any{})
		if !strings.Contains(string(list), id) {
			t.Errorf("ada's tasks/list: %s", list)
		}
		res, msg := taskRPC(t, h, "tok-ada", "tasks/result", map[string]any{"taskId": id})
		if took := time.Since(start); msg != "" || took != 80*time.Second {
			t.Fatalf("tasks/result at %v: %s", took, msg)
		}
		var r mcp.CallToolResult
		if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
			t.Fatalf("tasks/result: %s", res)
		}
		sr, _ := taskRPC(t, h, "tok-ada", "tools/call", map[string]any{"name": "script_result", "arguments": map[string]any{"runId": id, "waitSeconds": 0}})
		var want mcp.CallToolResult
		_ = json.Unmarshal(sr, &want)
		if r.Content[0].(mcp.TextContent).Text != want.Content[0].(mcp.TextContent).Text {
			t.Errorf("tasks/result %s\ndiffers from script_result %s", res, sr)
		}
		got, _ = taskRPC(t, h, "tok-ada", "tasks/get", map[string]any{"taskId": id})
		if task := taskOfResult(t, got); task.Status != mcp.TaskStatusCompleted {
			t.Errorf("tasks/get after the end: %+v", task)
		}
		if n := up.requests.Load(); n != 3 {
			t.Errorf("upstream got %d requests, want 3", n)
		}
	})
}

// TestHTTPTaskCancel: tasks/cancel stops the run as script_result cancel
// does: nothing more is sent, and bob's cancel did nothing.
func TestHTTPTaskCancel(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	synctest.Test(t, func(t *testing.T) {
		srv, up := longFixture(t, served, nil)
		h := serve.NewHandler(srv, serve.Options{Tokens: map[string]Principal{"tok-ada": {Subject: "ada"}, "tok-bob": {Subject: "bob"}}})
		created, _ := taskRPC(t, h, "tok-ada", "tools/call", map[string]any{"name": "run_script",
			"arguments": map[string]any{"code": threeLookups}, "task": map[string]any{}})
		var c struct{ Task mcp.Task }
		_ = json.Unmarshal(created, &c)
		time.Sleep(time.Second)
		taskRPC(t, h, "tok-bob", "tasks/cancel", map[string]any{"taskId": c.Task.TaskId})
		got, _ := taskRPC(t, h, "tok-ada", "tasks/get", map[string]any{"taskId": c.Task.TaskId})
		if task := taskOfResult(t, got); task.Status != mcp.TaskStatusWorking {
			t.Fatalf("after bob's cancel: %+v", task)
		}
		got, msg := taskRPC(t, h, "tok-ada", "tasks/cancel", map[string]any{"taskId": c.Task.TaskId})
		if task := taskOfResult(t, got); msg != "" || task.Status != mcp.TaskStatusCancelled {
			t.Fatalf("ada's cancel: %+v %s", task, msg)
		}
		res, _ := taskRPC(t, h, "tok-ada", "tasks/result", map[string]any{"taskId": c.Task.TaskId})
		if !strings.Contains(string(res), `\"status\":\"cancelled\"`) {
			t.Errorf("tasks/result of a cancelled task: %s", res)
		}
		time.Sleep(5 * time.Minute)
		if n := up.requests.Load(); n != 1 {
			t.Errorf("upstream got %d requests after the cancel, want the 1 sent before it", n)
		}
		if _, msg := taskRPC(t, h, "tok-ada", "tasks/get", map[string]any{"taskId": "0f0e-not-a-run"}); msg != "task not found" {
			t.Errorf("an unknown task id: %q", msg)
		}
	})
}

// TestHTTPTasksListShowsRunsOfAnotherReplica: behind a load balancer ada's
// run started on replica a is in her tasks/list and rate_limit_status on
// replica b, which share the run store; never in bob's.
func TestHTTPTasksListShowsRunsOfAnotherReplica(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	synctest.Test(t, func(t *testing.T) {
		store := runs.NewMemoryStore(runs.MemoryStoreOptions{})
		tokens := serve.Options{Tokens: map[string]Principal{"tok-ada": {Subject: "ada"}, "tok-bob": {Subject: "bob"}}}
		srvA, _ := longFixture(t, served, store)
		srvB, _ := longFixture(t, served, store)
		a, b := serve.NewHandler(srvA, tokens), serve.NewHandler(srvB, tokens)
		created, msg := taskRPC(t, a, "tok-ada", "tools/call", map[string]any{"name": "run_script",
			"arguments": map[string]any{"code": threeLookups}, "task": map[string]any{}})
		if msg != "" {
			t.Fatalf("creating the task on replica a: %s", msg)
		}
		var c struct{ Task mcp.Task }
		_ = json.Unmarshal(created, &c)
		id := c.Task.TaskId
		time.Sleep(time.Second)
		list, _ := taskRPC(t, b, "tok-ada", "tasks/list", map[string]any{})
		if !strings.Contains(string(list), id) {
			t.Errorf("ada's tasks/list on replica b: %s, want %s", list, id)
		}
		status, _ := taskRPC(t, b, "tok-ada", "tools/call", map[string]any{"name": "rate_limit_status", "arguments": map[string]any{}})
		if !strings.Contains(string(status), id) {
			t.Errorf("ada's rate_limit_status on replica b: %s, want %s in its runs", status, id)
		}
		for _, h := range []http.Handler{a, b} {
			list, _ := taskRPC(t, h, "tok-bob", "tasks/list", map[string]any{})
			status, _ := taskRPC(t, h, "tok-bob", "tools/call", map[string]any{"name": "rate_limit_status", "arguments": map[string]any{}})
			if strings.Contains(string(list), id) || strings.Contains(string(status), id) {
				t.Errorf("bob sees ada's run: %s %s", list, status)
			}
		}
		got, msg := taskRPC(t, b, "tok-ada", "tasks/cancel", map[string]any{"taskId": id})
		if task := taskOfResult(t, got); msg != "" || task.Status != mcp.TaskStatusCancelled {
			t.Fatalf("ada's cancel on replica b: %+v %s", task, msg)
		}
	})
}

// TestInProcessTasks: on stdio and in process mcp-go's task store serves
// the one client: a task-augmented run_script is a task at once, runs to
// its end with no answer_within, tasks/result is its final answer, and
// tasks/cancel stops the run.
func TestInProcessTasks(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	for _, tc := range []struct {
		name   string
		cancel bool
	}{{"result", false}, {"cancel", true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, up := longFixture(t, served, nil)
				c := connectTasks(t, srv)
				start := time.Now()
				resp, err := c.GetTransport().SendRequest(t.Context(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(99)),
					Method: "tools/call", Params: map[string]any{"name": "run_script", "arguments": map[string]any{"code": threeLookups}, "task": map[string]any{}}})
				if err != nil || resp.Error != nil {
					t.Fatalf("creating the task: %v %v", err, resp.Error)
				}
				var created struct{ Task mcp.Task }
				_ = json.Unmarshal(resp.Result, &created)
				id := created.Task.TaskId
				if id == "" || time.Since(start) != 0 {
					t.Fatalf("created %s after %v", resp.Result, time.Since(start))
				}
				time.Sleep(time.Second)
				if tc.cancel {
					if _, err := c.CancelTask(t.Context(), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: id}}); err != nil {
						t.Fatal(err)
					}
					time.Sleep(5 * time.Minute)
					if n := up.requests.Load(); n != 1 {
						t.Errorf("upstream got %d requests after the cancel, want 1", n)
					}
					return
				}
				got, err := c.GetTask(t.Context(), mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
				if err != nil || got.Status != mcp.TaskStatusWorking {
					t.Fatalf("tasks/get: %+v %v", got, err)
				}
				res, err := c.TaskResult(t.Context(), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
				if took := time.Since(start); err != nil || took != 80*time.Second {
					t.Fatalf("tasks/result at %v: %v", took, err)
				}
				text := res.Content[0].(mcp.TextContent).Text
				if !strings.Contains(text, `"status":"done"`) || !strings.Contains(text, `"result":["item 1","item 2","item 3"]`) {
					t.Errorf("tasks/result: %s", text)
				}
			})
		})
	}
}

// connectTasks connects mcp-go's in-process client on MCP 2025-11-25, the
// version of tasks/get and tasks/result.
func connectTasks(t *testing.T, srv *Server) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStdioTasksAreRuns: on stdio, as over HTTP, a task is a run: its id
// is the run id, tasks/get carries the progress line, tasks/result is the
// final answer, and script_result reads the same run. (Not in a synctest
// bubble: mcp-go's stdio session is made outside it; the script sends
// nothing, so no time needs to pass.)
func TestStdioTasksAreRuns(t *testing.T) {
	served := scriptBenchServe(t, scriptBenchMemoryBase)
	srv, up := longFixture(t, served, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	ended := make(chan error, 1)
	go func() { ended <- serve.Stdio(ctx, srv, inR, outW) }()
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close(); <-ended })
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	call := func(id int, method string, params any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := inW.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			var m map[string]any
			if json.Unmarshal(lines.Bytes(), &m) == nil && m["id"] == float64(id) {
				return m
			}
		}
		t.Fatalf("no answer to %s", method)
		return nil
	}
	call(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	created := call(2, "tools/call", map[string]any{"name": "run_script", "task": map[string]any{},
		"arguments": map[string]any{"code": `api.progress(1, 2, "half"); return 42;`}})
	task, _ := created["result"].(map[string]any)["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if !strings.HasPrefix(id, "run-") {
		t.Fatalf("created: %v", created)
	}
	res := call(3, "tasks/result", map[string]any{"taskId": id})["result"].(map[string]any)
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	if !strings.Contains(text, `"status":"done","result":42`) {
		t.Errorf("tasks/result: %s", text)
	}
	got := call(4, "tasks/get", map[string]any{"taskId": id})["result"].(map[string]any)
	if got["status"] != "completed" || got["statusMessage"] != "1 of 2 done, 0 calls done: half" {
		t.Errorf("tasks/get: %v", got)
	}
	sr := call(5, "tools/call", map[string]any{"name": "script_result", "arguments": map[string]any{"runId": id, "waitSeconds": 0}})["result"].(map[string]any)
	if sr["content"].([]any)[0].(map[string]any)["text"] != text || up.requests.Load() != 0 {
		t.Errorf("script_result differs from tasks/result, or sent something: %v", sr)
	}
}
