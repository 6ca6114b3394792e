package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/internal/redistest"
)

// approver is the user at an MCP client: it answers each approval with
// its current action and counts the questions.
type approver struct {
	accept atomic.Bool
	asked  atomic.Int32
}

func (a *approver) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.asked.Add(1)
	if !a.accept.Load() {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"approve": true}}}, nil
}

// modernConfig writes a config serving petstore against up with approve_writes
// and a budget of 1 request per 2s that queues (so a call waits, with
// progress); extra is appended (the HTTP and store keys).
func modernConfig(t *testing.T, dir, name, up, extra string) (cfg, audit string) {
	return modernConfigKey(t, dir, name, up, extra, strings.Repeat("k", 32))
}

// modernConfigKey is modernConfig with approvals.key set to key ("" leaves
// it unset).
func modernConfigKey(t *testing.T, dir, name, up, extra, key string) (cfg, audit string) {
	t.Helper()
	u, _ := url.Parse(up)
	abs, err := filepath.Abs("../../testdata/petstore-v3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	audit = filepath.Join(dir, name+".audit")
	text := fmt.Sprintf(`disable_ratelimiter: true
approve_writes: true
audit_log: %q
# channel elicit: these tests are of the client asking (the page asks in ui_e2e_test.go)
approvals: {key: %q, channel: elicit}
specs:
  - name: petstore-v3
    location: %q
    base_url: %q
upstreams:
  - match: %q
    requests_per_window: 1
    window: 2s
    on_limit: wait
    queue_timeout: 30s
%s`, audit, key, abs, up+"/api/v3", u.Host, extra)
	cfg = filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, audit
}

// startModernReplicas starts two serve --http replicas of modernConfig with
// extra and no approvals.key, and waits until both are ready; it returns
// them and their audit logs.
func startModernReplicas(t *testing.T, bin, dir, up, extra string) ([]*replica, []string) {
	t.Helper()
	var rs []*replica
	var audits []string
	for i := range 2 {
		cfg, audit := modernConfigKey(t, dir, fmt.Sprint("replica", i), up, extra, "")
		rs = append(rs, startReplica(t, bin, i, cfg))
		audits = append(audits, audit)
	}
	waitReady(t, rs...)
	return rs, audits
}

// connectModern initializes c, which must negotiate MCP 2026-07-28.
func connectModern(t *testing.T, c *client.Client) {
	t.Helper()
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e-2026", Version: "1"}
	ir, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if ir.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Fatalf("negotiated %s, want %s", ir.ProtocolVersion, mcp.ProtocolVersion20260728)
	}
}

