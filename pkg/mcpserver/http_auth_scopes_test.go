package mcpserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/serve"
)

var testScopes = inauth.Scopes{Read: "specgate:read", Invoke: "specgate:invoke", Admin: "specgate:admin"}

// scopesFixture serves the petstore over HTTP with scopes, runtime tuning
// on, and three tokens: read, invoke, and none at all.
func scopesFixture(t *testing.T) *httpFixture {
	t.Helper()
	return newHTTPFixtureOn(t, serve.Options{
		Tokens: map[string]Principal{
			"reader":  {Subject: "rita", Scopes: []string{"specgate:read"}},
			"invoker": {Subject: "ivan", Scopes: []string{"specgate:invoke"}},
			"admin":   {Subject: "adam", Scopes: []string{"specgate:invoke", "specgate:admin"}},
			"nobody":  {Subject: "nora"},
		},
		Resource: "https://mcp.example.com/mcp",
		Scopes:   testScopes,
	}, 0, nil, func(o *Options) { o.AllowRuntimeTuning = true })
}

func TestHTTPScopes(t *testing.T) {
	sc := testScopes
	f := scopesFixture(t)
	getPet := map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}
	addPet := map[string]any{"endpointId": "petstore.addPet", "requestBody": map[string]any{"name": "rex", "photoUrls": []any{}}}
	tests := []struct {
		name, token, body string
		missing           string // "": allowed
	}{
		{"any token lists tools", "nobody", rpc(1, "tools/list", nil), ""},
		{"any token pings", "nobody", rpc(1, "ping", nil), ""},
		{"search needs read", "nobody", toolsCall(1, "search", map[string]any{"query": "pet"}), sc.Read},
		{"reader searches", "reader", toolsCall(1, "search", map[string]any{"query": "pet"}), ""},
		{"reader inspects", "reader", toolsCall(1, "inspect", map[string]any{"endpointId": "petstore.addPet"}), ""},
		{"reader GETs", "reader", toolsCall(1, "invoke", getPet), ""},
		{"reader may not POST", "reader", toolsCall(1, "invoke", addPet), sc.Invoke},
		{"reader may not invoke an unknown endpoint", "reader", toolsCall(1, "invoke", map[string]any{"endpointId": "nope.nope"}), sc.Invoke},
		{"batch with a POST", "reader", "[" + toolsCall(1, "search", map[string]any{"query": "pet"}) + "," + toolsCall(2, "invoke", addPet) + "]", sc.Invoke},
		{"invoker searches", "invoker", toolsCall(1, "search", map[string]any{"query": "pet"}), ""},
		{"invoker POSTs", "invoker", toolsCall(1, "invoke", addPet), ""},
		{"set_rate_limit needs admin", "invoker", toolsCall(1, "set_rate_limit", map[string]any{}), sc.Admin},
		{"set_rate_limit needs admin, not read", "reader", toolsCall(1, "set_rate_limit", map[string]any{}), sc.Admin},
		{"set_rate_limit of a no-scope token", "nobody", toolsCall(1, "set_rate_limit", map[string]any{}), sc.Admin},
		{"admin tunes", "admin", toolsCall(1, "set_rate_limit", map[string]any{"endpointId": "petstore.getPetById", "rateLimitInterval": "0s"}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.upstream.count()
			resp, body := f.post(t, tt.token, tt.body)
			if tt.missing == "" {
				expectStatus(t, resp, body, http.StatusOK)
				return
			}
			expectStatus(t, resp, body, http.StatusForbidden)
			want := `Bearer error="insufficient_scope", scope="` + tt.missing + `", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`
			if got := resp.Header.Get("WWW-Authenticate"); got != want {
				t.Errorf("WWW-Authenticate = %q, want %q", got, want)
			}
			if !strings.Contains(string(body), "INSUFFICIENT_SCOPE") {
				t.Errorf("body %s", body)
			}
			if got := f.upstream.count(); got != before {
				t.Errorf("a refused call reached the upstream")
			}
		})
	}
}

