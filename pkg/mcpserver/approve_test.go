package mcpserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
)

// auditLines reads the audit log's JSON lines.
func auditLines(t *testing.T, w *syncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(w.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// outcomes lists the audit lines' outcomes of one endpoint.
func outcomes(lines []map[string]any, endpoint string) []string {
	var out []string
	for _, l := range lines {
		if l["endpoint"] == endpoint {
			out = append(out, l["outcome"].(string))
		}
	}
	return out
}

// approvalFixture serves petstore with approve_writes on, against a
// recording upstream, and audits into a buffer.
type approvalFixture struct {
	srv      *Server
	upstream *recorder
	audit    *syncBuffer
	now      time.Time
}

func newApprovalFixture(t *testing.T) *approvalFixture {
	t.Helper()
	rec := &recorder{}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	cat, ix, eps := servedCatalog(t, 0, petstoreAt(t, up.URL))
	l, err := ratelimit.New(ratelimit.Options{Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	f := &approvalFixture{upstream: rec, audit: &syncBuffer{}, now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	f.srv = New(Options{SpecNames: []string{"petstore"}, Audit: f.audit,
		Now:         func() time.Time { return f.now },
		Approve:     func(e *spec.Endpoint) bool { return !e.Safe() },
		ApprovalKey: []byte(strings.Repeat("k", 32)),
		Scripts:     ScriptOptions{AllowWrites: true},
		Caller:      invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}},
	})
	f.srv.Publish(cat, ix, nil)
	return f
}

// answerer is the user at the client: it answers every question the same
// way and keeps what it was asked.
type answerer struct {
	mu     sync.Mutex
	action mcp.ElicitationResponseAction
	value  any
	asked  []string
}

func (a *answerer) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req.Params.Message)
	res := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: a.action}}
	if a.action == mcp.ElicitationResponseActionAccept {
		res.Content = map[string]any{approvalID: a.value}
	}
	return res, nil
}

