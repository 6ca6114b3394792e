package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/rpcmsg"
	"github.com/specgate/specgate/pkg/serve"
	"github.com/specgate/specgate/pkg/toolargs"
)

// readCounter is the Server as a transport's Backend, noting each reading
// of a message the transport hands it and each decode of a tool's
// arguments.
type readCounter struct {
	*Server
	mu       sync.Mutex
	messages map[*rpcmsg.Message]bool
	decodes  int // decodes of the arguments into the tool's struct
	walks    int // of them, those that walked the arguments' keys again
}

func (b *readCounter) saw(m *rpcmsg.Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.messages[m] = true
}

func (b *readCounter) PrepareCall(ctx context.Context, m *rpcmsg.Message) (context.Context, inauth.Scope, bool) {
	b.saw(m)
	return b.Server.PrepareCall(ctx, m)
}

func (b *readCounter) IsTask(m *rpcmsg.Message) bool {
	b.saw(m)
	return b.Server.IsTask(m)
}

// countReads has every call of the tools named count its decodes in b.
func countReads(t *testing.T, srv *Server, names ...string) *readCounter {
	b := &readCounter{Server: srv, messages: map[*rpcmsg.Message]bool{}}
	for _, name := range names {
		tl := srv.table[name]
		decode := tl.decode
		tl.decode = func(raw json.RawMessage, read *toolargs.Keys) (any, *mcp.CallToolResult) {
			b.mu.Lock()
			b.decodes++
			if read == nil {
				b.walks++
			}
			b.mu.Unlock()
			return decode(raw, read)
		}
		t.Cleanup(func() { tl.decode = decode })
	}
	return b
}

func (b *readCounter) reads() (messages, decodes, walks int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.messages), b.decodes, b.walks
}

// TestToolCallIsReadOnce: over HTTP, with scopes checked, a tools/call is
// read by specgate in one pass (one rpcmsg.Message serves the key check,
// the scope check, cancellation and tasks), and its arguments are decoded
// into the tool's struct once, from the keys that pass found: the handler
// runs with that decode. Only mcp-go's own decode of the message remains.
// A 1e400 in arguments the tool refuses is read the same way; the refusal
// is decoded again by the handler, from the wrapped text mcp-go hands it.
// On stdio the line is read once and the tool's decode walks the keys of
// its arguments itself.
func TestToolCallIsReadOnce(t *testing.T) {
	f := newHTTPFixture(t, serve.Options{}, 0)
	b := countReads(t, f.srv, "invoke", "search")
	opts := serve.Options{
		Tokens: map[string]Principal{"tok": {Subject: "ada", Scopes: []string{"read"}}},
		Scopes: inauth.Scopes{Read: "read", Invoke: "invoke"},
	}
	post := func(b serve.Backend, body string) map[string]any {
		t.Helper()
		ts := httptest.NewServer(serve.NewHandler(b, opts))
		defer ts.Close()
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		expectStatus(t, resp, data, http.StatusOK)
		return rpcResult(t, data)
	}

	m := post(b, toolsCall(1, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}))
	if res := m["result"].(map[string]any); res["isError"] == true {
		t.Fatalf("invoke: %s", mustJSON(res))
	}
	if msgs, decodes, walks := b.reads(); msgs != 1 || decodes != 1 || walks != 0 {
		t.Errorf("invoke over HTTP: %d readings of the message, %d decodes of the arguments (%d walking keys again), want 1, 1, 0", msgs, decodes, walks)
	}

	b = countReads(t, f.srv, "search")
	m = post(b, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"pets","limit":1e400}}}`)
	if res := m["result"].(map[string]any); res["isError"] != true {
		t.Fatalf("1e400: %s, want a tool error", mustJSON(res))
	}
	if msgs, decodes, walks := b.reads(); msgs != 1 || decodes != 2 || walks != 1 {
		t.Errorf("1e400 over HTTP: %d readings, %d decodes (%d walking keys), want 1, 2, 1", msgs, decodes, walks)
	}

	b = countReads(t, f.srv, "search")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serve.Stdio(ctx, b, inR, outW) }()
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"pets"}}}`+"\n")
	}()
	sc := bufio.NewScanner(outR)
	for n := 0; n < 2 && sc.Scan(); n++ {
	}
	cancel()
	inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	<-done
	if msgs, decodes, walks := b.reads(); msgs != 2 || decodes != 1 || walks != 1 {
		t.Errorf("stdio: %d readings of 2 lines, %d decodes (%d walking keys), want 2, 1, 1", msgs, decodes, walks)
	}
}
