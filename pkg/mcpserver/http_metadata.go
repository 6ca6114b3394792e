package mcpserver

import (
	"encoding/json"
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
const wellKnownResource = "/.well-known/oauth-protected-resource"

// resourceMetadata is the document served at wellKnownResource.
type resourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// resource returns this server's canonical /mcp URL: the configured one, or
// else one built from the request's Host (the scheme from the connection,
// or X-Forwarded-Proto from a trusted proxy).
func (h *httpHandler) resource(r *http.Request) string {
	if h.opts.Resource != "" {
		return h.opts.Resource
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	} else if p := r.Header.Get("X-Forwarded-Proto"); (p == "https" || p == "http") && fromTrustedProxy(r, h.opts.TrustedProxies) {
		scheme = p
	}
	return scheme + "://" + r.Host + "/mcp"
}

// metadataURL returns the path-suffixed metadata URL of resource:
// https://host/mcp -> https://host/.well-known/oauth-protected-resource/mcp.
func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Host == "" {
		return wellKnownResource
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + wellKnownResource + path
}

func (h *httpHandler) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSONError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "use GET", 0)
		return
	}
	md := resourceMetadata{
		Resource:               h.resource(r),
		AuthorizationServers:   h.opts.AuthorizationServers,
		ScopesSupported:        h.opts.Scopes.names(),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           h.opts.ResourceName,
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

// challenge sets the WWW-Authenticate header of a 401 or 403. errCode is ""
// (no token was sent), "invalid_token" or "insufficient_scope"; scope names
// the missing scope of insufficient_scope.
func (h *httpHandler) challenge(w http.ResponseWriter, r *http.Request, errCode, scope string) {
	var b strings.Builder
	b.WriteString("Bearer ")
	if errCode != "" {
		b.WriteString(`error="` + errCode + `", `)
	}
	if scope != "" {
		b.WriteString(`scope="` + quoteSafe(scope) + `", `)
	}
	b.WriteString(`resource_metadata="` + quoteSafe(metadataURL(h.resource(r))) + `"`)
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

// fromTrustedProxy reports whether the request's peer is a trusted proxy.
func fromTrustedProxy(r *http.Request, trusted []netip.Prefix) bool {
	peer := remoteAddr(r)
	return peer.IsValid() && inPrefixes(peer, trusted)
}
