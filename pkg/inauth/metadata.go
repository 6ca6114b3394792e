package inauth

import (
	"encoding/json"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// The RFC 9728 protected resource metadata: how an MCP client learns which
// authorization server issues tokens for this server. It is served without
// authentication at both the root well-known URL and the path-suffixed one
// (the form RFC 9728 §3.1 derives from the resource /mcp), and every 401
// names the path-suffixed URL.
const WellKnownResource = "/.well-known/oauth-protected-resource"

// Metadata describes this server as an OAuth protected resource: it serves
// the RFC 9728 document (ServeHTTP) and writes the WWW-Authenticate
// challenge of a 401 or 403 (Challenge). Read-only once built, so safe for
// concurrent use.
type Metadata struct {
	// Resource is this server's canonical /mcp URL. If empty, built from
	// each request's Host.
	Resource string
	// AuthorizationServers are the issuers the document names. If empty,
	// none.
	AuthorizationServers []string
	// ResourceName is the document's resource_name. If empty, "specgate".
	ResourceName string
	// Scopes are listed as scopes_supported.
	Scopes Scopes
	// TrustedProxies are the peers whose X-Forwarded-Proto is believed.
	TrustedProxies []netip.Prefix
}

// resourceMetadata is the document served at WellKnownResource.
type resourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// ResourceOf returns this server's canonical /mcp URL: the configured one, or
// else one built from the request's Host (the scheme from the connection,
// or X-Forwarded-Proto from a trusted proxy).
func (m *Metadata) ResourceOf(r *http.Request) string {
	if m.Resource != "" {
		return m.Resource
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	} else if p := r.Header.Get("X-Forwarded-Proto"); (p == "https" || p == "http") && fromTrustedProxy(r, m.TrustedProxies) {
		scheme = p
	}
	return scheme + "://" + r.Host + "/mcp"
}

// metadataURL returns the path-suffixed metadata URL of resource:
// https://host/mcp -> https://host/.well-known/oauth-protected-resource/mcp.
func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Host == "" {
		return WellKnownResource
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + WellKnownResource + path
}

// ServeHTTP serves the document, without authentication.
func (m *Metadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		WriteError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "use GET", 0)
		return
	}
	md := resourceMetadata{
		Resource:               m.ResourceOf(r),
		AuthorizationServers:   m.AuthorizationServers,
		ScopesSupported:        m.Scopes.Names(),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           m.ResourceName,
	}
	if md.ResourceName == "" {
		md.ResourceName = "specgate"
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "public, max-age=300")
	// Browser-based MCP clients read this document cross-origin; it holds
	// nothing secret and changes nothing.
	hd.Set("Access-Control-Allow-Origin", "*")
	json.NewEncoder(w).Encode(md)
}

// Challenge sets the WWW-Authenticate header of a 401 or 403. errCode is ""
// (no token was sent), "invalid_token" or "insufficient_scope"; scope names
// the missing scope of insufficient_scope.
func (m *Metadata) Challenge(w http.ResponseWriter, r *http.Request, errCode, scope string) {
	var b strings.Builder
	b.WriteString("Bearer ")
	if errCode != "" {
		b.WriteString(`error="` + errCode + `", `)
	}
	if scope != "" {
		b.WriteString(`scope="` + quoteSafe(scope) + `", `)
	}
	b.WriteString(`resource_metadata="` + quoteSafe(metadataURL(m.ResourceOf(r))) + `"`)
	w.Header().Set("WWW-Authenticate", b.String())
}

// quoteSafe drops what would end or escape an auth-param's quoted string;
// the values come from the config or the Host header.
func quoteSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// WriteError answers an HTTP refusal with specgate's JSON error body:
// {"error": {code, message, retryAfterSeconds}}.
func WriteError(w http.ResponseWriter, status int, code, msg string, retryAfter float64) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]httpError{"error": {Code: code, Message: msg, RetryAfterSeconds: math.Round(retryAfter*1000) / 1000}})
}

type httpError struct {
	Code              string  `json:"code"`
	Message           string  `json:"message"`
	RetryAfterSeconds float64 `json:"retryAfterSeconds,omitempty"`
}
