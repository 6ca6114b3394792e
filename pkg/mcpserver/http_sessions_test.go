package mcpserver

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/serve"
)

// sessionsServer serves f over streamable HTTP with tokens for ada and bob,
// with HTTP sessions on or off, on a clock the test moves.
func sessionsServer(t *testing.T, f *approvalFixture, sessions bool, now func() time.Time) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(serve.NewHandler(f.srv, serve.Options{
		Tokens:      map[string]Principal{"tok-ada": {Subject: "ada"}, "tok-bob": {Subject: "bob"}},
		Sessions:    sessions,
		SessionIdle: time.Minute,
		Now:         now,
	}))
	t.Cleanup(ts.Close)
	return ts
}

// connectHTTP connects mcp-go's streamable HTTP client as token's holder
// in one era (legacy: the initialize handshake); a nil user declares no
// elicitation.
func connectHTTP(t *testing.T, url, token string, legacy bool, user *answerer) (*client.Client, *transport.StreamableHTTP) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	var opts []client.ClientOption
	if legacy {
		opts = append(opts, client.WithLegacyProtocolOnly())
	}
	if user != nil {
		opts = append(opts, client.WithElicitationHandler(user))
	}
	c := client.NewClient(tr, opts...)
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "test-http", Version: "1"}
	res, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if got := mcp.IsModernProtocol(res.ProtocolVersion); got == legacy {
		t.Fatalf("negotiated %s, want legacy %v", res.ProtocolVersion, legacy)
	}
	return c, tr
}

// TestHTTPSessionsAskLegacyClients: with HTTP sessions on, a 2025-era
// client that initialized over HTTP and declared elicitation is asked on
// its tool call's stream: an accept sends the write once, a decline sends
// nothing; a client without the capability, and any legacy client with
// sessions off, is not_approved saying why; a 2026-07-28 client on the same
// endpoint still gets its input_required round trip and no session.
func TestHTTPSessionsAskLegacyClients(t *testing.T) {
	fixed := func() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }
	for _, tt := range []struct {
		name     string
		sessions bool
		legacy   bool
		user     *answerer
		sent     int
		why      string
		outcomes []string
	}{
		{"sessions legacy accept", true, true, &answerer{action: mcp.ElicitationResponseActionAccept, value: true}, 1, "", []string{"approval_asked", "approved", "ok"}},
		{"sessions legacy decline", true, true, &answerer{action: mcp.ElicitationResponseActionDecline}, 0, "the user declined", []string{"approval_asked", "not_approved"}},
		{"sessions legacy no elicitation", true, true, nil, 0, "no elicitation capability on this session", []string{"not_approved"}},
		{"sessions 2026-07-28 accept", true, false, &answerer{action: mcp.ElicitationResponseActionAccept, value: true}, 1, "", []string{"approval_asked", "approved", "ok"}},
		{"sessions 2026-07-28 decline", true, false, &answerer{action: mcp.ElicitationResponseActionDecline}, 0, "the user declined", []string{"approval_asked", "not_approved"}},
		{"stateless legacy", false, true, &answerer{action: mcp.ElicitationResponseActionAccept, value: true}, 0, "legacy MCP request over HTTP cannot ask the user (specgate serves HTTP without sessions unless http.sessions is on", []string{"not_approved"}},
		{"stateless 2026-07-28 accept", false, false, &answerer{action: mcp.ElicitationResponseActionAccept, value: true}, 1, "", []string{"approval_asked", "approved", "ok"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newApprovalFixture(t)
			ts := sessionsServer(t, f, tt.sessions, fixed)
			c, tr := connectHTTP(t, ts.URL, "tok-ada", tt.legacy, tt.user)
			if got, want := tr.GetSessionId() != "", tt.sessions && tt.legacy; got != want {
				t.Errorf("session %q: want one %v", tr.GetSessionId(), want)
			}
			res, isErr := callTool(t, c, "invoke", addPetArgs)
			if got := f.upstream.count(); got != tt.sent {
				t.Errorf("sent %d, want %d (result %v)", got, tt.sent, res)
			}
			if tt.why == "" && isErr {
				t.Errorf("approved write: %v", res)
			}
			if tt.why != "" {
				e := errorOf(t, res)
				if msg, _ := e["message"].(string); e["code"] != codes.NotApproved || !strings.Contains(msg, tt.why) || !strings.Contains(msg, "nothing was sent") {
					t.Errorf("error %v, want not_approved saying %q", e, tt.why)
				}
			}
			asked := 0
			if tt.user != nil {
				asked = len(tt.user.questions())
				if want := tt.outcomes[0] == "approval_asked"; (asked == 1) != want || asked > 1 {
					t.Errorf("the user was asked %d times (%q)", asked, tt.user.questions())
				}
				if asked == 1 && !strings.Contains(tt.user.questions()[0], "POST /pet") {
					t.Errorf("the user was asked %q", tt.user.questions())
				}
			}
			if got := outcomes(auditLines(t, f.audit), "petstore.addPet"); strings.Join(got, ",") != strings.Join(tt.outcomes, ",") {
				t.Errorf("audit outcomes %v, want %v", got, tt.outcomes)
			}
			// The session keeps serving after the question.
			if _, isErr := callTool(t, c, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}); isErr {
				t.Errorf("a read after the write failed")
			}
		})
	}
}

