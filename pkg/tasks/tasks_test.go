package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/rpcmsg"
	"github.com/specgate/specgate/pkg/runs"
)

// The tests drive Runs with a real runs.Manager on its memory store. The
// tool a task runs is a stand-in for run_script: its run ends when the test
// says so, with the answer the test gives.

type principalKey struct{}

func as(principal string) context.Context {
	return context.WithValue(context.Background(), principalKey{}, principal)
}

// rig is a Runs whose runs wait on release.
type rig struct {
	*Runs
	release chan string       // a run ends with the answer text sent
	refused map[string]string // principal → why it may not read its runs
}

func newRig(t *testing.T) *rig {
	t.Helper()
	m := runs.NewManager(runs.Options{})
	r := &rig{release: make(chan string), refused: map[string]string{}}
	r.Runs = &Runs{
		Runs: m, Tool: "run_script", Wait: 5 * time.Second,
		Start: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, *runs.Run, error) {
			if code, _ := req.GetArguments()["code"].(string); code == "" {
				return mcp.NewToolResultError("code is required"), nil, nil
			}
			run, err := m.Start(ctx, r.Principal(ctx), time.Minute, func(ctx context.Context, _ *runs.Run) runs.Outcome {
				select {
				case text := <-r.release:
					return runs.Outcome{Answer: json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, text))}
				case <-ctx.Done():
					return runs.Outcome{Answer: json.RawMessage(`{"content":[{"type":"text","text":"stopped"}]}`), IsError: true}
				}
			})
			return nil, run, err
		},
		Result: func(rec *runs.Record) *mcp.CallToolResult {
			var res mcp.CallToolResult
			if err := json.Unmarshal(rec.Answer, &res); err != nil {
				t.Errorf("answer %s: %v", rec.Answer, err)
			}
			res.IsError = rec.IsError
			return &res
		},
		Status:    func(rec *runs.Record, _ time.Time) string { return "status of " + rec.ID },
		Principal: func(ctx context.Context) string { s, _ := ctx.Value(principalKey{}).(string); return s },
	}
	r.Refused = func(ctx context.Context) string { return r.refused[r.Principal(ctx)] }
	return r
}

// ask sends the JSON-RPC request text msg as the principal of ctx and
// returns the response as generic JSON.
func (r *rig) ask(t *testing.T, ctx context.Context, msg string) map[string]any {
	t.Helper()
	m, err := rpcmsg.Read([]byte(msg))
	if err != nil {
		t.Fatalf("reading %s: %v", msg, err)
	}
	if !r.IsTask(m) {
		t.Fatalf("%s is not a task request", msg)
	}
	b, err := json.Marshal(r.Answer(ctx, m, []byte(msg)))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func result(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	res, ok := resp["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result in %v", resp)
	}
	return res
}

func errorOf(t *testing.T, resp map[string]any) (float64, string) {
	t.Helper()
	e, ok := resp["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error in %v", resp)
	}
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	return code, msg
}

const startTask = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_script","arguments":{"code":"return 1"},"task":{"ttl":60000}}}`

