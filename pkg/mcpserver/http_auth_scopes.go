package mcpserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Scopes names the OAuth scopes specgate checks. With all three empty,
// scopes are not checked: any valid token may call any tool.
type Scopes struct {
	// Read covers search, inspect, rate_limit_status, read_response,
	// begin_task, end_task and GET/HEAD invokes.
	Read string
	// Invoke covers what Read covers and every other invoke.
	Invoke string
	// Admin covers set_rate_limit.
	Admin string
}

func (s Scopes) enabled() bool { return s.Read != "" || s.Invoke != "" || s.Admin != "" }

// names lists the configured scope names, for the metadata.
func (s Scopes) names() []string {
	var out []string
	for _, n := range []string{s.Read, s.Invoke, s.Admin} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// has reports whether granted holds the scope need, or one that covers it:
// Invoke covers Read.
func (s Scopes) has(granted []string, need string) bool {
	for _, g := range granted {
		if g == need || (need == s.Read && g == s.Invoke && s.Invoke != "") {
			return true
		}
	}
	return false
}

// readTools are the tools the read scope covers (besides GET/HEAD invokes).
var readTools = map[string]bool{
	"search": true, "inspect": true, "rate_limit_status": true, "read_response": true,
	"begin_task": true, "end_task": true,
}

// neededScopes returns the scopes a JSON-RPC message (or each message of a
// batch) needs; none when any valid token may send it. Only tools/call is gated: initialize,
// the lists and ping are open to every valid token.
func (h *httpHandler) neededScopes(body []byte) []string {
	sc := h.opts.Scopes
	var msgs []json.RawMessage
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		if json.Unmarshal(t, &msgs) != nil {
			return nil
		}
	} else {
		msgs = []json.RawMessage{body}
	}
	var need []string
	for _, m := range msgs {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					EndpointID string `json:"endpointId"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(m, &msg) != nil || msg.Method != string(mcp.MethodToolsCall) {
			continue
		}
		n := sc.Invoke
		switch name := msg.Params.Name; {
		case name == "set_rate_limit":
			n = sc.Admin
		case readTools[name]:
			n = sc.Read
		case name == "invoke" && h.readOnlyEndpoint(msg.Params.Arguments.EndpointID):
			n = sc.Read
		}
		if n != "" {
			need = append(need, n)
		}
	}
	return need
}

// readOnlyEndpoint reports whether id names a GET or HEAD endpoint of the
// served catalog. An unknown id is not read-only: the invoke scope it then
// needs refuses nothing a read-only token could have done.
func (h *httpHandler) readOnlyEndpoint(id string) bool {
	st := h.s.state.Load()
	if st == nil || st.cat == nil || id == "" {
		return false
	}
	e, ok := st.cat.Lookup(id)
	if !ok {
		return false
	}
	m := strings.ToUpper(e.Method)
	return m == http.MethodGet || m == http.MethodHead
}

// checkScope answers 403 insufficient_scope when p lacks what body needs.
func (h *httpHandler) checkScope(w http.ResponseWriter, r *http.Request, p Principal, body []byte) bool {
	if !h.opts.Scopes.enabled() || !h.auth {
		return true
	}
	need := ""
	for _, n := range h.neededScopes(body) {
		if !h.opts.Scopes.has(p.Scopes, n) {
			need = n
			break
		}
	}
	if need == "" {
		return true
	}
	h.s.metrics.refused("insufficient_scope")
	h.challenge(w, r, "insufficient_scope", need)
	writeJSONError(w, http.StatusForbidden, "INSUFFICIENT_SCOPE", "this call needs the scope "+need+"; get a token that carries it", 0)
	return false
}
