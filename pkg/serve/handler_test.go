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