func taskReq(method, id string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q,"params":{"taskId":%q}}`, method, id)
}

func TestTaskIsAnsweredToItsPrincipalOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		ada, bob := as("ada"), as("bob")
		task := result(t, r.ask(t, ada, startTask))["task"].(map[string]any)
		id := task["taskId"].(string)
		if task["status"] != string(mcp.TaskStatusWorking) || !runs.ValidID(id) {
			t.Fatalf("started task = %v", task)
		}
		for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			if code, msg := errorOf(t, r.ask(t, bob, taskReq(method, id))); code != mcp.INVALID_PARAMS || msg != "task not found" {
				t.Errorf("bob's %s of ada's task: %v %q, want task not found", method, code, msg)
			}
		}
		if list := result(t, r.ask(t, bob, `{"jsonrpc":"2.0","id":3,"method":"tasks/list"}`))["tasks"].([]any); len(list) != 0 {
			t.Errorf("bob lists %v", list)
		}
		if got := result(t, r.ask(t, ada, taskReq("tasks/get", id))); got["status"] != string(mcp.TaskStatusWorking) || got["statusMessage"] != "status of "+id {
			t.Errorf("ada's tasks/get = %v", got)
		}
		if got := result(t, r.ask(t, ada, taskReq("tasks/cancel", id))); got["status"] != string(mcp.TaskStatusCancelled) {
			t.Errorf("ada's tasks/cancel = %v", got)
		}
		if code, msg := errorOf(t, r.ask(t, ada, taskReq("tasks/cancel", id))); code != mcp.INVALID_PARAMS || !strings.Contains(msg, "terminal status: cancelled") {
			t.Errorf("cancelling a cancelled task: %v %q", code, msg)
		}
		if code, _ := errorOf(t, r.ask(t, ada, taskReq("tasks/get", "run-not-a-real-one"))); code != mcp.INVALID_PARAMS {
			t.Errorf("an unknown id: code %v", code)
		}
		r.Runs.Runs.Drain(context.Background())
	})
}

func TestTaskResultWaitsForTheRunsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		ada := as("ada")
		id := result(t, r.ask(t, ada, startTask))["task"].(map[string]any)["taskId"].(string)
		got := make(chan map[string]any)
		go func() { got <- r.ask(t, ada, taskReq("tasks/result", id)) }()
		synctest.Wait()
		select {
		case resp := <-got:
			t.Fatalf("tasks/result answered before the run ended: %v", resp)
		default:
		}
		time.Sleep(30 * time.Second) // several of the bounded waits pass in the bubble
		r.release <- "forty-two"
		res := result(t, <-got)
		content := res["content"].([]any)[0].(map[string]any)
		if content["text"] != "forty-two" {
			t.Errorf("result content = %v", content)
		}
		meta, _ := res["_meta"].(map[string]any)
		if rel, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any); rel["taskId"] != id {
			t.Errorf("result _meta = %v, want the related task %s", meta, id)
		}
		if st := result(t, r.ask(t, ada, taskReq("tasks/get", id)))["status"]; st != string(mcp.TaskStatusCompleted) {
			t.Errorf("status after the end = %v", st)
		}
	})
}

func TestTaskResultEndsWithTheRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		id := result(t, r.ask(t, as("ada"), startTask))["task"].(map[string]any)["taskId"].(string)
		ctx, cancel := context.WithTimeout(as("ada"), 12*time.Second)
		defer cancel()
		code, _ := errorOf(t, r.ask(t, ctx, taskReq("tasks/result", id)))
		if code != mcp.REQUEST_INTERRUPTED {
			t.Errorf("a tasks/result whose request ended: code %v", code)
		}
		r.release <- "late"
		r.Runs.Runs.Drain(context.Background())
	})
}

func TestTasksListIsTheCallersNewestFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		var ids []string
		for range 3 {
			ids = append(ids, result(t, r.ask(t, as("ada"), startTask))["task"].(map[string]any)["taskId"].(string))
			time.Sleep(time.Second)
		}
		result(t, r.ask(t, as("bob"), startTask))
		list := result(t, r.ask(t, as("ada"), `{"jsonrpc":"2.0","id":3,"method":"tasks/list"}`))["tasks"].([]any)
		var got []string
		for _, task := range list {
			got = append(got, task.(map[string]any)["taskId"].(string))
		}
		if want := []string{ids[2], ids[1], ids[0]}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ada's tasks/list = %v, want %v", got, want)
		}
		r.Runs.Runs.Drain(context.Background())
	})
}

func TestTaskRequestsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		id := result(t, r.ask(t, as("ada"), startTask))["task"].(map[string]any)["taskId"].(string)
		r.refused["ada"] = "the token lacks the read scope"
		if code, msg := errorOf(t, r.ask(t, as("ada"), taskReq("tasks/get", id))); code != mcp.INVALID_REQUEST || msg != r.refused["ada"] {
			t.Errorf("a caller without the read scope: %v %q", code, msg)
		}
		other := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"invoke","arguments":{},"task":{}}}`
		if code, msg := errorOf(t, r.ask(t, as("ada"), other)); code != mcp.METHOD_NOT_FOUND || !strings.Contains(msg, "'invoke' does not support task augmentation") {
			t.Errorf("a task of another tool: %v %q", code, msg)
		}
		// refused before a run started: the answer is the tool's refusal
		noCode := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_script","arguments":{},"task":{}}}`
		if res := result(t, r.ask(t, as("bob"), noCode)); res["isError"] != true {
			t.Errorf("a refused start answers %v, want the tool error", res)
		}
		if code, _ := errorOf(t, r.ask(t, as("bob"), `{"jsonrpc":"2.0","id":4,"method":"tasks/frobnicate","params":{"taskId":"x"}}`)); code != mcp.INVALID_PARAMS && code != mcp.METHOD_NOT_FOUND {
			t.Errorf("an unknown tasks method: code %v", code)
		}
		r.Runs.Runs.Drain(context.Background())
	})
}

