package mcpserver

import (
	"net/http"
	"strings"
	"testing"
)

func TestHTTPScopes(t *testing.T) {
	sc := Scopes{Read: "specgate:read", Invoke: "specgate:invoke", Admin: "specgate:admin"}
	f := newHTTPFixture(t, HTTPOptions{
		Tokens: map[string]Principal{
			"reader":  {Subject: "rita", Scopes: []string{"specgate:read"}},
			"invoker": {Subject: "ivan", Scopes: []string{"specgate:invoke"}},
			"nobody":  {Subject: "nora"},
		},
		Resource: "https://mcp.example.com/mcp",
		Scopes:   sc,
	}, 0)
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