func (a *answerer) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// connectEra connects an in-process client in one MCP era: legacy (the
// initialize handshake, elicitation requests) or modern (2026-07-28,
// input_required round trips). A nil user declares no elicitation.
func connectEra(t *testing.T, srv *Server, legacy bool, user *answerer) *client.Client {
	t.Helper()
	var opts []client.ClientOption
	if legacy {
		opts = append(opts, client.WithLegacyProtocolOnly())
	}
	if user != nil {
		opts = append(opts, client.WithElicitationHandler(user))
	}
	c, err := client.NewInProcessClientWithOptions(srv.MCP(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	res, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if got := mcp.IsModernProtocol(res.ProtocolVersion); got == legacy {
		t.Fatalf("negotiated %s, want legacy %v", res.ProtocolVersion, legacy)
	}
	return c
}

var addPetArgs = map[string]any{"endpointId": "petstore.addPet", "requestBody": map[string]any{"name": "doggie", "photoUrls": []any{"https://x.test/1.png"}}}

// TestApproveWrites: with approve_writes, a write is sent only when the user
// accepts, in both eras (legacy elicitation, 2026-07-28 input_required);
// declined, cancelled, or a client that cannot ask is not_approved with
// nothing sent; a read is not asked about; each step is an audit line.
func TestApproveWrites(t *testing.T) {
	for _, era := range []struct {
		name   string
		legacy bool
	}{{"legacy", true}, {"2026-07-28", false}} {
		t.Run(era.name, func(t *testing.T) {
			tests := []struct {
				name     string
				user     *answerer
				sent     bool
				why      string
				outcomes []string
			}{
				{"accept", &answerer{action: mcp.ElicitationResponseActionAccept, value: true}, true, "", []string{"approval_asked", "approved", "ok"}},
				{"accept false", &answerer{action: mcp.ElicitationResponseActionAccept, value: false}, false, "the user declined", []string{"approval_asked", "not_approved"}},
				{"accept not a boolean", &answerer{action: mcp.ElicitationResponseActionAccept, value: "yes"}, false, "the user declined", []string{"approval_asked", "not_approved"}},
				{"decline", &answerer{action: mcp.ElicitationResponseActionDecline}, false, "the user declined", []string{"approval_asked", "not_approved"}},
				{"cancel", &answerer{action: mcp.ElicitationResponseActionCancel}, false, "the user cancelled", []string{"approval_asked", "not_approved"}},
				{"no elicitation", nil, false, "the client cannot ask", []string{"not_approved"}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					f := newApprovalFixture(t)
					c := connectEra(t, f.srv, era.legacy, tt.user)
					res, isErr := callTool(t, c, "invoke", addPetArgs)
					if got := f.upstream.count() == 1; got != tt.sent {
						t.Fatalf("sent %v, want %v: %v", got, tt.sent, res)
					}
					if tt.sent {
						if isErr || res["statusCode"] == nil {
							t.Fatalf("approved write failed: %v", res)
						}
						if r := f.upstream.requests[0]; r.Method != "POST" || !strings.Contains(string(r.Body), "doggie") {
							t.Errorf("upstream got %s %s", r.Method, r.Body)
						}
					} else {
						e := errorOf(t, res)
						if e["code"] != codes.NotApproved || e["retryable"] != false || !strings.Contains(e["message"].(string), tt.why) ||
							!strings.Contains(e["message"].(string), "nothing was sent") || e["hint"] == "" {
							t.Errorf("error = %v, want not_approved saying %q", e, tt.why)
						}
					}
					if tt.user != nil {
						q := tt.user.questions()
						if len(q) != 1 || !strings.Contains(q[0], "POST /pet") || !strings.Contains(q[0], "petstore.addPet (Add a new pet to the store.)") ||
							!strings.Contains(q[0], `"name":"doggie"`) || !strings.Contains(q[0], "sha256 ") {
							t.Errorf("the user was asked %q", q)
						}
					}
					lines := auditLines(t, f.audit)
					if got := outcomes(lines, "petstore.addPet"); strings.Join(got, ",") != strings.Join(tt.outcomes, ",") {
						t.Errorf("audit outcomes %v, want %v", got, tt.outcomes)
					}
					for _, l := range lines {
						if l["outcome"] != "ok" && (l["digest"] == nil || strings.Contains(l["digest"].(string), "doggie")) {
							t.Errorf("audit line %v: want a digest without values", l)
						}
					}
				})
			}
			t.Run("read not asked", func(t *testing.T) {
				f := newApprovalFixture(t)
				user := &answerer{action: mcp.ElicitationResponseActionDecline}
				c := connectEra(t, f.srv, era.legacy, user)
				if res, isErr := callTool(t, c, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}); isErr {
					t.Fatalf("read: %v", res)
				}
				if q := user.questions(); len(q) != 0 || f.upstream.count() != 1 {
					t.Errorf("a read asked %q and sent %d", q, f.upstream.count())
				}
			})
			t.Run("invalid write not asked", func(t *testing.T) {
				f := newApprovalFixture(t)
				user := &answerer{action: mcp.ElicitationResponseActionAccept, value: true}
				c := connectEra(t, f.srv, era.legacy, user)
				res, _ := callTool(t, c, "invoke", map[string]any{"endpointId": "petstore.addPet", "requestBody": map[string]any{"name": 7}})
				if e := errorOf(t, res); e["code"] != codes.ValidationFailed || len(user.questions()) != 0 || f.upstream.count() != 0 {
					t.Errorf("error %v, asked %q, sent %d: want validation_failed before asking", e, user.questions(), f.upstream.count())
				}
			})
			t.Run("no approving argument", func(t *testing.T) {
				f := newApprovalFixture(t)
				c := connectEra(t, f.srv, era.legacy, nil)
				args := map[string]any{"approved": true}
				for k, v := range addPetArgs {
					args[k] = v
				}
				res, _ := callTool(t, c, "invoke", args)
				if e := errorOf(t, res); e["code"] != codes.ValidationFailed || f.upstream.count() != 0 {
					t.Errorf("error %v, sent %d: want validation_failed", e, f.upstream.count())
				}
			})
		})
	}
}

// rawCall sends one tools/call of the invoke tool as a 2026-07-28 client
// would, with requestState and inputResponses as given (a client may send
// anything there), as principal; it returns the result object.
func rawCall(t *testing.T, f *approvalFixture, principal string, args map[string]any, state string, responses any) map[string]any {
	t.Helper()
	params := map[string]any{"name": "invoke", "arguments": args, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcp.ProtocolVersion20260728,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
	}}
	if state != "" {
		params["requestState"] = state
	}
	if responses != nil {
		params["inputResponses"] = responses
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	ctx := WithPrincipal(t.Context(), Principal{Subject: principal})
	out, _ := json.Marshal(f.srv.MCP().HandleMessage(ctx, msg))
	var resp struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if err := json.Unmarshal(out, &resp); err != nil || resp.Result == nil {
		t.Fatalf("tools/call answered %s", out)
	}
	return resp.Result
}