// TestHTTPScopesAmbiguousKeysRefused: a read-only or no-scope token ran
// POSTs and set_rate_limit by writing keys twice, or in another case,
// so that the scope check and the handler read different calls. Every
// such message is refused whole with a JSON-RPC error, and nothing is sent
// or tuned.
func TestHTTPScopesAmbiguousKeysRefused(t *testing.T) {
	f := scopesFixture(t)
	const post = `"endpointId":"petstore.addPet","requestBody":{"name":"rex","photoUrls":[]}`
	const get = `"endpointId":"petstore.getPetById","parameters":{"petId":1}`
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{` + params + `}}`
	}
	tune := `"upstream":"` + HostKey(f.upstreamURL) + `","requestsPerWindow":1,"window":"24h"`
	tests := []struct {
		name, body string
		code       float64
	}{
		{"case-variant twin of endpointId", call(`"name":"invoke","arguments":{` + post + `,"EndpointID":"petstore.getPetById"}`), mcp.INVALID_PARAMS},
		{"long-s twin of requestBody", call(`"name":"invoke","arguments":{` + get + `,"requeſtBody":{"a":1},"requestBody":{"a":2}}`), mcp.INVALID_PARAMS},
		{"Kelvin-sign twin of a key", call(`"name":"end_task","arguments":{"taskId":"task-1","tas` + "\u212a" + `Id":"task-2"}`), mcp.INVALID_PARAMS},
		{"case-variant twin before the real key", call(`"name":"invoke","arguments":{"EndpointID":"petstore.getPetById",` + post + `}`), mcp.INVALID_PARAMS},
		{"mistyped twin before the real key", call(`"name":"invoke","arguments":{"endpointID":"petstore.getPetById",` + post + `}`), mcp.INVALID_PARAMS},
		{"duplicate endpointId, GET last", call(`"name":"invoke","arguments":{` + post + `,` + get + `}`), mcp.INVALID_PARAMS},
		{"duplicate endpointId, POST last", call(`"name":"invoke","arguments":{` + get + `,"endpointId":"petstore.addPet"}`), mcp.INVALID_PARAMS},
		{"duplicate key deep in the body", call(`"name":"invoke","arguments":{` + get + `,"requestBody":{"a":1,"a":2}}`), mcp.INVALID_PARAMS},
		{"mistyped Arguments before arguments", call(`"name":"set_rate_limit","Arguments":7,"arguments":{` + tune + `}`), mcp.INVALID_PARAMS},
		{"arguments twice", call(`"name":"invoke","arguments":{` + get + `},"arguments":{` + post + `}`), mcp.INVALID_PARAMS},
		{"name twice", call(`"name":"search","name":"set_rate_limit","arguments":{` + tune + `}`), mcp.INVALID_PARAMS},
		{"Name in another case", call(`"Name":"set_rate_limit","arguments":{` + tune + `}`), mcp.INVALID_PARAMS},
		{"params twice", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}},"params":{"name":"invoke","arguments":{` + post + `}}}`, mcp.INVALID_REQUEST},
		{"Method in another case", `{"jsonrpc":"2.0","id":7,"Method":"tools/call","params":{"name":"invoke","arguments":{` + post + `}}}`, mcp.INVALID_REQUEST},
	}
	for _, token := range []string{"reader", "nobody"} {
		for _, tt := range tests {
			t.Run(token+"/"+tt.name, func(t *testing.T) {
				before := f.upstream.count()
				resp, body := f.post(t, token, tt.body)
				expectStatus(t, resp, body, http.StatusBadRequest)
				m := rpcResult(t, body)
				e, _ := m["error"].(map[string]any)
				if e == nil || e["code"] != tt.code || !strings.Contains(e["message"].(string), "key") {
					t.Fatalf("answer %s, want JSON-RPC error %v naming the key", body, tt.code)
				}
				if m["id"] != float64(7) {
					t.Errorf("id = %v, want 7", m["id"])
				}
				if got := f.upstream.count(); got != before {
					t.Errorf("the upstream saw %d requests", got-before)
				}
			})
		}
	}
	// No tuning took effect: three GETs in a row all reach the upstream.
	before := f.upstream.count()
	for i := range 3 {
		resp, body := f.post(t, "reader", toolsCall(10+i, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}))
		expectStatus(t, resp, body, http.StatusOK)
		if strings.Contains(string(body), `"isError":true`) {
			t.Fatalf("GET %d refused: %s", i, body)
		}
	}
	if got := f.upstream.count() - before; got != 3 {
		t.Errorf("the upstream saw %d of 3 GETs: a budget was tuned", got)
	}
	for _, r := range f.upstream.requests {
		if r.Method != http.MethodGet {
			t.Errorf("the upstream saw a %s %s", r.Method, r.Path)
		}
	}
}

