package serve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/inauth"
)

// newIssuer serves RFC 8414 authorization server metadata on loopback.
func newIssuer(t testing.TB) *httptest.Server {
	t.Helper()
	var iss *httptest.Server
	iss = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/oauth-authorization-server" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"issuer":                 iss.URL,
			"authorization_endpoint": iss.URL + "/authorize",
			"token_endpoint":         iss.URL + "/token",
			"jwks_uri":               iss.URL + "/jwks",
		})
	}))
	t.Cleanup(iss.Close)
	return iss
}

func getJSON(t testing.TB, url string) (*http.Response, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp, m
}

func TestHTTPProtectedResourceMetadata(t *testing.T) {
	f := newStubServer(t, Options{
		Tokens:               map[string]inauth.Principal{"good": {Subject: "ada"}},
		Resource:             "https://mcp.example.com/mcp",
		AuthorizationServers: []string{"https://id.example"},
		Scopes:               inauth.Scopes{Read: "specgate:read", Invoke: "specgate:invoke"},
	})
	want := map[string]any{
		"resource":                 "https://mcp.example.com/mcp",
		"authorization_servers":    []any{"https://id.example"},
		"scopes_supported":         []any{"specgate:read", "specgate:invoke"},
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "specgate",
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, got := getJSON(t, f.ts.URL+path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", path, diff)
		}
	}

	const md = `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`
	tests := []struct {
		name, token, want string
	}{
		{"no token", "", "Bearer " + md},
		{"refused token", "wrong", `Bearer error="invalid_token", ` + md},
		{"not a JWT", "a.b", `Bearer error="invalid_token", ` + md},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.post(t, tt.token, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			expectStatus(t, resp, body, http.StatusUnauthorized)
			if got := resp.Header.Get("WWW-Authenticate"); got != tt.want {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHTTPMetadataResourceFromHost(t *testing.T) {
	f := newStubServer(t, Options{Tokens: map[string]inauth.Principal{"good": {Subject: "ada"}}})
	_, got := getJSON(t, f.ts.URL+"/.well-known/oauth-protected-resource/mcp")
	if got["resource"] != f.ts.URL+"/mcp" {
		t.Errorf("resource = %v, want %s/mcp", got["resource"], f.ts.URL)
	}
	resp, body := f.post(t, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	expectStatus(t, resp, body, http.StatusUnauthorized)
	want := `Bearer resource_metadata="` + f.ts.URL + `/.well-known/oauth-protected-resource/mcp"`
	if got := resp.Header.Get("WWW-Authenticate"); got != want {
		t.Errorf("WWW-Authenticate = %q, want %q", got, want)
	}
}

// TestMCPGoOAuthClientDiscoversIssuer checks the metadata against a real
// MCP client: mcp-go follows the 401's resource_metadata, checks that the
// document's resource is the URL it addressed, and finds the issuer's
// endpoints.
func TestMCPGoOAuthClientDiscoversIssuer(t *testing.T) {
	iss := newIssuer(t)
	srv := newStub()
	ts := httptest.NewUnstartedServer(nil)
	resource := "http://" + ts.Listener.Addr().String() + "/mcp"
	ts.Config.Handler = NewHandler(srv, Options{
		Tokens:               map[string]inauth.Principal{"good": {Subject: "ada"}},
		Resource:             resource,
		AuthorizationServers: []string{iss.URL},
	})
	ts.Start()
	t.Cleanup(ts.Close)

	c, err := client.NewOAuthStreamableHttpClient(resource, client.OAuthConfig{
		ClientID:    "specgate-test",
		RedirectURI: "http://127.0.0.1:1/callback",
		PKCEEnabled: true,
		TokenStore:  client.NewMemoryTokenStore(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err = c.Initialize(t.Context(), mcp.InitializeRequest{})
	if !client.IsOAuthAuthorizationRequiredError(err) {
		t.Fatalf("Initialize without a token: %v, want an OAuth authorization required error", err)
	}
	h := client.GetOAuthHandler(err)
	md, err := h.GetServerMetadata(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if md.Issuer != iss.URL || md.AuthorizationEndpoint != iss.URL+"/authorize" || md.TokenEndpoint != iss.URL+"/token" {
		t.Errorf("discovered metadata = %+v, want the issuer at %s", md, iss.URL)
	}
	authURL, err := h.GetAuthorizationURL(t.Context(), "state", "challenge")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(authURL, iss.URL+"/authorize?") || !strings.Contains(authURL, "resource="+strings.ReplaceAll(strings.ReplaceAll(resource, ":", "%3A"), "/", "%2F")) {
		t.Errorf("authorization URL %q does not go to the issuer for resource %s", authURL, resource)
	}
}

func TestHTTPMetricsToken(t *testing.T) {
	f := newStubServer(t, Options{MetricsToken: "scrape-secret"})
	for _, tt := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {"wrong", http.StatusUnauthorized}, {"scrape-secret", http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/metrics", nil)
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("token %q: status %d, want %d", tt.token, resp.StatusCode, tt.want)
		}
	}
}
