package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/specgate/specgate/pkg/rpcmsg"
)

// Without a session (stateless HTTP, every 2026-07-28 request, a
// sessionless 2025 request) mcp-go files every caller's in-flight request
// under an empty session ID and the JSON-RPC ID, and IDs are small
// counters: bob's notifications/cancelled for 7 cancelled alice's 7. So
// specgate files each request it serves over HTTP under the principal
// that sent it (and its session, if any), answers notifications/cancelled
// itself from that table, and never lets mcp-go see one.

// inflightKey names one request over HTTP: its principal, its session (""
// without one) and its JSON-RPC ID in one canonical form.
type inflightKey struct {
	owner, session, id string
}

// inflightCall is one request in flight: cancel ends its context, and once
// cancelled its answer is not sent.
type inflightCall struct {
	cancel    context.CancelCauseFunc
	cancelled atomic.Bool
}

// errCallerCancelled is the cause of an HTTP request's context ended by
// its caller's notifications/cancelled, told apart from a connection that
// went away (net/http ends the context then too).
var errCallerCancelled = errors.New("the caller cancelled the call")

// CallerCancelled reports whether ctx ended because its caller asked to
// stop the call. Over HTTP that is a notifications/cancelled only: a
// dropped connection, or a client that stopped reading, asked nothing.
// Elsewhere (stdio) mcp-go ends a call's context only when asked to, or
// when the server stops.
func CallerCancelled(ctx context.Context) bool {
	if _, overHTTP := ctx.Value(overHTTPKey{}).(bool); overHTTP {
		return errors.Is(context.Cause(ctx), errCallerCancelled)
	}
	return ctx.Err() != nil
}

// inflights are the HTTP requests being served, by their caller. The zero
// value is empty and ready. Safe for concurrent use.
type inflights struct {
	mu    sync.Mutex
	calls map[inflightKey]*inflightCall
}

// start files a request under k and returns its context, the call, and
// done, which the caller must call when the request is answered.
func (f *inflights) start(ctx context.Context, k inflightKey) (context.Context, *inflightCall, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	c := &inflightCall{cancel: cancel}
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[inflightKey]*inflightCall{}
	}
	f.calls[k] = c
	f.mu.Unlock()
	return ctx, c, func() {
		f.mu.Lock()
		if f.calls[k] == c {
			delete(f.calls, k)
		}
		f.mu.Unlock()
		cancel(nil)
	}
}

// cancel cancels the request filed under k, if any.
func (f *inflights) cancel(k inflightKey) {
	f.mu.Lock()
	c := f.calls[k]
	f.mu.Unlock()
	if c != nil {
		c.cancelled.Store(true)
		c.cancel(errCallerCancelled)
	}
}

// canonicalID is a JSON-RPC ID in one form per value: 7 and 7.0 are one
// ID, "7" another.
func canonicalID(raw json.RawMessage) (string, bool) {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return "s" + v, true
	case float64:
		if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return "n" + strconv.FormatInt(i, 10), true
		}
		return "n" + strconv.FormatFloat(v, 'g', -1, 64), true
	}
	return "", false
}

// serveScoped serves one POST through mcp-go with cancellation scoped to
// its caller: a notifications/cancelled is answered here (202) and cancels
// only owner's own request of that ID in the same session; a request is
// filed for it, and once cancelled its answer is not sent (the caller gave
// up on it): the POST ends without it, 202 if nothing was written yet. m
// is the message read (nil for a batch or what is not JSON), body what
// mcp-go is to read.
func (h *handler) serveScoped(w http.ResponseWriter, r *http.Request, owner string, m *rpcmsg.Message, body []byte) {
	if m == nil {
		h.streamable.ServeHTTP(w, r)
		return
	}
	k := inflightKey{owner: owner}
	if h.sessions != nil {
		k.session = r.Header.Get(server.HeaderKeySessionID)
	}
	if m.Method == string(mcp.MethodNotificationCancelled) {
		if id, ok := canonicalID(m.RequestID); ok {
			k.id = id
			h.inflight.cancel(k)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	isTask := h.b.IsTask(m)
	id, ok := canonicalID(m.ID)
	if isTask && !ok {
		// Never mcp-go's: its task store is shared by every caller.
		(&rpcError{code: mcp.INVALID_REQUEST, msg: "a task request needs a string or number id"}).write(w)
		return
	}
	if m.Method == "" || !ok {
		h.streamable.ServeHTTP(w, r)
		return
	}
	k.id = id
	ctx, call, done := h.inflight.start(r.Context(), k)
	defer done()
	qw := &quietWriter{ResponseWriter: w, call: call}
	if isTask {
		qw.Header().Set("Content-Type", "application/json")
		qw.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(qw).Encode(h.b.AnswerTask(ctx, m, body))
	} else {
		h.streamable.ServeHTTP(qw, r.WithContext(ctx))
	}
	if call.cancelled.Load() && !qw.wrote.Load() {
		w.Header().Del("Content-Type")
		w.WriteHeader(http.StatusAccepted)
	}
}

// quietWriter drops what is written once its call is cancelled.
type quietWriter struct {
	http.ResponseWriter
	call  *inflightCall
	wrote atomic.Bool
}

func (w *quietWriter) WriteHeader(code int) {
	if w.call.cancelled.Load() {
		return
	}
	w.wrote.Store(true)
	w.ResponseWriter.WriteHeader(code)
}

func (w *quietWriter) Write(b []byte) (int, error) {
	if w.call.cancelled.Load() {
		return len(b), nil
	}
	w.wrote.Store(true)
	return w.ResponseWriter.Write(b)
}

func (w *quietWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.call.cancelled.Load() {
		f.Flush()
	}
}

func (w *quietWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