// modernScenario is what a 2026-07-28 client does against specgate: discover,
// list tools (cacheable), search, invoke, read_response, a call queued by the
// budget with progress, a queued call cancelled (it leaves the queue: the next
// call goes first and the cancelled one is never sent), and a write approved
// and one declined through input_required round trips.
func modernScenario(t *testing.T, c *client.Client, user *approver, log *upstreamLog) {
	ctx := t.Context()
	disc, err := c.Discover(ctx, mcp.DiscoverRequest{})
	if err != nil || disc.Capabilities.Tools == nil || !strings.Contains(strings.Join(disc.SupportedVersions, ","), mcp.ProtocolVersion20260728) {
		t.Fatalf("discover = %+v, %v", disc, err)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if tools.TTLMs == nil || *tools.TTLMs != 300000 || tools.CacheScope != mcp.CacheScopePublic || len(tools.Tools) < 5 {
		t.Errorf("tools/list: %d tools, ttlMs %v, scope %q: want cacheable for 5m, public", len(tools.Tools), tools.TTLMs, tools.CacheScope)
	}

	res, isErr := callJSON(t, c, "search", map[string]any{"query": "find a pet by its id"})
	if isErr || !strings.Contains(string(mustJSON(res)), "petstore-v3.getPetById") {
		t.Fatalf("search = %v", res)
	}
	get := func(id int) map[string]any {
		return map[string]any{"endpointId": "petstore-v3.getPetById", "parameters": map[string]any{"petId": id}}
	}
	res, isErr = callJSON(t, c, "invoke", get(7))
	rid, _ := res["responseId"].(string)
	if isErr || res["statusCode"] != float64(200) || rid == "" {
		t.Fatalf("invoke = %v", res)
	}
	again, isErr := callJSON(t, c, "read_response", map[string]any{"responseId": rid})
	if isErr || fmt.Sprint(again["body"]) != fmt.Sprint(res["body"]) {
		t.Fatalf("read_response = %v, want the body %v", again, res["body"])
	}

	// A call the budget holds, with progress while it waits.
	var progress atomic.Int32
	first := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			progress.Add(1)
			select {
			case first <- struct{}{}:
			default:
			}
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "invoke", get(8)
	req.Params.Meta = &mcp.Meta{ProgressToken: "queued-8"}
	queued, err := c.CallTool(ctx, req)
	if err != nil || queued.IsError {
		t.Fatalf("queued invoke: %v %v", queued, err)
	}
	var q map[string]any
	json.Unmarshal([]byte(queued.Content[0].(mcp.TextContent).Text), &q)
	wait, _ := q["rateLimit"].(map[string]any)["queueWaitMs"].(float64)
	if progress.Load() == 0 || wait <= 0 {
		t.Errorf("queued invoke: %d progress notifications, queueWaitMs %v; want both", progress.Load(), wait)
	}
	select {
	case <-first:
	default:
	}

	// Cancelled while queued: call 9 waits, is cancelled at its first
	// progress notification; call 10 then goes at the next slot, and 9 never.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		r := mcp.CallToolRequest{}
		r.Params.Name, r.Params.Arguments = "invoke", get(9)
		r.Params.Meta = &mcp.Meta{ProgressToken: "cancelled-9"}
		_, err := c.CallTool(cctx, r)
		done <- err
	}()
	<-first
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled invoke returned %v", err)
	}
	if res, isErr := callJSON(t, c, "invoke", get(10)); isErr {
		t.Fatalf("invoke after the cancelled one = %v", res)
	}

	// A write: the user is asked by input_required; accepted, it is sent.
	pet := map[string]any{"endpointId": "petstore-v3.addPet", "requestBody": map[string]any{"name": "doggie", "photoUrls": []any{"https://x.test/1.png"}}}
	user.accept.Store(true)
	res, isErr = callJSON(t, c, "invoke", pet)
	if isErr || res["statusCode"] != float64(200) || user.asked.Load() != 1 {
		t.Fatalf("approved write = %v (asked %d)", res, user.asked.Load())
	}
	user.accept.Store(false)
	res, isErr = callJSON(t, c, "invoke", pet)
	if e, _ := res["error"].(map[string]any); !isErr || e["code"] != "not_approved" || user.asked.Load() != 2 {
		t.Fatalf("declined write = %v (asked %d)", res, user.asked.Load())
	}
	want := []string{"GET /api/v3/pet/7", "GET /api/v3/pet/8", "GET /api/v3/pet/10", "POST /api/v3/pet"}
	if got := log.list(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("upstream saw %v, want %v", got, want)
	}
}

// auditOutcomes counts the outcomes in audit logs.
func auditOutcomes(t *testing.T, files ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var rec struct{ Outcome string }
			if line != "" && json.Unmarshal([]byte(line), &rec) == nil {
				out[rec.Outcome]++
			}
		}
	}
	return out
}

func checkApprovalAudit(t *testing.T, files ...string) {
	t.Helper()
	got := auditOutcomes(t, files...)
	if got["approval_asked"] != 2 || got["approved"] != 1 || got["not_approved"] != 1 {
		t.Errorf("audit outcomes %v: want 2 approval_asked, 1 approved, 1 not_approved", got)
	}
}

