package mcpserver

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// holdTool adds to f a tool "hold" that sends progress notifications
// (its argument n, or one) when asked for them, then waits until its
// call's context ends; the contexts of the calls it holds come back by
// principal on started.
func holdTool(t *testing.T, f *approvalFixture) <-chan heldCall {
	t.Helper()
	started := make(chan heldCall, 4)
	f.srv.mcp.AddTool(mcp.NewTool("hold"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			for i := range max(1, req.GetInt("n", 1)) {
				server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
					map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": i + 1})
			}
		}
		started <- heldCall{principal: principalOf(ctx), ctx: ctx}
		<-ctx.Done()
		return mcp.NewToolResultText("held"), nil
	})
	return started
}

type heldCall struct {
	principal string
	ctx       context.Context
}

// holdAda starts ada's call 7 of hold on ts, asking for progress, and
// returns the call's context as the tool sees it and her POST's stream,
// read past its first event, which must be her progress.
func holdAda(t *testing.T, ts string, started <-chan heldCall) (heldCall, *bufio.Scanner) {
	t.Helper()
	stream := rawMCP(t, ts, http.MethodPost, "tok-ada", "",
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hold","_meta":{"progressToken":"p-ada"}}}`)
	held := <-started
	if held.principal != (Principal{Subject: "ada"}).Key() {
		t.Fatalf("held the call of %q", held.principal)
	}
	lines := bufio.NewScanner(stream.Body)
	first := ""
	for first == "" && lines.Scan() {
		if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
			first = d
		}
	}
	if !strings.Contains(first, `"p-ada"`) {
		t.Errorf("ada's stream began with %q, want her progress", first)
	}
	return held, lines
}

const cancel7 = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`

// TestHTTPCancelReachesOnlyTheCallersOwnCall: without a session (stateless
// HTTP, or a sessionless 2025 request with sessions on) mcp-go filed every
// caller's calls under one empty session ID, so bob's notifications/cancelled
// for ID 7 cancelled ada's running call 7. Now bob's cancel leaves it
// running and ada's own still cancels it.
func TestHTTPCancelReachesOnlyTheCallersOwnCall(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateless", true: "sessions, a sessionless request"}[sessions], func(t *testing.T) {
			f := newApprovalFixture(t)
			started := holdTool(t, f)
			ts := sessionsServer(t, f, sessions, time.Now)
			held, _ := holdAda(t, ts.URL, started)
			res := rawMCP(t, ts.URL, http.MethodPost, "tok-bob", "", cancel7)
			res.Body.Close()
			if res.StatusCode != http.StatusAccepted || held.ctx.Err() != nil {
				t.Errorf("bob's cancel of 7: %d, ada's call ended: %v; want 202 and her call running", res.StatusCode, held.ctx.Err())
			}
			res = rawMCP(t, ts.URL, http.MethodPost, "tok-ada", "", cancel7)
			res.Body.Close()
			if res.StatusCode != http.StatusAccepted || held.ctx.Err() == nil {
				t.Errorf("ada's cancel of 7: %d, her call ended: %v; want 202 and it cancelled", res.StatusCode, held.ctx.Err())
			}
		})
	}
}

// TestHTTPCancelledCallGetsNoResponse: a call its caller cancelled still
// got its response on the POST's stream, where MCP says the receiver of a
// cancellation should not answer it. Now the stream ends without one.
func TestHTTPCancelledCallGetsNoResponse(t *testing.T) {
	f := newApprovalFixture(t)
	started := holdTool(t, f)
	ts := sessionsServer(t, f, false, time.Now)
	held, lines := holdAda(t, ts.URL, started)
	rawMCP(t, ts.URL, http.MethodPost, "tok-ada", "", cancel7).Body.Close()
	if held.ctx.Err() == nil {
		t.Fatal("ada's cancel did not end her call")
	}
	var after []string
	for lines.Scan() {
		if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
			after = append(after, d)
		}
	}
	if len(after) != 0 {
		t.Errorf("ada's stream after her cancel: %q, want no response to the cancelled call", after)
	}
}

// TestHTTPStatelessGETIsRefused: without sessions mcp-go filed every GET
// stream under one empty session ID, and one principal's progress went out
// on another's open GET stream. Now a GET is 405 with Allow: POST, and
// ada's progress reaches her own call's stream.
func TestHTTPStatelessGETIsRefused(t *testing.T) {
	f := newApprovalFixture(t)
	started := holdTool(t, f)
	ts := sessionsServer(t, f, false, time.Now)
	get := rawMCP(t, ts.URL, http.MethodGet, "tok-bob", "", "")
	get.Body.Close()
	if get.StatusCode != http.StatusMethodNotAllowed || get.Header.Get("Allow") != http.MethodPost {
		t.Errorf("bob's GET: %d, Allow %q; want 405, POST", get.StatusCode, get.Header.Get("Allow"))
	}
	held, _ := holdAda(t, ts.URL, started)
	rawMCP(t, ts.URL, http.MethodPost, "tok-ada", "", cancel7).Body.Close()
	if held.ctx.Err() == nil {
		t.Error("ada's cancel did not end her call")
	}
}

// TestHTTPSessionProgressGoesToTheCallsStream: in an HTTP session with its
// GET stream open, a call's progress notifications went on the session's
// shared channel, which the GET stream's reader raced the call's own
// stream for, so the caller waiting on the call lost some (fixed by mcp-go
// v1.6.0, which sends them on the call's stream). All reach the call's
// stream, and none the GET stream.
func TestHTTPSessionProgressGoesToTheCallsStream(t *testing.T) {
	const n = 20
	f := newApprovalFixture(t)
	started := holdTool(t, f)
	ts := sessionsServer(t, f, true, time.Now)
	res := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", "", legacyInit)
	id := res.Header.Get(server.HeaderKeySessionID)
	if res.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", res.StatusCode, id)
	}
	rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	get := rawMCP(t, ts.URL, http.MethodGet, "tok-ada", id, "")
	if get.StatusCode != http.StatusOK {
		t.Fatalf("ada's GET in her session: %d", get.StatusCode)
	}
	onGET := make(chan string, n)
	go func() {
		lines := bufio.NewScanner(get.Body)
		for lines.Scan() {
			if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				onGET <- d
			}
		}
	}()
	stream := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hold","arguments":{"n":20},"_meta":{"progressToken":"p-ada"}}}`)
	held := <-started
	onPOST := make(chan string, n)
	go func() {
		lines := bufio.NewScanner(stream.Body)
		for lines.Scan() {
			if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				onPOST <- d
			}
		}
		close(onPOST)
	}()
	got := 0
	for got < n {
		select {
		case d := <-onGET:
			t.Fatalf("on the GET stream: %s", d)
		case d, ok := <-onPOST:
			if !ok {
				t.Fatalf("the call's stream ended after %d of %d progress notifications", got, n)
			}
			if strings.Contains(d, `"p-ada"`) {
				got++
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d progress notifications on the call's stream", got, n)
		}
	}
	rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id, cancel7).Body.Close()
	if held.ctx.Err() == nil {
		t.Error("ada's cancel in her session did not end her call")
	}
}
