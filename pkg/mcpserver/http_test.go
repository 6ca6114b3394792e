package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/serve"
)

// t0 is a whole second, so the one-second slots of a one-minute window
// start on it and expected headers are exact.
var t0 = time.Unix(1_700_000_000, 0)

// testClock is a clock tests move by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

type httpFixture struct {
	srv      *Server
	ts       *httptest.Server
	clock    *testClock
	upstream *recorder
	// upstreamURL is the upstream's base, without /api/v3.
	upstreamURL string
	audit       *lockedBuffer
	limiter     *ratelimit.Limiter
}

// newHTTPFixture serves the petstore over HTTP with opts; cooldown is the
// cooldown of every endpoint (zero: none). opts.Now defaults to a test
// clock at t0.
func newHTTPFixture(t testing.TB, opts serve.Options, cooldown time.Duration) *httpFixture {
	t.Helper()
	return newHTTPFixtureOn(t, opts, cooldown, nil)
}

// newHTTPFixtureOn is newHTTPFixture with the limiter and the inbound
// windows on store (nil: memory).
func newHTTPFixtureOn(t testing.TB, opts serve.Options, cooldown time.Duration, store ratelimit.Store, server ...func(*Options)) *httpFixture {
	t.Helper()
	rec := &recorder{}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	cat, ix, eps := servedCatalog(t, cooldown, petstoreAt(t, up.URL))
	lo := ratelimit.Options{Endpoints: eps}
	if store != nil {
		lo.Store = store
		opts.Windows = serve.NewWindows(store, 0)
	}
	l, err := ratelimit.New(lo)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Degraded == nil {
		opts.Degraded = func() (bool, string) {
			d, _, why := l.Degraded()
			return d, why
		}
	}
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	audit := &lockedBuffer{}
	so := Options{SpecNames: []string{"petstore"}, Audit: audit, Caller: invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}}}
	for _, f := range server {
		f(&so)
	}
	srv := New(so)
	srv.Publish(cat, ix, nil)
	clock := &testClock{now: t0}
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	ts := httptest.NewServer(serve.NewHandler(srv, opts))
	t.Cleanup(ts.Close)
	return &httpFixture{srv: srv, ts: ts, clock: clock, upstream: rec, upstreamURL: up.URL, audit: audit, limiter: l}
}

// rpc returns a JSON-RPC request body.
func rpc(id int, method string, params any) string {
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	return string(mustJSON(m))
}

func toolsCall(id int, name string, args map[string]any) string {
	return rpc(id, "tools/call", map[string]any{"name": name, "arguments": args})
}

// post sends one raw MCP POST; hdr are extra headers ("Authorization" is
// set from token when token is not empty).
func (f *httpFixture) post(t testing.TB, token, body string, hdr ...string) (*http.Response, []byte) {
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
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

// rpcResult decodes a JSON-RPC answer, whether sent as JSON or as one SSE
// event.
func rpcResult(t testing.TB, data []byte) map[string]any {
	t.Helper()
	if i := bytes.Index(data, []byte("data: ")); i >= 0 && !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		data = data[i+len("data: "):]
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			data = data[:j]
		}
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not a JSON-RPC answer: %q", data)
	}
	return m
}

func expectStatus(t testing.TB, resp *http.Response, body []byte, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, want, body)
	}
}

func TestHTTPHandlerDefaultServesWithoutAuth(t *testing.T) {
	f := newHTTPFixture(t, serve.Options{}, 0)
	c, err := client.NewStreamableHttpClient(f.ts.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	initClient(t, c)
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) == 0 {
		t.Fatal("no tools")
	}
	resp, body := f.post(t, "", rpc(1, "tools/list", nil))
	expectStatus(t, resp, body, http.StatusOK)
	if resp.Header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("X-RateLimit-Limit set with no budget")
	}
}

func initClient(t testing.TB, c *client.Client) {
	t.Helper()
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
}