// TestModernEraStdio runs the 2026-07-28 scenario against the binary over
// stdio with mcp-go's client speaking only that revision.
func TestModernEraStdio(t *testing.T) {
	bin := specgateBinary(t)
	up, log := petUpstream(t)
	dir := t.TempDir()
	cfg, audit := modernConfig(t, dir, "stdio", up.URL, "")
	user := &approver{}
	c := client.NewClient(transport.NewStdioWithOptions(bin, []string{"XDG_CACHE_HOME=" + t.TempDir()},
		[]string{"serve", "--config", cfg}), client.WithElicitationHandler(user))
	connectModern(t, c)
	modernScenario(t, c, user, log)
	checkApprovalAudit(t, audit)
}

// TestModernEraHTTPReplicas runs the same scenario over streamable HTTP
// against two replicas behind a round-robin proxy (no sticky sessions),
// sharing Redis for limits, stored answers and the key of the requestState
// (approvals.key unset: the first replica writes one there): a round trip
// begun on one replica is finished on the other.
func TestModernEraHTTPReplicas(t *testing.T) {
	bin := specgateBinary(t)
	up, log := petUpstream(t)
	rd := redistest.Start(t)
	dir := t.TempDir()
	extra := fmt.Sprintf(`http:
  inbound: {requests_per_window: 1000000, tool_calls_per_window: 1000000}
store:
  backend: redis
  redis_url: %s
  key_prefix: "modern:%d:"
`, rd.URL(), os.Getpid())
	// No approvals.key: the replicas share one through Redis.
	rs, audits := startModernReplicas(t, bin, dir, up.URL, extra)

	var next atomic.Int64
	var mu sync.Mutex
	calls := map[int]int{} // tools/call requests by replica
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			i := int(next.Add(1)-1) % len(rs)
			u, _ := url.Parse(rs[i].base)
			pr.SetURL(u)
			if pr.In.Method == http.MethodPost {
				mu.Lock()
				calls[i]++
				mu.Unlock()
			}
			// The body goes on read whole: forwarded as the client's own,
			// the transport's last read of it (for EOF) could come after
			// the replica's answer, once net/http had closed the client's
			// body for the answer being written, and the transport then
			// cut the connection mid-answer ("use of closed network
			// connection"; about 1 run in 10 on a loaded machine).
			if pr.Out.Body != nil {
				body, err := io.ReadAll(pr.Out.Body)
				if err != nil {
					t.Errorf("the proxy read the request body: %v", err)
				}
				pr.Out.Body = io.NopCloser(bytes.NewReader(body))
			}
		},
		FlushInterval: -1,
	})
	t.Cleanup(proxy.Close)

	user := &approver{}
	tr, err := transport.NewStreamableHTTP(proxy.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithElicitationHandler(user))
	connectModern(t, c)
	modernScenario(t, c, user, log)
	checkApprovalAudit(t, audits...)
	// The approved round trip was asked on one replica and answered on the
	// other: the requestState, signed with the shared key, held there.
	a0, a1 := auditOutcomes(t, audits[0]), auditOutcomes(t, audits[1])
	if a0["approved"]+a1["approved"] != 1 || a0["approved"] == 1 && a0["approval_asked"] == 2 || a1["approved"] == 1 && a1["approval_asked"] == 2 {
		t.Errorf("audit by replica %v, %v: want the approval asked on one replica and given on the other", a0, a1)
	}
	t.Logf("audit by replica: %v, %v", a0, a1)
	mu.Lock()
	defer mu.Unlock()
	if calls[0] == 0 || calls[1] == 0 {
		t.Errorf("requests by replica %v: want both", calls)
	}
}

