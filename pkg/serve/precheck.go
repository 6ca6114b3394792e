package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/rpcmsg"
)

// precheck reads a POST body once, as the tool path will: it refuses any
// message or client's answer that two readers could read differently (a
// JSON-RPC error; an elicitation's answer {"approve": false, "approve":
// true}, or {"action": "decline", "Action": "accept"}, was taken as
// consent), and for each tools/call has the Backend decode the arguments
// with the tool's own decode and name the scope they need. A single
// message comes back read, in m, and a single tools/call's decoded
// arguments in ctx, for the tool to run with; a batch (which mcp-go
// refuses) or a body that is not JSON (mcp-go answers the parse error)
// gives no m.
func (h *handler) precheck(ctx context.Context, body []byte) (m *rpcmsg.Message, need []inauth.Scope, _ context.Context, _ *rpcError) {
	t := bytes.TrimSpace(body)
	if len(t) > 0 && t[0] == '[' {
		var msgs []json.RawMessage
		if json.Unmarshal(t, &msgs) != nil {
			return nil, nil, ctx, nil
		}
		for _, raw := range msgs {
			bm, err := rpcmsg.Read(raw)
			if err != nil {
				return nil, nil, ctx, problemError(raw, err)
			}
			if _, scope, ok := h.prepare(ctx, bm); ok {
				need = append(need, scope)
			}
		}
		return nil, need, ctx, nil
	}
	m, err := rpcmsg.Read(body)
	if err != nil {
		return nil, nil, ctx, problemError(body, err)
	}
	if pctx, scope, ok := h.prepare(ctx, m); ok {
		need, ctx = append(need, scope), pctx
	}
	return m, need, ctx, nil
}

// prepare has the Backend decode a tools/call's arguments.
func (h *handler) prepare(ctx context.Context, m *rpcmsg.Message) (context.Context, inauth.Scope, bool) {
	if m.Method != string(mcp.MethodToolsCall) {
		return ctx, inauth.ScopeNone, false
	}
	return h.b.PrepareCall(ctx, m)
}

// problemError is the JSON-RPC error answering a message with a key
// problem; nil for one that is not JSON (mcp-go answers the parse error).
func problemError(msg []byte, err error) *rpcError {
	var kp *rpcmsg.KeyProblem
	if !errors.As(err, &kp) {
		return nil
	}
	// Only a refusal reads the envelope again, as encoding/json reads it,
	// to answer the id a client that wrote a key twice will look for.
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(msg, &env)
	// A message without a method is the client's answer to a request of
	// specgate's: an elicitation's answer is the user's consent to a
	// write, read as strictly as a 2026-07-28 call's inputResponses.
	code := mcp.INVALID_PARAMS
	if kp.Level == rpcmsg.LevelEnvelope || env.Method == "" {
		code = mcp.INVALID_REQUEST
	}
	return &rpcError{id: env.ID, code: code, msg: kp.Msg + ": write each key once, in its documented case"}
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
func (h *handler) checkScope(w http.ResponseWriter, r *http.Request, p inauth.Principal, need []inauth.Scope) bool {
	if !h.opts.Scopes.Enabled() || !h.auth {
		return true
	}
	missing := ""
	for _, n := range need {
		if missing = h.opts.Scopes.Missing(p.Scopes, n); missing != "" {
			break
		}
	}
	if missing == "" {
		return true
	}
	h.metrics.Refused("insufficient_scope")
	h.meta.Challenge(w, r, "insufficient_scope", missing)
	inauth.WriteError(w, http.StatusForbidden, "INSUFFICIENT_SCOPE", "this call needs the scope "+missing+"; get a token that carries it", 0)
	return false
}
