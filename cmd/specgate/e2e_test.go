package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// binary is the specgate binary built once for the end-to-end tests.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func specgateBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "specgate-e2e")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "specgate")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building specgate: %v", buildErr)
	}
	return binPath
}

type upstreamLog struct {
	mu   sync.Mutex
	reqs []string
}

func (u *upstreamLog) add(s string) {
	u.mu.Lock()
	u.reqs = append(u.reqs, s)
	u.mu.Unlock()
}

func (u *upstreamLog) list() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.reqs...)
}

func petUpstream(t *testing.T) (*httptest.Server, *upstreamLog) {
	log := &upstreamLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r.Method + " " + r.URL.RequestURI())
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":7,"name":"doggie"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, log
}

// TestStdioEndToEnd drives the built binary over stdio with mcp-go's client.
func TestStdioEndToEnd(t *testing.T) {
	bin := specgateBinary(t)
	up, log := petUpstream(t)
	c, ir := stdioClient(t, bin, []string{"XDG_CACHE_HOME=" + t.TempDir()},
		"serve", "--spec", "../../testdata/petstore-v3.yaml", "--base-url", up.URL+"/api/v3", "--rate-limit-interval", "1h")
	if !strings.Contains(ir.Instructions, "petstore-v3") {
		t.Errorf("instructions do not list the spec: %q", ir.Instructions)
	}
	call := func(name string, args map[string]any) (map[string]any, bool) {
		t.Helper()
		return callJSON(t, c, name, args)
	}

	res, isErr := call("search", map[string]any{"query": "get a pet by id"})
	if isErr || !strings.Contains(string(mustJSON(res)), "petstore-v3.getPetById") {
		t.Fatalf("search = %v", res)
	}
	res, isErr = call("inspect", map[string]any{"endpointId": "petstore-v3.getPetById"})
	if isErr || res["method"] != "GET" {
		t.Fatalf("inspect = %v", res)
	}
	res, isErr = call("invoke", map[string]any{"endpointId": "petstore-v3.getPetById", "parameters": map[string]any{"petId": 7}})
	if isErr || res["statusCode"] != float64(200) {
		t.Fatalf("invoke = %v", res)
	}
	res, isErr = call("invoke", map[string]any{"endpointId": "petstore-v3.getPetById", "parameters": map[string]any{"petId": 8}})
	if !isErr || res["error"].(map[string]any)["code"] != "rate_limit" {
		t.Fatalf("second invoke = %v", res)
	}
	res, isErr = call("invoke", map[string]any{"endpointId": "petstore-v3.nope"})
	if !isErr || res["error"].(map[string]any)["code"] != "not_found" {
		t.Fatalf("bad id = %v", res)
	}
	if got := log.list(); len(got) != 1 || got[0] != "GET /api/v3/pet/7" {
		t.Errorf("upstream saw %v", got)
	}
}

// stdioClient starts bin with args (and env added to the environment) and
// connects mcp-go's client to it over stdio; the server stops with the test.
func stdioClient(t *testing.T, bin string, env []string, args ...string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	c := client.NewClient(transport.NewStdioWithOptions(bin, env, args))
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	ir, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	return c, ir
}

// callJSON calls a tool and decodes its JSON answer; isError says whether
// it is a tool error.
func callJSON(t *testing.T, c *client.Client, name string, args map[string]any) (out map[string]any, isError bool) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &out); err != nil {
		t.Fatal(err)
	}
	return out, res.IsError
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestTypeScriptSDKClient runs test/ts with the official TypeScript MCP SDK
// client against the built binary. It skips when node or the SDK is not
// installed, unless SPECGATE_REQUIRE_NODE is set (CI sets it).
func TestTypeScriptSDKClient(t *testing.T) {
	require := os.Getenv("SPECGATE_REQUIRE_NODE") != ""
	node, err := exec.LookPath("node")
	sdk := filepath.Join("..", "..", "test", "ts", "node_modules", "@modelcontextprotocol", "sdk")
	if _, serr := os.Stat(sdk); err != nil || serr != nil {
		if require {
			t.Fatalf("node or the TypeScript SDK is missing (run npm ci in test/ts): %v %v", err, serr)
		}
		t.Skip("node or test/ts/node_modules not present; run `cd test/ts && npm ci`")
	}
	bin := specgateBinary(t)
	cmd := exec.CommandContext(t.Context(), node, "--test", "e2e.test.mjs", "longwork.test.mjs")
	cmd.Dir = filepath.Join("..", "..", "test", "ts")
	cmd.Env = append(os.Environ(), "SPECGATE_BIN="+bin, "XDG_CACHE_HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("node --test failed: %v\n%s", err, out.String())
	}
	// node --test closes with "# tests N" and "# pass N": every test of the
	// file must have run and passed, however many it holds.
	tests := regexp.MustCompile(`(?m)^# tests (\d+)$`).FindStringSubmatch(out.String())
	pass := regexp.MustCompile(`(?m)^# pass (\d+)$`).FindStringSubmatch(out.String())
	if tests == nil || pass == nil || tests[1] != pass[1] || tests[1] == "0" || !strings.Contains(out.String(), "# fail 0") {
		t.Fatalf("the TypeScript tests did not all pass:\n%s", out.String())
	}
	t.Logf("node --test: %s of %s TypeScript tests passed", pass[1], tests[1])
}