// TestLegacyEraApprovals: on a legacy session (the initialize handshake,
// MCP 2025-11-25) over stdio the binary asks by elicitation: accepted, the
// write is sent; declined, or asked of a client that declared no
// elicitation, it is not_approved and nothing is sent. Over streamable HTTP,
// which specgate serves stateless by default, a legacy client cannot be
// asked at all; with http.sessions on it is asked as on stdio, and a
// 2026-07-28 client on the same endpoint still gets its input_required
// round trip.
func TestLegacyEraApprovals(t *testing.T) {
	bin := specgateBinary(t)
	pet := map[string]any{"endpointId": "petstore-v3.addPet", "requestBody": map[string]any{"name": "doggie", "photoUrls": []any{"https://x.test/1.png"}}}
	connect := func(t *testing.T, tr transport.Interface, user *approver) *client.Client {
		t.Helper()
		opts := []client.ClientOption{client.WithLegacyProtocolOnly()}
		if user != nil {
			opts = append(opts, client.WithElicitationHandler(user))
		}
		c := client.NewClient(tr, opts...)
		if err := c.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		init := mcp.InitializeRequest{}
		init.Params.ClientInfo = mcp.Implementation{Name: "e2e-2025", Version: "1"}
		ir, err := c.Initialize(t.Context(), init)
		if err != nil || mcp.IsModernProtocol(ir.ProtocolVersion) {
			t.Fatalf("initialize: %v %v", ir, err)
		}
		return c
	}
	stdio := func(t *testing.T, cfg string) transport.Interface {
		return transport.NewStdioWithOptions(bin, []string{"XDG_CACHE_HOME=" + t.TempDir()}, []string{"serve", "--config", cfg})
	}
	for _, tt := range []struct {
		name   string
		user   *approver
		accept bool
		why    string
	}{
		{"accept", &approver{}, true, ""},
		{"decline", &approver{}, false, "the user declined"},
		{"no elicitation", nil, false, "no elicitation capability"},
	} {
		t.Run("stdio "+tt.name, func(t *testing.T) {
			up, log := petUpstream(t)
			cfg, audit := modernConfig(t, t.TempDir(), "legacy", up.URL, "")
			if tt.user != nil {
				tt.user.accept.Store(tt.accept)
			}
			c := connect(t, stdio(t, cfg), tt.user)
			res, isErr := callJSON(t, c, "invoke", pet)
			if tt.accept {
				if isErr || len(log.list()) != 1 || tt.user.asked.Load() != 1 {
					t.Fatalf("approved write = %v, upstream %v", res, log.list())
				}
				if got := auditOutcomes(t, audit); got["approval_asked"] != 1 || got["approved"] != 1 {
					t.Errorf("audit %v", got)
				}
				return
			}
			e, _ := res["error"].(map[string]any)
			if msg, _ := e["message"].(string); !isErr || e["code"] != "not_approved" || !strings.Contains(msg, tt.why) || len(log.list()) != 0 {
				t.Errorf("write = %v, upstream %v: want not_approved saying %q", res, log.list(), tt.why)
			}
		})
	}
	t.Run("http", func(t *testing.T) {
		up, log := petUpstream(t)
		cfg, _ := modernConfig(t, t.TempDir(), "legacy-http", up.URL, "")
		r := startReplica(t, bin, 0, cfg)
		waitReady(t, r)
		tr, err := transport.NewStreamableHTTP(r.base + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		user := &approver{}
		user.accept.Store(true)
		c := connect(t, tr, user)
		res, isErr := callJSON(t, c, "invoke", pet)
		// The client declared elicitation; the refusal says why it was not
		// asked all the same, and what would let it be.
		e, _ := res["error"].(map[string]any)
		if msg, _ := e["message"].(string); !isErr || e["code"] != "not_approved" || !strings.Contains(msg, "legacy MCP request over HTTP cannot ask") ||
			!strings.Contains(msg, "2026-07-28") || user.asked.Load() != 0 || len(log.list()) != 0 {
			t.Errorf("write over stateless HTTP, legacy = %v, upstream %v: want not_approved saying HTTP has no session", res, log.list())
		}
		t.Logf("legacy HTTP: %v (asked %d)", res["error"], user.asked.Load())
	})
	t.Run("http sessions", func(t *testing.T) {
		up, log := petUpstream(t)
		cfg, audit := modernConfig(t, t.TempDir(), "legacy-sessions", up.URL, "http: {sessions: true}\n")
		r := startReplica(t, bin, 0, cfg)
		waitReady(t, r)
		for _, tt := range []struct {
			name   string
			legacy bool
			user   *approver
			accept bool
			why    string
		}{
			{"accept", true, &approver{}, true, ""},
			{"decline", true, &approver{}, false, "the user declined"},
			{"no elicitation", true, nil, false, "no elicitation capability on this session"},
			{"2026-07-28 accept", false, &approver{}, true, ""},
		} {
			t.Run(tt.name, func(t *testing.T) {
				tr, err := transport.NewStreamableHTTP(r.base + "/mcp")
				if err != nil {
					t.Fatal(err)
				}
				var c *client.Client
				if tt.legacy {
					c = connect(t, tr, tt.user)
					if tr.GetSessionId() == "" {
						t.Errorf("initialize over HTTP with http.sessions opened no session")
					}
				} else {
					c = client.NewClient(tr, client.WithElicitationHandler(tt.user))
					connectModern(t, c)
					if tr.GetSessionId() != "" {
						t.Errorf("a 2026-07-28 client got session %q", tr.GetSessionId())
					}
				}
				if tt.user != nil {
					tt.user.accept.Store(tt.accept)
				}
				before := len(log.list())
				res, isErr := callJSON(t, c, "invoke", pet)
				sent := len(log.list()) - before
				if tt.accept {
					if isErr || sent != 1 || tt.user.asked.Load() != 1 {
						t.Errorf("approved write = %v, sent %d, asked %d: want sent once after one question", res, sent, tt.user.asked.Load())
					}
					return
				}
				e, _ := res["error"].(map[string]any)
				if msg, _ := e["message"].(string); !isErr || e["code"] != "not_approved" || !strings.Contains(msg, tt.why) || sent != 0 {
					t.Errorf("write = %v, sent %d: want not_approved saying %q", res, sent, tt.why)
				}
				if tt.user != nil && tt.user.asked.Load() != 1 {
					t.Errorf("asked %d, want 1", tt.user.asked.Load())
				}
			})
		}
		if got := auditOutcomes(t, audit); got["approval_asked"] != 3 || got["approved"] != 2 || got["not_approved"] != 2 {
			t.Errorf("audit %v: want 3 asked, 2 approved, 2 not_approved", got)
		}
	})
}

// modernCall posts one 2026-07-28 tools/call of invoke to base as the
// holder of token, with requestState and inputResponses as given (a client
// may send anything there), and returns the result object.
func modernCall(t *testing.T, base, token string, args map[string]any, state string, responses any) map[string]any {
	t.Helper()
	params := map[string]any{"name": "invoke", "arguments": args, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcp.ProtocolVersion20260728,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-2026", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
	}}
	if state != "" {
		params["requestState"] = state
	}
	if responses != nil {
		params["inputResponses"] = responses
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, "tools/call")
	req.Header.Set(mcp.HeaderName, "invoke")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	// The answer is one JSON object, or one SSE event carrying it.
	text := string(raw)
	for _, line := range strings.Split(text, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			text = d
		}
	}
	var out struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil || out.Result == nil {
		t.Fatalf("tools/call to %s answered %d %s", base, resp.StatusCode, raw)
	}
	return out.Result
}

