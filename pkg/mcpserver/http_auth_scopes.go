package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

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

// name is the scope name that covers need; "" when none is configured for
// it, and then nothing is checked.
func (s Scopes) name(need Scope) string {
	switch need {
	case ScopeRead:
		return s.Read
	case ScopeInvoke:
		return s.Invoke
	case ScopeAdmin:
		return s.Admin
	}
	return ""
}

// precheck reads a POST body as the tool path will: it refuses any message
// or client's answer that two readers could read differently (a JSON-RPC
// error; an elicitation's answer {"approve": false, "approve": true}, or
// {"action": "decline", "Action": "accept"}, was taken as consent), and
// for each tools/call decodes the arguments with the tool's own decode and
// finds the scope they need. A
// single tools/call's decoded arguments come back in call, for the handler
// to run with.
func (h *httpHandler) precheck(body []byte) (need []Scope, call *decodedCall, rpcErr *rpcError) {
	t := bytes.TrimSpace(body)
	var msgs []json.RawMessage
	batch := len(t) > 0 && t[0] == '['
	if batch {
		if json.Unmarshal(t, &msgs) != nil {
			return nil, nil, nil // mcp-go answers the parse error
		}
	} else {
		msgs = []json.RawMessage{t}
	}
	for _, m := range msgs {
		_, err := checkKeys(m, levelEnvelope)
		if errors.Is(err, errNotJSON) {
			return nil, nil, nil // mcp-go answers the parse error
		}
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(m, &env)
		// A message without a method is the client's answer to a request
		// of specgate's: an elicitation's answer is the user's consent to a
		// write, read as strictly as a 2026-07-28 call's inputResponses.
		isAnswer := env.Method == ""
		var kp *keyProblem
		if errors.As(err, &kp) {
			code := mcp.INVALID_PARAMS
			if kp.lvl == levelEnvelope || isAnswer {
				code = mcp.INVALID_REQUEST
			}
			return nil, nil, &rpcError{id: env.ID, code: code, msg: kp.msg + ": write each key once, in its documented case"}
		}
		if env.Method != string(mcp.MethodToolsCall) {
			continue
		}
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(env.Params, &p) != nil {
			continue // mcp-go refuses it before any tool runs
		}
		tl := h.s.table[p.Name]
		if tl == nil {
			continue // not a tool: mcp-go answers that
		}
		args, bad := tl.decode(unwrapArguments(p.Arguments))
		if bad != nil {
			continue // the handler refuses it identically, before it runs
		}
		need = append(need, tl.scope(h.s, args))
		if !batch {
			call = &decodedCall{name: p.Name, args: args}
		}
	}
	return need, call, nil
}

// rpcError is a JSON-RPC error the transport answers itself.
type rpcError struct {
	id   json.RawMessage
	code int
	msg  string
}

func (e *rpcError) write(w http.ResponseWriter) {
	id := e.id
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": e.code, "message": e.msg}})
}

// checkScope answers 403 insufficient_scope when p lacks what the calls
// of a body need.
func (h *httpHandler) checkScope(w http.ResponseWriter, r *http.Request, p Principal, need []Scope) bool {
	if !h.opts.Scopes.enabled() || !h.auth {
		return true
	}
	missing := ""
	for _, n := range need {
		if name := h.opts.Scopes.name(n); name != "" && !h.opts.Scopes.has(p.Scopes, name) {
			missing = name
			break
		}
	}
	if missing == "" {
		return true
	}
	h.s.metrics.refused("insufficient_scope")
	h.challenge(w, r, "insufficient_scope", missing)
	writeJSONError(w, http.StatusForbidden, "INSUFFICIENT_SCOPE", "this call needs the scope "+missing+"; get a token that carries it", 0)
	return false
}
