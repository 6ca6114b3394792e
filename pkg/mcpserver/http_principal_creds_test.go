package mcpserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/serve"
	"github.com/specgate/specgate/pkg/spec"
)

// TestHTTPPerPrincipalUpstreamKeys: principals call the same endpoint over
// streamable HTTP with cache_ttl on; each call carries that principal's
// upstream key, an identical call by another principal goes upstream with
// that one's key (even when both are named ada@acme in logs), a repeat by
// the same principal is served from its cache, a principal without a key
// gets auth_error naming by_principal, and the upstream never sees the MCP
// bearer token.
func TestHTTPPerPrincipalUpstreamKeys(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":1,"name":"rex","photoUrls":[]}`))
	}))
	t.Cleanup(up.Close)
	cat, ix, eps := servedCatalog(t, 0, petstoreAt(t, up.URL))
	l, err := ratelimit.New(ratelimit.Options{Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	cl := invoke.New(invoke.Options{Specs: map[string]invoke.SpecOptions{"petstore": {
		Auth: map[string]invoke.Credential{"api_key": {ByPrincipal: []invoke.PrincipalCredential{
			{Subject: "ada", Org: "acme", Credential: invoke.Credential{Value: "ada-upstream-key"}},
			{Subject: "bob", Credential: invoke.Credential{Value: "bob-upstream-key"}},
			{Subject: "ada@acme", Credential: invoke.Credential{Value: "other-ada-upstream-key"}},
		}}},
	}}})
	t.Cleanup(cl.Close)
	srv := New(Options{SpecNames: []string{"petstore"},
		Caller: invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}, CacheTTL: func(*spec.Endpoint) time.Duration { return time.Hour }},
	})
	srv.Publish(cat, ix, nil)
	ts := httptest.NewServer(serve.NewHandler(srv, serve.Options{Tokens: map[string]Principal{
		"mcp-token-ada":   {Subject: "ada", Org: "acme"},
		"mcp-token-bob":   {Subject: "bob"},
		"mcp-token-carol": {Subject: "carol", Org: "acme"},
		// Named ada@acme too, but another principal: subject "ada@acme", no org.
		"mcp-token-other-ada": {Subject: "ada@acme"},
	}}))
	t.Cleanup(ts.Close)

	call := func(token string) *mcp.CallToolResult {
		t.Helper()
		c, err := client.NewStreamableHttpClient(ts.URL+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		initClient(t, c)
		req := mcp.CallToolRequest{}
		req.Params.Name = "invoke"
		req.Params.Arguments = map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}
		res, err := c.CallTool(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	text := func(r *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}

	cached := func(r *mcp.CallToolResult) bool {
		t.Helper()
		var out struct {
			Cached bool `json:"cached"`
		}
		if err := json.Unmarshal([]byte(text(r)), &out); err != nil {
			t.Fatal(err)
		}
		return out.Cached
	}
	for _, who := range []string{"ada", "bob", "other-ada"} {
		r := call("mcp-token-" + who)
		if r.IsError || cached(r) {
			t.Fatalf("%s: %s, want a fresh answer", who, text(r))
		}
	}
	// ada again: her own cached answer, nothing sent.
	if r := call("mcp-token-ada"); r.IsError || !cached(r) {
		t.Errorf("ada's repeat: %s, want her cached answer", text(r))
	}
	r := call("mcp-token-carol")
	if !r.IsError || !strings.Contains(text(r), "auth_error") || !strings.Contains(text(r), "specs[petstore].auth.api_key.by_principal") {
		t.Errorf("carol: %s, want auth_error naming specs[petstore].auth.api_key.by_principal", text(r))
	}

	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("upstream saw %d calls, want 3", len(seen))
	}
	for i, want := range []string{"ada-upstream-key", "bob-upstream-key", "other-ada-upstream-key"} {
		if got := seen[i].Get("api_key"); got != want {
			t.Errorf("call %d sent api_key %q, want %q", i, got, want)
		}
	}
	for i, h := range seen {
		for name, vals := range h {
			for _, v := range vals {
				if strings.Contains(v, "mcp-token") {
					t.Errorf("call %d: the upstream saw the MCP token in %s", i, name)
				}
			}
		}
	}
}