func TestHTTPRequestBudgetPerPrincipal(t *testing.T) {
	// Two tokens of alice@acme (a rotation) share a budget; alice@other has
	// her own.
	f := newHTTPFixture(t, serve.Options{
		Tokens: map[string]Principal{
			"tok-a1": {Subject: "alice", Org: "acme"},
			"tok-a2": {Subject: "alice", Org: "acme"},
			"tok-b":  {Subject: "alice", Org: "other"},
		},
		RequestsPerWindow: 3,
	}, 0)
	for i, tok := range []string{"tok-a1", "tok-a2", "tok-a1"} {
		resp, body := f.post(t, tok, rpc(i, "tools/list", nil))
		expectStatus(t, resp, body, http.StatusOK)
		if got, want := resp.Header.Get("X-RateLimit-Remaining"), strconv.Itoa(2-i); got != want {
			t.Errorf("request %d: X-RateLimit-Remaining %q, want %q", i, got, want)
		}
		if got := resp.Header.Get("X-RateLimit-Limit"); got != "3" {
			t.Errorf("X-RateLimit-Limit %q, want 3", got)
		}
	}
	f.clock.Set(t0.Add(500 * time.Millisecond))
	resp, body := f.post(t, "tok-a2", rpc(9, "tools/list", nil))
	expectStatus(t, resp, body, http.StatusTooManyRequests)
	// The three requests at t0 count until a whole minute has passed: the
	// next can go at t0+60s, 59.5s from now (Retry-After rounds up).
	for h, want := range map[string]string{
		"Retry-After":           "60",
		"X-RateLimit-Limit":     "3",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     strconv.FormatInt(t0.Unix()+60, 10),
		"Cache-Control":         "no-store",
		"Content-Type":          "application/json",
	} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	var env struct {
		Error struct {
			Code              string  `json:"code"`
			Message           string  `json:"message"`
			RetryAfterSeconds float64 `json:"retryAfterSeconds"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatal(err)
	}
	if env.Error.Code != "TOO_MANY_REQUESTS" || env.Error.RetryAfterSeconds != 59.5 || env.Error.Message == "" {
		t.Errorf("body %s", body)
	}
	if strings.Contains(string(body), "tok-") {
		t.Errorf("body names a token: %s", body)
	}

	// The same subject in another organisation has its own budget.
	resp, body = f.post(t, "tok-b", rpc(10, "tools/list", nil))
	expectStatus(t, resp, body, http.StatusOK)
	if got := resp.Header.Get("X-RateLimit-Remaining"); got != "2" {
		t.Errorf("alice@other: X-RateLimit-Remaining %q, want 2", got)
	}

	// Waiting exactly as long as told is enough.
	f.clock.Set(t0.Add(61 * time.Second))
	resp, body = f.post(t, "tok-a1", rpc(11, "tools/list", nil))
	expectStatus(t, resp, body, http.StatusOK)
}

func TestHTTPRefusedRequestIsNotProcessed(t *testing.T) {
	f := newHTTPFixture(t, serve.Options{
		Tokens:            map[string]Principal{"tok": {Subject: "bob"}},
		RequestsPerWindow: 1,
	}, 0)
	invoke := toolsCall(1, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}})
	resp, body := f.post(t, "tok", invoke)
	expectStatus(t, resp, body, http.StatusOK)
	resp, body = f.post(t, "tok", invoke)
	expectStatus(t, resp, body, http.StatusTooManyRequests)
	if got := f.upstream.count(); got != 1 {
		t.Errorf("upstream got %d requests, want 1", got)
	}
}

func TestHTTPToolCallBudget(t *testing.T) {
	f := newHTTPFixture(t, serve.Options{
		Tokens:             map[string]Principal{"tok": {Subject: "carol", Org: "acme"}},
		RequestsPerWindow:  100,
		ToolCallsPerWindow: 2,
	}, 10*time.Second)
	c, err := client.NewStreamableHttpClient(f.ts.URL+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer tok"}))
	if err != nil {
		t.Fatal(err)
	}
	initClient(t, c)
	// Other methods do not spend the tool-call budget.
	for range 5 {
		if _, err := c.ListTools(t.Context(), mcp.ListToolsRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	// A tools/call of invoke is counted and still pays the cooldown.
	args := map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}
	if res, isErr := callTool(t, c, "invoke", args); isErr {
		t.Fatalf("first invoke: %v", res)
	}
	res, isErr := callTool(t, c, "invoke", args)
	if !isErr {
		t.Fatalf("second invoke passed its cooldown: %v", res)
	}
	if e := errorOf(t, res); e["code"] != codes.RateLimit || e["limit"].(map[string]any)["kind"] != "cooldown" {
		t.Fatalf("second invoke: %v", e)
	}
	// The budget of two is spent: the third call, of any tool, is refused
	// with a tool error the model reads.
	res, isErr = callTool(t, c, "search", map[string]any{"query": "pet"})
	if !isErr {
		t.Fatalf("third call passed: %v", res)
	}
	e := errorOf(t, res)
	limit, _ := e["limit"].(map[string]any)
	if e["code"] != codes.RateLimit || e["scope"] != "proxy" || limit["kind"] != "principal" || limit["key"] != "carol@acme" ||
		e["retryAfterSeconds"] != 60.0 || e["retryable"] != true || e["hint"] == "" {
		t.Errorf("refusal %v", e)
	}
	if f.upstream.count() != 1 {
		t.Errorf("upstream got %d requests, want 1", f.upstream.count())
	}
	// Still answered over HTTP 200, and other methods still pass.
	resp, body := f.post(t, "tok", toolsCall(7, "search", map[string]any{"query": "pet"}))
	expectStatus(t, resp, body, http.StatusOK)
	if m := rpcResult(t, body); m["result"].(map[string]any)["isError"] != true {
		t.Errorf("raw tools/call: %s", body)
	}
	if _, err := c.ListTools(t.Context(), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	// The window passes.
	f.clock.Set(t0.Add(61 * time.Second))
	if res, isErr := callTool(t, c, "search", map[string]any{"query": "pet"}); isErr {
		t.Fatalf("after the window: %v", res)
	}
}

func TestHTTPAuditNamesPrincipal(t *testing.T) {
	f := newHTTPFixture(t, serve.Options{Tokens: map[string]Principal{"secret-tok": {Subject: "dave", Org: "acme"}}}, 0)
	resp, body := f.post(t, "secret-tok", toolsCall(1, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}))
	expectStatus(t, resp, body, http.StatusOK)
	log := f.audit.String()
	if !strings.Contains(log, `"principal":"dave@acme"`) || strings.Contains(log, "secret-tok") {
		t.Errorf("audit log %s", log)
	}
}

func TestHTTPFailedAuthThrottledPerIP(t *testing.T) {
	f := newHTTPFixture(t, serve.Options{
		Tokens: map[string]Principal{"good": {Subject: "erin"}},
		// The test client's peer is loopback: trust it to set the client
		// IP with X-Forwarded-For.
		TrustedProxies:      mustPrefixes("127.0.0.1/32", "::1/128"),
		FailedAuthPerWindow: 2,
	}, 0)
	from := func(ip string) []string { return []string{"X-Forwarded-For", ip} }
	list := rpc(1, "tools/list", nil)

	// Requests with no token are a plain 401 and never count.
	for range 5 {
		resp, body := f.post(t, "", list, from("203.0.113.7")...)
		expectStatus(t, resp, body, http.StatusUnauthorized)
		if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
			t.Errorf("WWW-Authenticate %q", got)
		}
	}
	for i := range 2 {
		resp, body := f.post(t, "bad", list, from("203.0.113.7")...)
		expectStatus(t, resp, body, http.StatusUnauthorized)
		if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, `error="invalid_token"`) {
			t.Errorf("attempt %d: WWW-Authenticate %q", i, got)
		}
	}
	resp, body := f.post(t, "bad", list, from("203.0.113.7")...)
	expectStatus(t, resp, body, http.StatusTooManyRequests)
	if resp.Header.Get("Retry-After") != "60" || !strings.Contains(string(body), "TOO_MANY_REQUESTS") {
		t.Errorf("throttled: Retry-After %q, body %s", resp.Header.Get("Retry-After"), body)
	}
	// A valid token from the throttled IP passes.
	resp, body = f.post(t, "good", list, from("203.0.113.7")...)
	expectStatus(t, resp, body, http.StatusOK)
	// No token from it is still a 401, not a 429.
	resp, body = f.post(t, "", list, from("203.0.113.7")...)
	expectStatus(t, resp, body, http.StatusUnauthorized)
	// Another IP is not throttled.
	resp, body = f.post(t, "bad", list, from("203.0.113.8")...)
	expectStatus(t, resp, body, http.StatusUnauthorized)

	// IPv6 counts by /64.
	for _, ip := range []string{"2001:db8:1:2::1", "2001:db8:1:2:aaaa::2"} {
		resp, body := f.post(t, "bad", list, from(ip)...)
		expectStatus(t, resp, body, http.StatusUnauthorized)
	}
	resp, body = f.post(t, "bad", list, from("2001:db8:1:2:ffff:ffff:ffff:ffff")...)
	expectStatus(t, resp, body, http.StatusTooManyRequests)
	resp, body = f.post(t, "bad", list, from("2001:db8:1:3::1")...)
	expectStatus(t, resp, body, http.StatusUnauthorized)

	// The window passes.
	f.clock.Set(t0.Add(61 * time.Second))
	resp, body = f.post(t, "bad", list, from("203.0.113.7")...)
	expectStatus(t, resp, body, http.StatusUnauthorized)
}

func TestHTTPForwardedForOnlyFromTrustedProxies(t *testing.T) {
	// Loopback is not trusted: X-Forwarded-For is ignored and every
	// failure counts against the peer, 127.0.0.1.
	f := newHTTPFixture(t, serve.Options{
		Tokens:              map[string]Principal{"good": {Subject: "erin"}},
		TrustedProxies:      mustPrefixes("10.0.0.0/8"),
		FailedAuthPerWindow: 1,
	}, 0)
	list := rpc(1, "tools/list", nil)
	resp, body := f.post(t, "bad", list, "X-Forwarded-For", "203.0.113.1")
	expectStatus(t, resp, body, http.StatusUnauthorized)
	resp, body = f.post(t, "bad", list, "X-Forwarded-For", "203.0.113.2")
	expectStatus(t, resp, body, http.StatusTooManyRequests)
}

func mustPrefixes(list ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(list))
	for i, s := range list {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func TestHTTPReadyzDegraded(t *testing.T) {
	var degraded atomic.Bool
	f := newHTTPFixture(t, serve.Options{Degraded: func() (bool, string) { return degraded.Load(), "redis unreachable" }}, 0)
	get := func(path string) (int, string) {
		resp, err := f.ts.Client().Get(f.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, `"status":"ready"`) {
		t.Errorf("ready: %d %s", code, body)
	}
	degraded.Store(true)
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, `"status":"degraded"`) || !strings.Contains(body, "redis unreachable") {
		t.Errorf("degraded: %d %s", code, body)
	}
	if _, body := get("/metrics"); !strings.Contains(body, "specgate_store_degraded 1") {
		t.Errorf("metrics do not say degraded")
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("healthz %d", code)
	}
}

func TestHTTPMetrics(t *testing.T) {
	f := newHTTPFixture(t, serve.Options{
		Tokens:            map[string]Principal{"tok": {Subject: "frank"}},
		RequestsPerWindow: 3,
	}, 0)
	var n atomic.Int32
	f.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 2 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":1}`))
	}
	call := toolsCall(1, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}})
	f.post(t, "tok", call)
	f.post(t, "tok", toolsCall(2, "invoke", map[string]any{"endpointId": "petstore.deletePet", "parameters": map[string]any{"petId": 1}}))
	f.post(t, "tok", toolsCall(3, "invoke", map[string]any{"endpointId": "petstore.nope"}))
	f.post(t, "tok", call) // over the request budget
	f.post(t, "", call)    // no token
	f.srv.Metrics().ObserveStoreError("admit")

	resp, err := f.ts.Client().Get(f.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	text := string(b)
	for _, want := range []string{
		`specgate_tool_calls_total{code="ok",endpoint="petstore.getPetById",scope="",tool="invoke"} 1`,
		`specgate_tool_calls_total{code="upstream_rate_limit",endpoint="petstore.deletePet",scope="upstream",tool="invoke"} 1`,
		`specgate_tool_calls_total{code="not_found",endpoint="unknown",scope="",tool="invoke"} 1`,
		`specgate_upstream_request_duration_seconds_count{upstream="127.0.0.1:`,
		`specgate_queue_wait_seconds_count{upstream="127.0.0.1:`,
		`specgate_queue_depth{upstream="127.0.0.1:`,
		`specgate_upstream_rate_limited_total{upstream="127.0.0.1:`,
		`specgate_inbound_refusals_total{reason="requests"} 1`,
		`specgate_inbound_refusals_total{reason="unauthenticated"} 1`,
		`specgate_store_errors_total{op="admit"} 1`,
		`specgate_http_requests_total{code="429"} 1`,
		`specgate_store_degraded 0`,
		"\ngo_goroutines ",
		"\nprocess_resident_memory_bytes ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

// TestHTTPBodyLimitIsSpecgatesOwn: mcp-go v1.6.0 bounds a POST body at 4
// MiB of its own, so with http.max_body_bytes above that a body specgate
// accepted was refused 413 by mcp-go. The bound is specgate's alone.
func TestHTTPBodyLimitIsSpecgatesOwn(t *testing.T) {
	f := newHTTPFixture(t, serve.Options{MaxBodyBytes: 8 << 20}, 0)
	big := toolsCall(1, "search", map[string]any{"query": "pets", "pad": strings.Repeat("x", 5<<20)})
	resp, body := f.post(t, "", big)
	if resp.StatusCode == http.StatusRequestEntityTooLarge {
		t.Errorf("a 5 MiB body under an 8 MiB bound: %d %.200s", resp.StatusCode, body)
	}
}