// TestCLI runs the shell commands people use.
func TestCLI(t *testing.T) {
	up, log := petUpstream(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	spec := "../../testdata/petstore-v3.yaml"
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string
		stderr   string
		upstream int
	}{
		{"search", []string{"search", "--spec", spec, "--log-level", "error", "find pets by status"}, 0, "petstore-v3.findPetsByStatus", "", 0},
		{"inspect", []string{"inspect", "--spec", spec, "--log-level", "error", "petstore-v3.getPetById"}, 0, `"path": "/pet/{petId}"`, "", 0},
		{"inspect unknown", []string{"inspect", "--spec", spec, "--log-level", "error", "petstore-v3.nope"}, 5, "", "error not_found", 0},
		{"invoke", []string{"invoke", "--spec", spec, "--base-url", up.URL + "/api/v3", "--log-level", "error", "petstore-v3.getPetById", "--params", `{"petId": 7}`}, 0, `"statusCode": 200`, "", 1},
		{"invoke bad args", []string{"invoke", "--spec", spec, "--base-url", up.URL + "/api/v3", "--log-level", "error", "petstore-v3.getPetById", "--params", `{"petId": "x"}`}, 5, "", "validation_failed", 1},
		{"check", []string{"check", "--spec", spec, "--spec", "../../testdata/missing.yaml"}, 1, "FAIL missing", "", 1},
		{"check ok", []string{"check", "--spec", spec}, 0, "ok   petstore-v3: 19 endpoints", "", 1},
		{"no spec", []string{"serve"}, 1, "", "no spec to serve", 1},
		{"unknown command", []string{"frobnicate"}, 2, "", "unknown command", 1},
		{"bad flag", []string{"search", "--nope", "x"}, 2, "", "unknown flag --nope\n", 1},
		// One-shot commands print the answer, not INFO lines, unless told.
		{"quiet", []string{"search", "--spec", spec, "--limit", "1", "pet by id"}, 0, "", "", 1},
		{"not found suggests", []string{"invoke", "--spec", spec, "getPetById"}, 5, "", "Did you mean:\n  petstore-v3.getPetById", 1},
		{"name", []string{"inspect", "--spec", spec, "--name", "pets", "pets.getPetById"}, 0, `"id": "pets.getPetById"`, "", 1},
		{"name needs one spec", []string{"search", "--spec", spec, "--spec", spec, "--name", "pets", "x"}, 1, "", "--name names the one --spec given, and there are 2", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, stdout.String())
			}
			if tt.name == "quiet" && stderr.Len() > 0 {
				t.Errorf("search printed on stderr:\n%s", stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr.String())
			}
			if n := len(log.list()); n != tt.upstream {
				t.Errorf("upstream saw %d requests, want %d", n, tt.upstream)
			}
		})
	}
}

func TestHTTPFlagForms(t *testing.T) {
	tests := []struct {
		args []string
		on   bool
		addr string
	}{
		{[]string{"--http", "127.0.0.1:9"}, true, "127.0.0.1:9"},
		{[]string{"--http=127.0.0.1:9"}, true, "127.0.0.1:9"},
		{[]string{"--http"}, true, ""},
		{[]string{"--http", "--http=false"}, false, ""},
		{nil, false, ""},
	}
	for _, tt := range tests {
		c := newCommon("serve", io.Discard)
		var h httpFlag
		c.fs.Var(&h, "http", "")
		rest, err := c.parse(tt.args)
		if err != nil {
			t.Fatal(err)
		}
		if rest = h.takeAddr(rest); len(rest) != 0 {
			t.Errorf("%v: arguments left: %v", tt.args, rest)
		}
		if h.on != tt.on || h.addr != tt.addr {
			t.Errorf("%v: on=%v addr=%q, want %v %q", tt.args, h.on, h.addr, tt.on, tt.addr)
		}
	}
}

// A required spec that fails to load stops `serve` with its reason; an
// optional one does not.
func TestServeStopsOnRequiredSpecFailure(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	pet, err := filepath.Abs("../../testdata/petstore-v3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "specgate.yaml")
	os.WriteFile(cfg, []byte("specs:\n  - name: bad\n    location: /nonexistent.yaml\n    required: true\n  - name: pet\n    location: "+pet+"\n"), 0o600)
	// stdin stays open (a pipe nobody writes), as an MCP client's would.
	r, w := io.Pipe()
	defer w.Close()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"serve", "--config", cfg}, r, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "required spec bad") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout carries more than protocol: %q", stdout.String())
	}
}

// TestServeWithNoSpecAnswersEveryCall: when no spec loads (none required),
// serve stayed up for one answer and then closed the connection; it serves
// on, and every call reads the load error.
func TestServeWithNoSpecAnswersEveryCall(t *testing.T) {
	bin := specgateBinary(t)
	bad := filepath.Join(t.TempDir(), "broken.json")
	os.WriteFile(bad, []byte(`{"swagger":"2.0","info":{`), 0o600)
	c, _ := stdioClient(t, bin, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "serve", "--spec", bad)
	for i, tool := range []string{"search", "inspect", "search", "invoke"} {
		args := map[string]any{"query": "pets", "endpointId": "broken.x"}
		if tool == "search" {
			delete(args, "endpointId")
		} else {
			delete(args, "query")
		}
		out, isErr := callJSON(t, c, tool, args)
		msg, _ := out["error"].(map[string]any)["message"].(string)
		if !isErr || !strings.Contains(msg, "no spec could be loaded") || !strings.Contains(msg, "broken.json") || strings.Count(msg, "no spec could be loaded") != 1 {
			t.Fatalf("call %d (%s): %v, want the load error once", i, tool, out)
		}
	}
	if _, err := c.ListTools(t.Context(), mcp.ListToolsRequest{}); err != nil {
		t.Fatalf("the connection is gone: %v", err)
	}
}