// TestHTTPScopesLoneNonExactKey: a key in another case without its twin is
// no argument of the tool: validation_failed naming the right one, not a
// GET read as a POST or the other way round.
func TestHTTPScopesLoneNonExactKey(t *testing.T) {
	f := scopesFixture(t)
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"invoke","arguments":{"EndpointID":"petstore.addPet","requestBody":{"name":"rex","photoUrls":[]}}}}`
	resp, out := f.post(t, "reader", body)
	expectStatus(t, resp, out, http.StatusOK)
	if !strings.Contains(string(out), "validation_failed") || !strings.Contains(string(out), `did you mean endpointId`) {
		t.Fatalf("answer %s, want validation_failed naming endpointId", out)
	}
	if f.upstream.count() != 0 {
		t.Error("the call reached the upstream")
	}
}

// TestScopeCheckedInTheCallPath: the scope is checked on the arguments the
// handler runs with, whatever a transport checked before: a message that
// reaches the tools with a read-only grant cannot POST.
func TestScopeCheckedInTheCallPath(t *testing.T) {
	f := scopesFixture(t)
	ctx := inauth.WithGrant(t.Context(), testScopes, []string{"specgate:read"})
	call := func(name string, args string) map[string]any {
		msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
		out := f.srv.MCP().HandleMessage(ctx, json.RawMessage(msg))
		var m map[string]any
		if err := json.Unmarshal(mustJSON(out), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []struct{ name, args, want string }{
		{"invoke", `{"endpointId":"petstore.addPet","requestBody":{"name":"rex","photoUrls":[]}}`, "specgate:invoke"},
		{"set_rate_limit", `{"endpointId":"petstore.getPetById","rateLimitInterval":"1h"}`, "specgate:admin"},
	} {
		m := call(c.name, c.args)
		res, _ := m["result"].(map[string]any)
		if res == nil || res["isError"] != true || !strings.Contains(string(mustJSON(res)), "auth_error") || !strings.Contains(string(mustJSON(res)), c.want) {
			t.Errorf("%s: %s, want auth_error naming %s", c.name, mustJSON(m), c.want)
		}
	}
	if f.upstream.count() != 0 {
		t.Error("a refused call reached the upstream")
	}
	m := call("invoke", `{"endpointId":"petstore.getPetById","parameters":{"petId":1}}`)
	if res, _ := m["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Errorf("a GET with the read scope: %s", mustJSON(m))
	}
	if f.upstream.count() != 1 {
		t.Errorf("the upstream saw %d requests, want the one GET", f.upstream.count())
	}
}

// TestTasksBelongToTheirPrincipal: tasks were one map for every caller, so
// a read token ended another principal's task and read its review, an open
// task counted everyone's calls, and 64 begin_task calls from one token
// shut begin_task for all.
func TestTasksBelongToTheirPrincipal(t *testing.T) {
	f := scopesFixture(t)
	result := func(token, body string) map[string]any {
		t.Helper()
		resp, out := f.post(t, token, body)
		expectStatus(t, resp, out, http.StatusOK)
		res, _ := rpcResult(t, out)["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		if sc == nil {
			t.Fatalf("answer %s", out)
		}
		return sc
	}
	spy := result("reader", toolsCall(1, "begin_task", map[string]any{"name": "spy"}))["taskId"]
	mine := result("invoker", toolsCall(2, "begin_task", map[string]any{"name": "mine"}))["taskId"]
	result("invoker", toolsCall(3, "invoke", map[string]any{"endpointId": "petstore.addPet", "requestBody": map[string]any{"name": "rex", "photoUrls": []any{}}}))

	if e, _ := result("reader", toolsCall(4, "end_task", map[string]any{"taskId": mine}))["error"].(map[string]any); e == nil || e["code"] != "not_found" {
		t.Errorf("the reader ended the invoker's task: %v", e)
	}
	if r := result("reader", toolsCall(5, "end_task", map[string]any{"taskId": spy})); r["calls"] != float64(0) {
		t.Errorf("the reader's task counted another principal's calls: %v", r)
	}
	if r := result("invoker", toolsCall(6, "end_task", map[string]any{"taskId": mine})); r["calls"] != float64(1) {
		t.Errorf("the invoker's task: %v, want its 1 call", r)
	}
	for i := range maxTasksPerPrincipal + 1 {
		result("reader", toolsCall(10+i, "begin_task", map[string]any{"name": "flood"}))
	}
	if r := result("invoker", toolsCall(99, "begin_task", map[string]any{"name": "after"})); r["taskId"] == nil {
		t.Errorf("one principal's open tasks shut begin_task for another: %v", r)
	}
}