var acceptAnswer = map[string]any{approvalID: map[string]any{"action": "accept", "content": map[string]any{approvalID: true}}}

// TestApprovalRequestStateBindsTheCall: on 2026-07-28 the answer to an
// input_required counts only with the requestState issued for that call: a
// forged or tampered state, an accept with none, changed arguments, another
// endpoint, an expired state or another principal's is not_approved and
// nothing is sent; the state issued, with the user's accept, sends the call
// once: a replay of it is refused.
func TestApprovalRequestStateBindsTheCall(t *testing.T) {
	f := newApprovalFixture(t)
	first := rawCall(t, f, "ada", addPetArgs, "", nil)
	state, _ := first["requestState"].(string)
	if first["resultType"] != "input_required" || state == "" || first["inputRequests"] == nil {
		t.Fatalf("first answer = %v, want input_required with a requestState", first)
	}
	if strings.Contains(state, "ada") || strings.Contains(state, "doggie") {
		t.Errorf("requestState %q carries a name or a value", state)
	}
	changed := map[string]any{"endpointId": "petstore.addPet", "requestBody": map[string]any{"name": "kitty", "photoUrls": []any{"https://x.test/1.png"}}}
	update := map[string]any{"endpointId": "petstore.updatePet", "requestBody": addPetArgs["requestBody"]}
	tampered := state[:len(state)-2] + "AA"
	if strings.HasSuffix(state, "AA") {
		tampered = state[:len(state)-2] + "BB"
	}
	refusals := []struct {
		name, principal, state, why string
		args                        map[string]any
		answer                      any
		later                       time.Duration
	}{
		{"tampered", "ada", tampered, "not one specgate issued", addPetArgs, acceptAnswer, 0},
		{"forged", "ada", "v1.eyJwIjoiYWRhIn0.c2ln", "not one specgate issued", addPetArgs, acceptAnswer, 0},
		{"accept without state", "ada", "", "not one specgate issued", addPetArgs, acceptAnswer, 0},
		{"changed argument", "ada", state, "the arguments changed", changed, acceptAnswer, 0},
		{"another endpoint", "ada", state, "another endpoint", update, acceptAnswer, 0},
		{"another principal", "bob", state, "another caller", addPetArgs, acceptAnswer, 0},
		{"expired", "ada", state, "expired", addPetArgs, acceptAnswer, 5*time.Minute + time.Second},
		{"declined", "ada", state, "the user declined", addPetArgs, map[string]any{approvalID: map[string]any{"action": "decline"}}, 0},
	}
	start := f.now
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			f.now = start.Add(tt.later)
			res := rawCall(t, f, tt.principal, tt.args, tt.state, tt.answer)
			text := res["content"].([]any)[0].(map[string]any)["text"].(string)
			if res["isError"] != true || !strings.Contains(text, `"code":"not_approved"`) || !strings.Contains(text, tt.why) {
				t.Errorf("answer %s, want not_approved saying %q", text, tt.why)
			}
			if n := f.upstream.count(); n != 0 {
				t.Errorf("upstream got %d requests", n)
			}
		})
	}
	f.now = start.Add(time.Minute)
	res := rawCall(t, f, "ada", addPetArgs, state, acceptAnswer)
	if res["isError"] == true || f.upstream.count() != 1 {
		t.Fatalf("approved retry = %v, sent %d", res, f.upstream.count())
	}
	// The same accepted state again: a replay, refused; nothing more sent.
	res = rawCall(t, f, "ada", addPetArgs, state, acceptAnswer)
	if text := res["content"].([]any)[0].(map[string]any)["text"].(string); res["isError"] != true || !strings.Contains(text, "already used") || f.upstream.count() != 1 {
		t.Errorf("replayed approval = %s, sent %d: want not_approved, already used", text, f.upstream.count())
	}
	var asked, refused int
	for _, l := range auditLines(t, f.audit) {
		switch l["outcome"] {
		case "approval_asked":
			asked++
		case codes.NotApproved:
			refused++
			if l["approval"] == nil || l["principal"] == nil {
				t.Errorf("refusal audit line %v names no reason or principal", l)
			}
		}
	}
	if asked != 1 || refused != len(refusals)+1 {
		t.Errorf("audit: %d asked, %d refused, want 1 and %d", asked, refused, len(refusals)+1)
	}
}

