package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/serve"
)

// TestHugeNumberIsToolErrorNotJSONRPC: 1e400 anywhere in the arguments was
// a -32600 JSON-RPC error; it is a validation_failed tool result now.
func TestHugeNumberIsToolErrorNotJSONRPC(t *testing.T) {
	f := newHTTPFixture(t, serve.Options{}, 0)
	resp, body := f.post(t, "", rpc(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}))
	expectStatus(t, resp, body, http.StatusOK)
	sid := resp.Header.Get("Mcp-Session-Id")
	raw := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"pets","limit":1e400}}}`
	resp, body = f.post(t, "", raw, "Mcp-Session-Id", sid)
	expectStatus(t, resp, body, http.StatusOK)
	m := rpcResult(t, body)
	if m["error"] != nil {
		t.Fatalf("JSON-RPC error %v, want a tool result", m["error"])
	}
	res := m["result"].(map[string]any)
	if res["isError"] != true || !strings.Contains(string(mustJSON(res)), "validation_failed") {
		t.Fatalf("result = %s, want a validation_failed tool error", mustJSON(res))
	}
}

func TestDecodeArgumentsKeepsLargeIntegersExact(t *testing.T) {
	var req mcp.CallToolRequest
	if err := json.Unmarshal([]byte(`{"method":"tools/call","params":{"name":"invoke","arguments":{"endpointId":"petstore.getPetById","parameters":{"petId":9007199254740993}}}}`), &req); err != nil {
		t.Fatal(err)
	}
	var args InvokeArgs
	if bad := decodeArgs("invoke", rawArguments(req), &args); bad != nil {
		t.Fatal(mustJSON(bad))
	}
	petID := args.Parameters["petId"]
	if n, ok := petID.(json.Number); !ok || n.String() != "9007199254740993" {
		t.Fatalf("petId = %#v, want json.Number 9007199254740993", petID)
	}
	if bad := decodeArgs("invoke", json.RawMessage(`[1,2]`), &args); bad == nil {
		t.Error("an array of arguments was accepted")
	}
}

// TestStdioHugeNumberAndLargeInteger drives the stdio transport with raw
// lines: 1e400 is a tool error, and a large integer is sent exactly.
func TestStdioHugeNumberAndLargeInteger(t *testing.T) {
	f := newFixture(t, 0)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"pets","limit":1e400}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"invoke","arguments":{"endpointId":"petstore.getPetById","parameters":{"petId":9007199254740993}}}}`,
	}, "\n") + "\n"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serve.Stdio(ctx, f.srv, inR, outW) }()
	go func() { _, _ = io.WriteString(inW, in) }()
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var lines []string
	for len(lines) < 3 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	cancel()
	inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	<-done
	if len(lines) < 3 {
		t.Fatalf("got %d answers", len(lines))
	}
	for _, line := range lines {
		if !utf8.ValidString(line) {
			t.Error("stdout is not valid UTF-8")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad line %q", line)
		}
		if m["error"] != nil {
			t.Errorf("JSON-RPC error for id %v: %v", m["id"], m["error"])
		}
		if m["id"] == float64(2) && !strings.Contains(line, "validation_failed") {
			t.Errorf("1e400: %s, want validation_failed", line)
		}
	}
	if n := f.upstream.count(); n != 1 {
		t.Fatalf("upstream got %d requests, want 1", n)
	}
	if p := f.upstream.requests[0].Path; p != "/api/v3/pet/9007199254740993" {
		t.Errorf("upstream path %q, want the exact integer", p)
	}
}

// TestDecodeArgsRefusesKeysTwoReadersDisagreeOn: over any transport, the one
// decode of a call refuses a duplicate key, case-variant twins, and a key
// that is not the exact name of an argument.
func TestDecodeArgsRefusesKeysTwoReadersDisagreeOn(t *testing.T) {
	for _, raw := range []string{
		`{"endpointId":"a.b","endpointId":"c.d"}`,
		`{"endpointId":"a.b","EndpointID":"c.d"}`,
		`{"EndpointId":"a.b"}`,
		`{"endpointId":"a.b","parameters":{"x":1,"x":2}}`,
	} {
		var a InvokeArgs
		bad := decodeArgs("invoke", json.RawMessage(raw), &a)
		if bad == nil || !bad.IsError || !strings.Contains(string(mustJSON(bad)), "validation_failed") {
			t.Errorf("%s: decoded as %+v, want validation_failed", raw, a)
		}
	}
}

// TestEveryToolNamesKnownCodes: the codes a table entry lists are codes of
// the closed set the model is told about.
func TestEveryToolNamesKnownCodes(t *testing.T) {
	known := map[string]bool{codes.RateLimit: true, codes.UpstreamRateLimit: true, codes.QueueFull: true, codes.QueueTimeout: true,
		codes.Timeout: true, codes.Cancelled: true, codes.ValidationFailed: true, codes.NotFound: true, codes.HTTPError: true,
		codes.Unreachable: true, codes.AuthError: true, codes.ScriptError: true, codes.Internal: true}
	s := New(Options{AllowRuntimeTuning: true})
	for _, tl := range s.tools() {
		for _, c := range tl.codes {
			code, _, _ := strings.Cut(c, " ")
			if !known[code] {
				t.Errorf("%s names the unknown code %q", tl.name, code)
			}
		}
	}
}