// rawMCP posts one JSON-RPC message to /mcp (or sends method with no body)
// as token's holder, with the session id if not empty.
func rawMCP(t *testing.T, url, method, token, session, body string) *http.Response {
	t.Helper()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	} else {
		rd = strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url+"/mcp", rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(server.HeaderKeySessionID, session)
		req.Header.Set(mcp.HeaderProtocolVersion, "2025-06-18")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

const legacyInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`

// TestHTTPSessionBoundToPrincipal: a session ID is no credential: another
// principal's token naming it is answered 404 on POST, GET and DELETE, and
// the session still serves its owner; a legacy request with no session is
// served on its own and a write in it is not_approved saying it has no
// session; a session unused past http session idle is gone.
func TestHTTPSessionBoundToPrincipal(t *testing.T) {
	f := newApprovalFixture(t)
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ts := sessionsServer(t, f, true, clock)

	res := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", "", legacyInit)
	id := res.Header.Get(server.HeaderKeySessionID)
	if res.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", res.StatusCode, id)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		body := ""
		if m == http.MethodPost {
			body = list
		}
		if got := rawMCP(t, ts.URL, m, "tok-bob", id, body).StatusCode; got != http.StatusNotFound {
			t.Errorf("bob's %s in ada's session: %d, want 404", m, got)
		}
	}
	if got := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id, list).StatusCode; got != http.StatusOK {
		t.Errorf("ada's tools/list after bob's tries: %d, want 200", got)
	}
	if got := rawMCP(t, ts.URL, http.MethodGet, "tok-ada", "", "").StatusCode; got != http.StatusBadRequest {
		t.Errorf("a legacy GET without a session: %d, want 400", got)
	}

	// A legacy tools/call with no session: served, refused with its reason.
	call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": map[string]any{"name": "invoke", "arguments": addPetArgs}})
	r := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", "", string(call))
	var out struct {
		Result struct {
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.NewDecoder(r.Body).Decode(&out); err != nil {
		t.Fatalf("sessionless call: %d %v", r.StatusCode, err)
	}
	e, _ := out.Result.StructuredContent["error"].(map[string]any)
	if msg, _ := e["message"].(string); e["code"] != codes.NotApproved || !strings.Contains(msg, "without a session cannot ask the user") || f.upstream.count() != 0 {
		t.Errorf("sessionless legacy write = %v, sent %d: want not_approved saying it has no session", out.Result.StructuredContent, f.upstream.count())
	}

	// Past the idle time the session is gone; the owner initializes again.
	mu.Lock()
	now = now.Add(time.Minute + time.Second)
	mu.Unlock()
	if got := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id, list).StatusCode; got != http.StatusNotFound {
		t.Errorf("ada's idle session: %d, want 404", got)
	}
	if got := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", "", legacyInit); got.StatusCode != http.StatusOK || got.Header.Get(server.HeaderKeySessionID) == id {
		t.Errorf("initialize again: %d, session %q", got.StatusCode, got.Header.Get(server.HeaderKeySessionID))
	}
	if got := rawMCP(t, ts.URL, http.MethodDelete, "tok-ada", id, "").StatusCode; got != http.StatusNotFound {
		t.Errorf("DELETE of the ended session: %d, want 404", got)
	}
}

// TestHTTPSessionsAskForScriptWrites: a run_script's write in a 2025-era
// HTTP session is asked on the run's stream too: accepted it is sent,
// declined the script reads not_approved and nothing is sent.
func TestHTTPSessionsAskForScriptWrites(t *testing.T) {
	code := `try { const r = await api.invoke("petstore.addPet", {requestBody: {name: "doggie", photoUrls: ["https://x.test/1.png"]}}); return "sent " + r.statusCode; }
		catch (e) { return e.code + ": " + e.message; }`
	fixed := func() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }
	for _, tt := range []struct {
		name string
		user *answerer
		want string
		sent int
	}{
		{"accept", &answerer{action: mcp.ElicitationResponseActionAccept, value: true}, "sent 200", 1},
		{"decline", &answerer{action: mcp.ElicitationResponseActionDecline}, "not_approved: petstore.addPet needs the user's approval and the user declined", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newApprovalFixture(t)
			ts := sessionsServer(t, f, true, fixed)
			c, _ := connectHTTP(t, ts.URL, "tok-ada", true, tt.user)
			res, isErr := callTool(t, c, "run_script", map[string]any{"code": code})
			got, _ := res["result"].(string)
			if isErr || !strings.HasPrefix(got, tt.want) || f.upstream.count() != tt.sent || len(tt.user.questions()) != 1 {
				t.Errorf("run_script = %v (sent %d, asked %d), want %q and %d sent", res, f.upstream.count(), len(tt.user.questions()), tt.want, tt.sent)
			}
		})
	}
}

// TestHTTPElicitationAnswerWithDuplicateKeysIsRefused: an answer to the
// approval question whose content holds "approve" twice (false, then
// true) was read as the last, an accept, and the write was sent, where a
// 2026-07-28 call's inputResponses with the same keys is refused. Now the
// answer is refused whole with HTTP 400 and nothing is sent; the call
// still waits for a clean answer, and a decline then ends it.
func TestHTTPElicitationAnswerWithDuplicateKeysIsRefused(t *testing.T) {
	f := newApprovalFixture(t)
	ts := sessionsServer(t, f, true, time.Now)
	res := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", "", legacyInit)
	id := res.Header.Get(server.HeaderKeySessionID)
	if res.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", res.StatusCode, id)
	}
	rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": "invoke", "arguments": addPetArgs}})
	stream := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id, string(call))
	defer stream.Body.Close()
	lines := bufio.NewScanner(stream.Body)
	next := func() map[string]any {
		for lines.Scan() {
			if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				var m map[string]any
				if err := json.Unmarshal([]byte(d), &m); err != nil {
					t.Fatalf("event %q: %v", d, err)
				}
				return m
			}
		}
		t.Fatalf("the call's stream ended: %v", lines.Err())
		return nil
	}
	ask := next()
	if ask["method"] != string(mcp.MethodElicitationCreate) {
		t.Fatalf("first event = %v, want the approval question", ask)
	}
	qid, _ := json.Marshal(ask["id"])

	for _, body := range []string{
		`{"jsonrpc":"2.0","id":` + string(qid) + `,"result":{"action":"accept","content":{"approve":false,"approve":true}}}`,
		`{"jsonrpc":"2.0","id":` + string(qid) + `,"result":{"action":"decline","action":"accept","content":{"approve":true}}}`,
	} {
		r := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id, body)
		r.Body.Close()
		if r.StatusCode != http.StatusBadRequest || f.upstream.count() != 0 {
			t.Errorf("answer %s: %d, sent %d; want 400 and nothing sent", body, r.StatusCode, f.upstream.count())
		}
	}
	r := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id, `{"jsonrpc":"2.0","id":`+string(qid)+`,"result":{"action":"decline"}}`)
	r.Body.Close()
	out := next()
	text, _ := json.Marshal(out)
	if !strings.Contains(string(text), codes.NotApproved) || !strings.Contains(string(text), "the user declined") || f.upstream.count() != 0 {
		t.Errorf("after the decline: %s, sent %d; want not_approved, the user declined, nothing sent", text, f.upstream.count())
	}
}

// TestHTTPEndedSessionsAreFreedOnLoopback: on a loopback listener the
// DELETE that frees an ended session in mcp-go had an empty Host and was
// refused by mcp-go's DNS-rebinding guard, so a session evicted from a
// full table, or idle past http session idle, stayed registered in mcp-go
// for good (memory grew past the table's cap). Now both are freed in
// mcp-go, and the live ones stay.
func TestHTTPEndedSessionsAreFreedOnLoopback(t *testing.T) {
	for _, tt := range []struct {
		name  string
		opens int
		later time.Duration
		freed int
	}{
		{"evicted when full", 4, 0, 2},
		{"idle", 2, 2 * time.Minute, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newApprovalFixture(t)
			clock := &testClock{now: t0}
			ts := httptest.NewServer(serve.NewHandler(f.srv, serve.Options{
				Tokens:      map[string]Principal{"tok-ada": {Subject: "ada"}},
				Sessions:    true,
				SessionIdle: time.Minute,
				MaxTracked:  2,
				Now:         clock.Now,
			}))
			t.Cleanup(ts.Close)
			var ids []string
			for range tt.opens {
				res := rawMCP(t, ts.URL, http.MethodPost, "tok-ada", "", legacyInit)
				id := res.Header.Get(server.HeaderKeySessionID)
				if res.StatusCode != http.StatusOK || id == "" {
					t.Fatalf("initialize: %d, session %q", res.StatusCode, id)
				}
				rawMCP(t, ts.URL, http.MethodPost, "tok-ada", id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
				ids = append(ids, id)
			}
			clock.Set(t0.Add(tt.later))
			// Any request frees what was ended before it.
			rawMCP(t, ts.URL, http.MethodPost, "tok-ada", "", `{"jsonrpc":"2.0","id":9,"method":"ping"}`).Body.Close()
			freed := 0
			for _, id := range ids {
				err := f.srv.mcp.SendNotificationToSpecificClient(id, "notifications/message", map[string]any{"level": "info", "data": "x"})
				if errors.Is(err, server.ErrSessionNotFound) {
					freed++
				}
			}
			if freed != tt.freed {
				t.Errorf("%d of %d sessions freed in mcp-go, want %d", freed, len(ids), tt.freed)
			}
		})
	}
}
