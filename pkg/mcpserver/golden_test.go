package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// The golden transcripts are what the model reads, kept as text under
// testdata/golden: the tools/list answer (names, descriptions, annotations,
// input and output schemas), the instructions, and one tool result per
// error code. A change to any of them fails here with a diff; when the
// change is meant, rewrite them with
//
//	go test ./pkg/mcpserver/ -update
//
// (this package defines the flag: `go test ./... -update` fails in the
// packages that do not) and review the diff of the files.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const goldenDir = "testdata/golden"

// golden compares got with the golden file name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/mcpserver/ -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the model now reads (-golden +now); if meant, go test ./pkg/mcpserver/ -update:\n%s",
			path, cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")))
	}
}

func indentJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// goldenClient serves testdata/petstore-v3.yaml with every tool registered
// (set_rate_limit included) and returns the connected client and the
// initialize result.
func goldenClient(t *testing.T) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	up := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(up.Close)
	cat, ix, eps := servedCatalog(t, time.Hour, petstoreAt(t, up.URL))
	l, err := ratelimit.New(ratelimit.Options{Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	srv := New(Options{Version: "golden", SpecNames: []string{"petstore"}, AllowRuntimeTuning: true, Caller: invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}}})
	srv.Publish(cat, ix, nil)
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "golden", Version: "1"}
	res, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	return c, res
}

func TestGoldenToolsListAndInstructions(t *testing.T) {
	c, init := goldenClient(t)
	golden(t, "instructions.txt", []byte(init.Instructions+"\n"))
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if n := len(tool.Description); n > 2048 {
			t.Errorf("%s: description of %d bytes, want at most 2 KB", tool.Name, n)
		}
	}
	if n := len(init.Instructions); n > 2048 {
		t.Errorf("instructions of %d bytes, want at most 2 KB", n)
	}
	want := []string{"begin_task", "end_task", "inspect", "invoke", "rate_limit_status", "read_response", "run_script", "script_result", "search", "set_rate_limit"}
	if slices.Sort(names); !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	// the tools only: the result's protocol framing (_meta, paging) is mcp-go's
	golden(t, "tools_list.json", indentJSON(t, map[string]any{"tools": res.Tools}))
}