// TestApproveScriptWrites: a run_script's write asks the user by
// elicitation on a legacy session, the script waiting for the answer; on
// 2026-07-28 a script cannot stop for a round trip, so the write throws
// not_approved, naming invoke as the way, and nothing is sent.
func TestApproveScriptWrites(t *testing.T) {
	code := `try { const r = await api.invoke("petstore.addPet", {requestBody: {name: "doggie", photoUrls: ["https://x.test/1.png"]}}); return "sent " + r.statusCode; }
		catch (e) { return e.code + ": " + e.message; }`
	for _, tt := range []struct {
		name   string
		legacy bool
		user   *answerer
		want   string
		sent   int
	}{
		{"legacy accept", true, &answerer{action: mcp.ElicitationResponseActionAccept, value: true}, "sent 200", 1},
		{"legacy decline", true, &answerer{action: mcp.ElicitationResponseActionDecline}, "not_approved: petstore.addPet needs the user's approval and the user declined", 0},
		{"2026-07-28", false, &answerer{action: mcp.ElicitationResponseActionAccept, value: true}, "not_approved: petstore.addPet needs the user's approval and a run_script on MCP 2026-07-28 cannot stop to ask the user; make this call with invoke", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newApprovalFixture(t)
			c := connectEra(t, f.srv, tt.legacy, tt.user)
			res, isErr := callTool(t, c, "run_script", map[string]any{"code": code})
			got, _ := res["result"].(string)
			if isErr || !strings.HasPrefix(got, tt.want) || f.upstream.count() != tt.sent {
				t.Errorf("run_script = %v (sent %d), want %q and %d sent", res, f.upstream.count(), tt.want, tt.sent)
			}
			for _, l := range auditLines(t, f.audit) {
				if l["outcome"] != "ok" && l["runId"] == nil {
					t.Errorf("audit line %v names no run", l)
				}
			}
		})
	}
}

// TestInstructionsSayApprovals: with approvals on, the instructions say what
// not_approved means; they stay under 2 KB.
func TestInstructionsSayApprovals(t *testing.T) {
	f := newApprovalFixture(t)
	c := connectEra(t, f.srv, true, nil)
	res, err := c.Initialize(t.Context(), mcp.InitializeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Instructions, "not_approved: nothing was sent") || len(res.Instructions) > 2048 {
		t.Errorf("instructions (%d bytes) do not say what not_approved means:\n%s", len(res.Instructions), res.Instructions)
	}
}

// TestApprovalBindsPages: the approval's digest covered the arguments but
// not pages, so an approved GET of one page replayed with pages: 5 sent
// five requests. The digest covers pages now: the replay is not_approved,
// nothing sent, and the user is told how many pages a call may follow.
func TestApprovalBindsPages(t *testing.T) {
	f := newApprovalFixture(t)
	f.srv.opts.Approve = func(*spec.Endpoint) bool { return true }
	one := map[string]any{"endpointId": "petstore.findPetsByStatus", "parameters": map[string]any{"status": "available"}}
	five := map[string]any{"endpointId": "petstore.findPetsByStatus", "parameters": map[string]any{"status": "available"}, "pages": 5}
	first := rawCall(t, f, "ada", one, "", nil)
	state, _ := first["requestState"].(string)
	if first["resultType"] != "input_required" || state == "" {
		t.Fatalf("first answer = %v, want input_required with a requestState", first)
	}
	res := rawCall(t, f, "ada", five, state, acceptAnswer)
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	if res["isError"] != true || !strings.Contains(text, "the arguments changed") {
		t.Errorf("one page's approval replayed with pages 5 answered %s, want not_approved: the arguments changed", text)
	}
	if n := f.upstream.count(); n != 0 {
		t.Fatalf("upstream got %d requests, want none", n)
	}
	asked := rawCall(t, f, "ada", five, "", nil)
	q, _ := json.Marshal(asked["inputRequests"])
	if !strings.Contains(string(q), "pages: up to 5") {
		t.Errorf("the question %s does not say the call may follow 5 pages", q)
	}
	if res := rawCall(t, f, "ada", one, state, acceptAnswer); res["isError"] == true || f.upstream.count() != 1 {
		t.Errorf("the approved call itself = %v, sent %d, want sent once", res, f.upstream.count())
	}
}