// TestModernApprovalRefusalsAcrossReplicas: the requestState refusals
// through two `serve --http` processes sharing Redis (no approvals.key), as
// two principals with their own tokens. A question asked on replica 0 and
// answered on replica 1 is refused there for another principal, changed
// arguments, a forged state and a decline, and sends nothing; the right
// accept sends the call once; the same accepted state replayed to replica
// 0, which did not spend it, is refused. Each refusal is an audit line with
// its principal and reason.
func TestModernApprovalRefusalsAcrossReplicas(t *testing.T) {
	bin := specgateBinary(t)
	up, log := petUpstream(t)
	rd := redistest.Start(t)
	dir := t.TempDir()
	extra := fmt.Sprintf(`http:
  auth:
    tokens:
      - {token: ada-token, subject: ada}
      - {token: bob-token, subject: bob}
  inbound: {requests_per_window: 1000000, tool_calls_per_window: 1000000}
store:
  backend: redis
  redis_url: %s
  key_prefix: "refusals:%d:"
`, rd.URL(), os.Getpid())
	rs, audits := startModernReplicas(t, bin, dir, up.URL, extra)

	pet := map[string]any{"endpointId": "petstore-v3.addPet", "requestBody": map[string]any{"name": "doggie", "photoUrls": []any{"https://x.test/1.png"}}}
	first := modernCall(t, rs[0].base, "ada-token", pet, "", nil)
	state, _ := first["requestState"].(string)
	if first["resultType"] != "input_required" || state == "" {
		t.Fatalf("first answer = %v, want input_required with a requestState", first)
	}
	accept := map[string]any{"approve": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}
	decline := map[string]any{"approve": map[string]any{"action": "decline"}}
	kitty := map[string]any{"endpointId": "petstore-v3.addPet", "requestBody": map[string]any{"name": "kitty", "photoUrls": []any{"https://x.test/1.png"}}}
	refusals := []struct {
		name, token, state, why string
		args                    map[string]any
		answer                  any
	}{
		{"another principal", "bob-token", state, "another caller", pet, accept},
		{"changed argument", "ada-token", state, "the arguments changed", kitty, accept},
		{"forged", "ada-token", "v1.eyJwIjoiYWRhIn0.c2ln", "not one specgate issued", pet, accept},
		{"declined", "ada-token", state, "the user declined", pet, decline},
	}
	notApproved := func(res map[string]any, why string) bool {
		content, _ := res["content"].([]any)
		if len(content) == 0 {
			return false
		}
		text, _ := content[0].(map[string]any)["text"].(string)
		return res["isError"] == true && strings.Contains(text, `"code":"not_approved"`) && strings.Contains(text, why)
	}
	for _, tt := range refusals {
		if res := modernCall(t, rs[1].base, tt.token, tt.args, tt.state, tt.answer); !notApproved(res, tt.why) {
			t.Errorf("%s: answer %v, want not_approved saying %q", tt.name, res, tt.why)
		}
	}
	if got := log.list(); len(got) != 0 {
		t.Fatalf("upstream got %v before the approval", got)
	}
	if res := modernCall(t, rs[1].base, "ada-token", pet, state, accept); res["isError"] == true || len(log.list()) != 1 {
		t.Fatalf("approved on the other replica = %v, upstream %v", res, log.list())
	}
	if res := modernCall(t, rs[0].base, "ada-token", pet, state, accept); !notApproved(res, "already used") {
		t.Errorf("replay to the replica that asked = %v, want not_approved, already used", res)
	}
	if got := log.list(); len(got) != 1 {
		t.Errorf("upstream got %v, want the one approved POST", got)
	}
	var refused int
	for _, f := range audits {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil || rec["outcome"] != "not_approved" {
				continue
			}
			refused++
			if rec["principal"] == nil || rec["approval"] == nil || rec["digest"] == nil || strings.Contains(line, "doggie") || strings.Contains(line, "kitty") {
				t.Errorf("refusal audit line %s: want principal, reason and digest, no values", line)
			}
		}
	}
	if refused != len(refusals)+1 {
		t.Errorf("%d refusals audited, want %d", refused, len(refusals)+1)
	}
}