// TestGoldenErrorResults keeps one tool result per error code, as the model
// reads it (content text and structuredContent). validation_failed and
// not_found go through the MCP client; the others are mapError's answer to
// the typed error a package returns, at a fixed now, since their waits come
// from real clocks.
func TestGoldenErrorResults(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mapped := []struct {
		code string
		err  error
	}{
		{codes.RateLimit, &ratelimit.LimitError{Scope: ratelimit.ScopeProxy, Kind: ratelimit.KindRequests, Key: "api.example.com:443",
			Limit: 30, Window: time.Minute, RetryAfter: 12345678 * time.Microsecond}},
		{codes.UpstreamRateLimit, &ratelimit.LimitError{Scope: ratelimit.ScopeUpstream, Kind: ratelimit.KindLearned, Key: "api.example.com:443",
			Source: "retry-after", RetryAfter: 30 * time.Second}},
		{codes.QueueFull, &ratelimit.QueueError{Reason: ratelimit.QueueFull, Upstream: "api.example.com:443", Depth: 16,
			Timeout: 30 * time.Second, RetryAfter: 1500 * time.Millisecond}},
		{codes.QueueTimeout, &ratelimit.QueueError{Reason: ratelimit.QueueTimeout, Upstream: "api.example.com:443", Depth: 16,
			Timeout: 30 * time.Second, Waited: 30 * time.Second, RetryAfter: 4200 * time.Microsecond}},
		{codes.Timeout, &invoke.TimeoutError{Timeout: 30 * time.Second}},
		{codes.Cancelled, context.Canceled},
		{codes.HTTPError, &invoke.HTTPError{StatusCode: 404, Body: `{"message":"Pet not found"}`}},
		{codes.Unreachable, &invoke.UnreachableError{Host: "api.example.com:443", Reason: "connection refused"}},
		{codes.AuthError, &invoke.AuthError{Spec: "petstore", Scheme: "api_key", Key: "specs[petstore].auth.api_key.value",
			EnvVars: []string{"PETSTORE_KEY"}}},
		{codes.Internal, errors.New("open /var/lib/specgate/answers.db: permission denied")},
	}
	c, _ := goldenClient(t)
	called := []struct {
		code string
		tool string
		args map[string]any
	}{
		{codes.ValidationFailed, "invoke", map[string]any{"endpointId": "petstore.getOrderById", "parameters": map[string]any{"orderID": 1, "color": "red"}}},
		{codes.NotFound, "inspect", map[string]any{"endpointId": "petstore.getPetByID"}},
	}
	seen := map[string]bool{}
	for _, m := range mapped {
		t.Run(m.code, func(t *testing.T) {
			res := errorResult(mapError(slog.New(slog.DiscardHandler), m.err, now))
			if got := errorCode(t, res); got != m.code {
				t.Fatalf("mapError(%T) gave %s, want %s", m.err, got, m.code)
			}
			// the request id is new on every call
			golden(t, "error_"+m.code+".json", requestIDs.ReplaceAll(indentJSON(t, resultView(res)), []byte("req-000000000000")))
		})
		seen[m.code] = true
	}
	for _, cc := range called {
		t.Run(cc.code, func(t *testing.T) {
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = cc.tool, cc.args
			res, err := c.CallTool(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got := errorCode(t, res); got != cc.code {
				t.Fatalf("%s gave %s, want %s", cc.tool, got, cc.code)
			}
			golden(t, "error_"+cc.code+".json", indentJSON(t, resultView(res)))
		})
		seen[cc.code] = true
	}
	for _, code := range []string{codes.RateLimit, codes.UpstreamRateLimit, codes.QueueFull, codes.QueueTimeout, codes.Timeout, codes.Cancelled,
		codes.ValidationFailed, codes.NotFound, codes.HTTPError, codes.Unreachable, codes.AuthError, codes.Internal} {
		if !seen[code] {
			t.Errorf("no golden result for %s", code)
		}
	}
}

// runIDs are random; the transcripts hold one fixed id.
var (
	runIDs     = regexp.MustCompile(`run-[0-9a-f]{12,32}`)
	requestIDs = regexp.MustCompile(`req-[0-9a-f]{12}`)
)

// TestGoldenRunScript keeps run_script's answer and each of its failures
// as the model reads them.
func TestGoldenRunScript(t *testing.T) {
	c, _ := goldenClient(t)
	tests := []struct {
		name, code string
		timeout    int
		isError    bool
	}{
		{"ok", `const r = await api.search("find pets by status", {limit: 2});
console.log("found", r.endpoints.length);
return r.endpoints.map(e => e.id);`, 0, false},
		{"syntax_error", "const a = 1;\nconst = 2;", 0, true},
		{"uncaught", `const r = await api.invoke("petstore.getPetById", {parameters: {petId: 1}});
return r.body;`, 0, true},
		{"timeout", `console.log("looping"); while (true) {}`, 1, true},
		{"memory", `return "x".repeat(2**30).length;`, 0, true},
		{"memory_bound", `const a = [];
for (;;) a.push({x: "yyyyyyyyyyyyyyyy" + a.length});`, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := mcp.CallToolRequest{}
			req.Params.Name = "run_script"
			req.Params.Arguments = map[string]any{"code": tt.code}
			if tt.timeout > 0 {
				req.Params.Arguments = map[string]any{"code": tt.code, "timeoutSeconds": tt.timeout}
			}
			res, err := c.CallTool(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tt.isError {
				t.Fatalf("isError %v: %+v", res.IsError, res.Content)
			}
			text := runIDs.ReplaceAll(indentJSON(t, resultView(res)), []byte("run-000000000000"))
			golden(t, "run_script_"+tt.name+".json", text)
		})
	}
}

// resultView is what the model reads of a tool result: its content, the
// error flag and the structured content, without mcp-go's framing.
func resultView(res *mcp.CallToolResult) any {
	return struct {
		Content           []mcp.Content `json:"content"`
		StructuredContent any           `json:"structuredContent"`
		IsError           bool          `json:"isError"`
	}{res.Content, res.StructuredContent, res.IsError}
}

// errorCode is the code of an error result, checking it is one.
func errorCode(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("not an error result: %+v", res)
	}
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &env); err != nil {
		t.Fatal(err)
	}
	return env.Error.Code
}

// TestGoldenFilesAreAllUsed: a golden file no test writes is a transcript
// nobody checks.
func TestGoldenFilesAreAllUsed(t *testing.T) {
	if *update {
		t.Skip("rewriting")
	}
	files, err := filepath.Glob(filepath.Join(goldenDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"error_auth_error.json", "error_cancelled.json", "error_http_error.json", "error_internal.json", "error_not_found.json",
		"error_queue_full.json", "error_queue_timeout.json", "error_rate_limit.json", "error_timeout.json",
		"error_upstream_rate_limit.json", "error_upstream_unreachable.json", "error_validation_failed.json",
		"instructions.txt", "long_cancelled.json", "long_done.json", "long_lost.json", "long_running.json", "run_script_memory.json", "run_script_memory_bound.json", "run_script_ok.json", "run_script_syntax_error.json",
		"run_script_timeout.json", "run_script_uncaught.json", "tools_list.json"}
	var got []string
	for _, f := range files {
		got = append(got, filepath.Base(f))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("golden files (-want +got):\n%s", diff)
	}
}