func TestIsTask(t *testing.T) {
	r := &Runs{Tool: "run_script"}
	for msg, want := range map[string]bool{
		startTask: true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_script","arguments":{}}}`:                         false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_script","arguments":{},"task":null}}`:             false,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"run-x"}}`:                                            true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`:                                                                       false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_script","arguments":{},"_meta":` + extMeta + `}}`: true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{},"_meta":` + extMeta + `}}`:     false,
	} {
		m, err := rpcmsg.Read([]byte(msg))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.IsTask(m); got != want {
			t.Errorf("IsTask(%s) = %v, want %v", msg, got, want)
		}
	}
}

const extMeta = `{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

func TestExtensionTaskInlinesTheResultOnceEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		ada := as("ada")
		start := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_script","arguments":{"code":"x"},"_meta":` + extMeta + `}}`
		handle := result(t, r.ask(t, ada, start))
		id, _ := handle["taskId"].(string)
		if handle["resultType"] != "task" || handle["status"] != "working" || id == "" {
			t.Fatalf("handle = %v", handle)
		}
		ext := func(method string) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q,"params":{"taskId":%q,"_meta":%s}}`, method, id, extMeta)
		}
		if got := result(t, r.ask(t, ada, ext("tasks/get"))); got["resultType"] != "complete" || got["status"] != "working" || got["result"] != nil {
			t.Errorf("tasks/get while running = %v", got)
		}
		if got := result(t, r.ask(t, ada, ext("tasks/update"))); got["resultType"] != "complete" {
			t.Errorf("tasks/update = %v", got)
		}
		if code, _ := errorOf(t, r.ask(t, as("bob"), ext("tasks/get"))); code != mcp.INVALID_PARAMS {
			t.Errorf("bob's tasks/get of ada's extension task: code %v", code)
		}
		if code, _ := errorOf(t, r.ask(t, ada, ext("tasks/result"))); code != mcp.METHOD_NOT_FOUND {
			t.Errorf("tasks/result under the extension: code %v, want method not found", code)
		}
		r.release <- "done!"
		synctest.Wait()
		got := result(t, r.ask(t, ada, ext("tasks/get")))
		inner, _ := got["result"].(map[string]any)
		if got["status"] != "completed" || inner["resultType"] != "complete" {
			t.Fatalf("tasks/get after the end = %v", got)
		}
		if text := inner["content"].([]any)[0].(map[string]any)["text"]; text != "done!" {
			t.Errorf("inlined result text = %v", text)
		}
		if got := result(t, r.ask(t, ada, ext("tasks/cancel"))); got["resultType"] != "complete" {
			t.Errorf("cancelling an ended extension task = %v", got)
		}
	})
}
