package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/rpcmsg"
	"github.com/specgate/specgate/pkg/telemetry"
)

// stubBackend is a Backend with one tool, echo, that needs the scope its
// arguments name ({"write": true}: invoke); it notes every message the
// transport hands it.
type stubBackend struct {
	mcp     *server.MCPServer
	metrics *telemetry.Metrics
	order   NotifyOrder

	mu   sync.Mutex
	seen []*rpcmsg.Message
	body []byte // the bytes the last message was read from
}

func newStub() *stubBackend {
	b := &stubBackend{mcp: server.NewMCPServer("stub", "1"), metrics: telemetry.NewMetrics()}
	b.mcp.AddTool(mcp.NewTool("echo"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, _ := ctx.Value(preparedKey{}).(string)
		return mcp.NewToolResultText("prepared:" + p), nil
	})
	return b
}

type preparedKey struct{}

func (b *stubBackend) MCP() *server.MCPServer      { return b.mcp }
func (b *stubBackend) Metrics() *telemetry.Metrics { return b.metrics }
func (b *stubBackend) Logger() *slog.Logger        { return slog.New(slog.DiscardHandler) }
func (b *stubBackend) Now() time.Time              { return time.Unix(1_700_000_000, 0) }
func (b *stubBackend) Readiness() Readiness        { return Readiness{Loaded: true, Specs: []string{"stub"}} }
func (b *stubBackend) StdioOrder() *NotifyOrder    { return &b.order }
func (b *stubBackend) IsTask(m *rpcmsg.Message) bool {
	b.note(m)
	return false
}
func (b *stubBackend) AnswerTask(context.Context, *rpcmsg.Message, []byte) map[string]any { return nil }

func (b *stubBackend) PrepareCall(ctx context.Context, m *rpcmsg.Message) (context.Context, inauth.Scope, bool) {
	b.note(m)
	if m.Name != "echo" {
		return ctx, inauth.ScopeNone, false
	}
	var a struct{ Write bool }
	if json.Unmarshal(m.Arguments, &a) != nil {
		return ctx, inauth.ScopeNone, false
	}
	need := inauth.ScopeRead
	if a.Write {
		need = inauth.ScopeInvoke
	}
	return context.WithValue(ctx, preparedKey{}, string(m.Arguments)), need, true
}

func (b *stubBackend) note(m *rpcmsg.Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.seen) == 0 || b.seen[len(b.seen)-1] != m {
		b.seen = append(b.seen, m)
	}
}

var _ Backend = (*stubBackend)(nil)

func stubPost(t *testing.T, h http.Handler, token, body string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	data, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(data)
}

// TestHandlerReadsAToolCallOnce: the transport reads a tools/call once and
// every part of it that acts on the message (the scope check through
// PrepareCall, cancellation, tasks) gets that one reading, whose arguments
// are the body's own bytes; the tool runs with what PrepareCall made of
// them. A missing scope is a 403 before the tool runs, a key two readers
// could read differently a 400, a cancellation a 202.
func TestHandlerReadsAToolCallOnce(t *testing.T) {
	b := newStub()
	h := NewHandler(b, Options{
		Tokens: map[string]inauth.Principal{"ro": {Subject: "ada", Scopes: []string{"r"}}},
		Scopes: inauth.Scopes{Read: "r", Invoke: "w"},
	})
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"write":false}}}`
	code, body := stubPost(t, h, "ro", call)
	if code != http.StatusOK || !strings.Contains(body, `prepared:{\"write\":false}`) {
		t.Fatalf("read call: %d %s", code, body)
	}
	b.mu.Lock()
	seen := b.seen
	b.mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("the message was read %d times, want once", len(seen))
	}
	if !bytes.Equal(seen[0].Arguments, []byte(`{"write":false}`)) {
		t.Errorf("arguments %s", seen[0].Arguments)
	}

	if code, body := stubPost(t, h, "ro", strings.Replace(call, "false", "true", 1)); code != http.StatusForbidden || !strings.Contains(body, "INSUFFICIENT_SCOPE") {
		t.Errorf("write call with a read token: %d %s", code, body)
	}
	if code, body := stubPost(t, h, "ro", strings.Replace(call, `"name"`, `"name":"x","Name"`, 1)); code != http.StatusBadRequest || !strings.Contains(body, `"id":1`) {
		t.Errorf("case twins: %d %s", code, body)
	}
	if code, _ := stubPost(t, h, "ro", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`); code != http.StatusAccepted {
		t.Errorf("cancel: %d", code)
	}
}

// stubServer serves a stubBackend over loopback HTTP.
type stubServer struct{ ts *httptest.Server }

func newStubServer(t testing.TB, opts Options) *stubServer {
	t.Helper()
	ts := httptest.NewServer(NewHandler(newStub(), opts))
	t.Cleanup(ts.Close)
	return &stubServer{ts: ts}
}

// post sends one MCP POST, with a bearer token unless token is empty; hdr
// are more headers, name then value.
func (f *stubServer) post(t testing.TB, token, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.ts.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

func expectStatus(t testing.TB, resp *http.Response, body []byte, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, want, body)
	}
}

func TestHTTPOriginAndBodyLimit(t *testing.T) {
	f := newStubServer(t, Options{AllowedOrigins: []string{"https://app.example.com"}, MaxBodyBytes: 1024})
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	tests := []struct {
		origin string
		want   int
	}{
		{"", http.StatusOK},
		{"https://app.example.com", http.StatusOK},
		{"http://localhost:3000", http.StatusOK},
		{"http://127.0.0.1:9", http.StatusOK},
		{"https://evil.example", http.StatusForbidden},
		{"null", http.StatusForbidden},
	}
	for _, tt := range tests {
		var hdr []string
		if tt.origin != "" {
			hdr = []string{"Origin", tt.origin}
		}
		resp, body := f.post(t, "", list, hdr...)
		if resp.StatusCode != tt.want {
			t.Errorf("Origin %q: %d, want %d (%s)", tt.origin, resp.StatusCode, tt.want, body)
		}
	}
	// A loopback origin on a non-loopback Host is a rebinding attempt.
	req, _ := http.NewRequest(http.MethodPost, f.ts.URL+"/mcp", strings.NewReader(list))
	req.Host = "attacker.example"
	req.Header.Set("Origin", "http://localhost")
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("rebinding: %d", resp.StatusCode)
	}

	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"q":"` + strings.Repeat("x", 2000) + `"}}}`
	resp, body := f.post(t, "", big)
	expectStatus(t, resp, body, http.StatusRequestEntityTooLarge)
	// Without Content-Length (chunked), the limit holds while reading.
	req, _ = http.NewRequest(http.MethodPost, f.ts.URL+"/mcp", io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Content-Type", "application/json")
	resp, err = f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body: %d", resp.StatusCode)
	}
}
