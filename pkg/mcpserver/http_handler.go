package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/specgate/specgate/pkg/ratelimit"
)

// TokenVerifier verifies a bearer token and names its principal.
// *JWTVerifier is one. Every refusal must match ErrInvalidToken; other
// errors are treated as refusals too.
type TokenVerifier interface {
	Verify(ctx context.Context, token string, now time.Time) (Principal, error)
}

var _ TokenVerifier = (*JWTVerifier)(nil)

// HTTPOptions configure HTTPHandlerWith. The zero value serves without
// authentication and without inbound budgets, with the Origin check, a 4 MiB
// body limit and /metrics: bind it to loopback only.
type HTTPOptions struct {
	// Tokens maps static bearer tokens to the principals they stand for;
	// several tokens may map to one principal (rotation), and then share
	// its budgets. Empty tokens never match. If empty, no static tokens.
	Tokens map[string]Principal
	// JWT verifies bearer tokens that are not static tokens. If nil, none.
	// With neither Tokens nor JWT, requests are not authenticated and all
	// share the principal "anonymous".
	JWT TokenVerifier

	// Resource is this server's canonical /mcp URL, the `resource` of the
	// RFC 9728 metadata served at /.well-known/oauth-protected-resource
	// (and .../mcp) without authentication. If empty, built from each
	// request's Host.
	Resource string
	// AuthorizationServers are the issuers the metadata names. If empty,
	// none.
	AuthorizationServers []string
	// ResourceName is the metadata's resource_name. If empty, "specgate".
	ResourceName string
	// Scopes gate tools by the scopes of the caller's token. If zero, not
	// checked.
	Scopes Scopes
	// MetricsToken, if set, is the bearer token /metrics requires. If
	// empty, /metrics is open.
	MetricsToken string

	// TrustedProxies are the peers whose X-Forwarded-For is believed when
	// finding the client IP. If empty, the client IP is the socket's peer.
	TrustedProxies []netip.Prefix
	// AllowedOrigins are the Origin values accepted besides loopback
	// origins on a loopback Host; "*" accepts any. A request with another
	// Origin header gets 403 (against DNS rebinding). If empty, loopback
	// only. A request without Origin (not from a browser) passes.
	AllowedOrigins []string
	// MaxBodyBytes caps one request body; a longer one gets 413. If zero,
	// 4 MiB.
	MaxBodyBytes int64
	// BodyTimeout bounds reading one request body; a slower one gets 408
	// and the connection is closed. If zero, 30s.
	BodyTimeout time.Duration

	// RequestsPerWindow is each principal's budget of MCP requests per
	// Window; past it, HTTP 429 before the message is read. Every answer
	// carries X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset:
	// epoch seconds, rounded up, when the next request can pass (now while
	// Remaining > 0). If zero, unlimited.
	RequestsPerWindow int
	// ToolCallsPerWindow is each principal's budget of tools/call per
	// Window; past it, a rate_limit tool error. If zero, unlimited.
	ToolCallsPerWindow int
	// FailedAuthPerWindow is the failed verifications one client IP (IPv6:
	// its /64) may make per Window; past it, its failing attempts get 429.
	// If zero, unlimited.
	FailedAuthPerWindow int
	// Window is the rolling window of the three budgets. If zero, 1m.
	Window time.Duration
	// Windows counts the budgets. If nil, NewWindows(nil, MaxTracked): in memory.
	Windows WindowCounter
	// MaxTracked bounds the principals and client IPs the default Windows
	// tracks at once. If zero, 10000.
	MaxTracked int

	// Sessions serves clients on the 2025 protocol (the initialize
	// handshake) in sessions: initialize opens one (Mcp-Session-Id), bound
	// to the principal that opened it, which keeps the client's
	// capabilities, so a tool call in it can ask the user by elicitation on
	// the call's own stream. A session lives in this process only: behind
	// several replicas, route by Mcp-Session-Id (sticky), or a request
	// reaching another replica gets 404 and the client must initialize
	// again. A 2025 request without a session, and every 2026-07-28
	// request, is still served on its own. If false, no sessions: every
	// request stands alone and any replica answers any request, and a GET
	// stream is 405 (notifications come on each call's own POST stream).
	Sessions bool
	// SessionIdle ends a session unused this long. If zero, 30m. At most
	// MaxTracked sessions are kept (10000 if zero); past that the least
	// recently used of the principal holding the most is ended.
	SessionIdle time.Duration

	// Now is the clock of the inbound budgets and of session idleness. If
	// nil, the Server's.
	Now func() time.Time
	// UI, if set, serves /ui and every path under it: the governance page
	// (pkg/ui), which does its own sign-in and same-origin checks. If nil,
	// /ui is 404.
	UI http.Handler

	// Degraded reports whether the limiter store runs degraded and why;
	// /readyz says so (still 200) and specgate_store_degraded is 1. If nil,
	// never degraded.
	Degraded func() (bool, string)
}

// Budget keys in Windows, by kind.
const (
	keyRequests   = "in:req:"
	keyToolCalls  = "in:tool:"
	keyFailedAuth = "in:authfail:"
)

type httpHandler struct {
	s          *Server
	opts       HTTPOptions
	tokens     staticTokens
	auth       bool
	now        func() time.Time
	streamable http.Handler
	mux        *http.ServeMux
	// sessions, if not nil, are the 2025-era sessions (Sessions on).
	sessions *httpSessions
	inflight inflights
}

// HTTPHandler serves streamable HTTP MCP at /mcp with HTTPHandlerWith's
// zero options: no authentication, so bind it to loopback only.
func (s *Server) HTTPHandler() http.Handler { return s.HTTPHandlerWith(HTTPOptions{}) }

// HTTPHandlerWith serves streamable HTTP MCP at /mcp, liveness at /healthz,
// readiness at /readyz and Prometheus metrics at /metrics, with the
// authentication and inbound budgets of opts on /mcp. Unless opts.Sessions
// is on, it holds no per-session state, so any replica can answer any
// request.
func (s *Server) HTTPHandlerWith(opts HTTPOptions) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = 30 * time.Second
	}
	if opts.Window <= 0 {
		opts.Window = time.Minute
	}
	if opts.Windows == nil {
		opts.Windows = NewWindows(nil, opts.MaxTracked)
	}
	h := &httpHandler{
		s:      s,
		opts:   opts,
		tokens: newStaticTokens(opts.Tokens),
		auth:   len(opts.Tokens) > 0 || opts.JWT != nil,
		now:    opts.Now,
	}
	if h.now == nil {
		h.now = s.now
	}
	if opts.Degraded != nil {
		s.metrics.degradedHook.Store(&opts.Degraded)
	}
	ids := server.WithStateLess(true)
	if opts.Sessions {
		h.sessions = newHTTPSessions(opts.SessionIdle, opts.MaxTracked, h.now)
		ids = server.WithSessionIdManagerResolver(h.sessions)
	}
	// The body is read and bounded by MaxBodyBytes before mcp-go sees it;
	// a bound of mcp-go's own (4 MiB) refused what that one allowed.
	h.streamable = server.NewStreamableHTTPServer(s.mcp, server.WithEndpointPath("/mcp"), ids, server.WithMaxRequestBodyBytes(0))
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("/mcp", h.serveMCP)
	h.mux.HandleFunc(wellKnownResource, h.serveMetadata)
	h.mux.HandleFunc(wellKnownResource+"/mcp", h.serveMetadata)
	h.mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	h.mux.HandleFunc("/readyz", h.serveReady)
	metrics := promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
	if opts.MetricsToken != "" {
		want := sha256.Sum256([]byte(opts.MetricsToken))
		next := metrics
		metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := sha256.Sum256([]byte(bearerToken(r)))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
				writeJSONError(w, http.StatusUnauthorized, "UNAUTHORIZED", "/metrics needs Authorization: Bearer <http.metrics_token>", 0)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	h.mux.Handle("/metrics", metrics)
	if opts.UI != nil {
		h.mux.Handle("/ui", opts.UI)
		h.mux.Handle("/ui/", opts.UI)
	}
	return h
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Any body, read or not, must arrive within BodyTimeout: net/http reads
	// what a handler left unread (to reuse the connection) with no deadline
	// of its own, so a refused request or /healthz with a trickled body
	// held its connection as long as the client liked. serveMCP lifts the
	// deadline once a body is read.
	if r.ContentLength != 0 && h.opts.BodyTimeout > 0 {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.opts.BodyTimeout))
	}
	// The metadata is public and read-only, so any Origin may read it; the
	// page answers its own origin, which on a public host is not loopback.
	if !strings.HasPrefix(r.URL.Path, wellKnownResource) && !h.isUI(r) && !h.originAllowed(r) {
		h.s.metrics.refused("origin")
		writeJSONError(w, http.StatusForbidden, "FORBIDDEN", "this Origin may not call specgate", 0)
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *httpHandler) isUI(r *http.Request) bool {
	return h.opts.UI != nil && (r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/"))
}

func (h *httpHandler) serveReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	body := map[string]any{"status": "loading"}
	code := http.StatusServiceUnavailable
	if h.s.Ready() {
		st := h.s.state.Load()
		if st.err != nil {
			body = map[string]any{"status": "failed", "error": st.err.Error()}
		} else {
			code = http.StatusOK
			body = map[string]any{"status": "ready", "endpoints": st.cat.Len(), "specs": st.cat.SpecNames()}
			if len(st.failures) > 0 {
				body["failedSpecs"] = st.failures
			}
			if h.opts.Degraded != nil {
				if d, why := h.opts.Degraded(); d {
					body["status"] = "degraded"
					body["degraded"] = why
				}
			}
		}
	}
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body)
}

func (h *httpHandler) serveMCP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	h.mcp(sw, r)
	h.s.metrics.inbound.WithLabelValues(strconv.Itoa(sw.status())).Inc()
}

func (h *httpHandler) mcp(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if r.ContentLength > h.opts.MaxBodyBytes {
		h.s.metrics.refused("body_too_large")
		writeJSONError(w, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE", "the request body is over "+strconv.FormatInt(h.opts.MaxBodyBytes, 10)+" bytes", 0)
		return
	}
	p, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	if !h.chargeRequest(w, r, p) {
		return
	}
	if h.sessions != nil {
		h.closeSessions(ctx)
		if !h.checkSession(w, r, p.Key()) {
			return
		}
		ctx = context.WithValue(ctx, sessionOwnerKey{}, p.Key())
	} else if r.Method == http.MethodGet {
		// Without sessions mcp-go files every GET stream under one empty
		// session ID, and a POST's notifications went out on whichever
		// principal's stream was open: there is nothing to bind one to.
		w.Header().Set("Allow", http.MethodPost)
		writeJSONError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "specgate serves no GET stream without sessions; POST each message", 0)
		return
	}
	var body []byte
	if r.Body != nil && r.Method == http.MethodPost {
		// The body must arrive within BodyTimeout (set in ServeHTTP); the
		// deadline is lifted once it is read, so a long answer stream is
		// not cut. A body that failed keeps it: net/http would otherwise
		// wait for the rest of it without one.
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
		if err == nil && h.opts.BodyTimeout > 0 {
			_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				h.s.metrics.refused("body_too_large")
				writeJSONError(w, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE", "the request body is over "+strconv.FormatInt(h.opts.MaxBodyBytes, 10)+" bytes", 0)
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				h.s.metrics.refused("body_timeout")
				w.Header().Set("Connection", "close")
				writeJSONError(w, http.StatusRequestTimeout, "BODY_TIMEOUT", "the request body did not arrive within "+h.opts.BodyTimeout.String(), 0)
				return
			}
			writeJSONError(w, http.StatusBadRequest, "BAD_REQUEST", "the request body could not be read", 0)
			return
		}
		need, call, rpcErr := h.precheck(body)
		if rpcErr != nil {
			h.s.metrics.refused("ambiguous_keys")
			rpcErr.write(w)
			return
		}
		if !h.checkScope(w, r, p, need) {
			return
		}
		if call != nil {
			ctx = context.WithValue(ctx, decodedKey{}, call)
		}
		body = rewriteToolCall(body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	if h.auth {
		if h.opts.Scopes.enabled() {
			ctx = withGrant(ctx, h.opts.Scopes, p.Scopes)
		}
		ctx = WithPrincipal(ctx, p)
	}
	if h.opts.ToolCallsPerWindow > 0 {
		ctx = context.WithValue(ctx, inboundKey{}, &inboundCall{h: h, p: p})
	}
	ctx = context.WithValue(ctx, overHTTPKey{}, h.sessions != nil)
	if r.Method == http.MethodPost {
		h.serveScoped(w, r.WithContext(ctx), p.Key(), bytes.TrimSpace(body))
		return
	}
	h.streamable.ServeHTTP(w, r.WithContext(ctx))
}

// authenticate finds the caller's principal, or answers 401 or 429.
func (h *httpHandler) authenticate(w http.ResponseWriter, r *http.Request) (Principal, bool) {
	if !h.auth {
		return Principal{Subject: "anonymous"}, true
	}
	// Bound the work before parsing: an oversized header is refused as a
	// failed attempt without being looked at.
	oversized := len(r.Header.Get("Authorization")) > maxAuthorization
	tok := ""
	if !oversized {
		tok = bearerToken(r)
	}
	if tok == "" && !oversized {
		// A client's first step before it authenticates: not a failure.
		h.s.metrics.refused("unauthenticated")
		h.challenge(w, r, "", "")
		writeJSONError(w, http.StatusUnauthorized, "UNAUTHORIZED", "send Authorization: Bearer <token>", 0)
		return Principal{}, false
	}
	now := h.now()
	if !oversized {
		if p, ok := h.tokens.lookup(tok); ok {
			return p, true
		}
		if h.opts.JWT != nil {
			p, err := h.opts.JWT.Verify(r.Context(), tok, now)
			if err == nil {
				return p, true
			}
			h.s.log.Debug("bearer token refused", "err", err, "client", clientIP(r, h.opts.TrustedProxies))
		}
	}
	if h.opts.FailedAuthPerWindow > 0 {
		ok, _, reset, err := h.opts.Windows.Take(r.Context(), keyFailedAuth+ipKey(clientIP(r, h.opts.TrustedProxies)),
			h.opts.FailedAuthPerWindow, h.opts.Window, now)
		if err != nil && !errors.Is(err, ErrTooManyKeys) {
			h.s.ObserveStoreError("inbound")
		}
		if !ok {
			h.s.metrics.refused("failed_auth")
			wait := reset.Sub(now)
			w.Header().Set("Retry-After", retryAfterHeader(wait))
			w.Header().Set("Cache-Control", "no-store")
			writeJSONError(w, http.StatusTooManyRequests, "TOO_MANY_REQUESTS",
				"too many failed authentication attempts from this address", retrySeconds(wait))
			return Principal{}, false
		}
	}
	h.s.metrics.refused("invalid_token")
	h.challenge(w, r, "invalid_token", "")
	writeJSONError(w, http.StatusUnauthorized, "UNAUTHORIZED", "the bearer token is not valid", 0)
	return Principal{}, false
}

// chargeRequest counts the request in the principal's budget and sets the
// X-RateLimit-* headers, or answers 429 (or 503 when the store fails).
func (h *httpHandler) chargeRequest(w http.ResponseWriter, r *http.Request, p Principal) bool {
	limit := h.opts.RequestsPerWindow
	if limit <= 0 {
		return true
	}
	now := h.now()
	ok, remaining, reset, err := h.opts.Windows.Take(r.Context(), keyRequests+p.Key(), limit, h.opts.Window, now)
	if err != nil && !errors.Is(err, ErrTooManyKeys) {
		h.s.ObserveStoreError("inbound")
		h.s.log.Warn("inbound budget store failed", "err", err)
		w.Header().Set("Retry-After", "1")
		writeJSONError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "the inbound budget store is unavailable; try again shortly", 1)
		return false
	}
	hd := w.Header()
	hd.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	hd.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	hd.Set("X-RateLimit-Reset", strconv.FormatInt(ceilUnix(reset), 10))
	if ok {
		return true
	}
	reason, msg := "requests", "this principal has used its "+strconv.Itoa(limit)+" requests per "+h.opts.Window.String()
	if errors.Is(err, ErrTooManyKeys) {
		reason, msg = "table_full", "specgate is tracking too many callers at once; try again shortly"
	}
	h.s.metrics.refused(reason)
	wait := reset.Sub(now)
	hd.Set("Retry-After", retryAfterHeader(wait))
	hd.Set("Cache-Control", "no-store")
	writeJSONError(w, http.StatusTooManyRequests, "TOO_MANY_REQUESTS", msg, retrySeconds(wait))
	return false
}

// inboundKey is the context key of an HTTP request's inboundCall.
type inboundKey struct{}

// inboundCall lets the tool path charge the caller's tool-call budget.
type inboundCall struct {
	h *httpHandler
	p Principal
}

// chargeToolCall charges the tool-call budget of the principal the HTTP
// transport put in ctx; it returns a tool error when the budget is spent,
// nil otherwise (and always nil outside HTTP).
func (s *Server) chargeToolCall(ctx context.Context) (*mcp.CallToolResult, error) {
	in, _ := ctx.Value(inboundKey{}).(*inboundCall)
	if in == nil {
		return nil, nil
	}
	h := in.h
	limit, window := h.opts.ToolCallsPerWindow, h.opts.Window
	now := h.now()
	ok, _, reset, err := h.opts.Windows.Take(ctx, keyToolCalls+in.p.Key(), limit, window, now)
	if ok {
		return nil, nil
	}
	msg := "this principal has used its " + strconv.Itoa(limit) + " tool calls per " + window.String()
	reason := "tool_calls"
	switch {
	case errors.Is(err, ErrTooManyKeys):
		reason, msg = "table_full", "specgate is tracking too many callers at once"
	case err != nil:
		s.ObserveStoreError("inbound")
		reason, msg = "store_error", "the inbound budget store is unavailable"
		reset = now.Add(time.Second)
	}
	s.metrics.refused(reason)
	wait := reset.Sub(now)
	secs := retrySeconds(wait)
	return errorResult(&ErrorObject{
		Code:              CodeRateLimit,
		Message:           msg,
		Hint:              "Your tool-call budget on this specgate is spent (search and inspect count too). Wait, then call again.",
		Retryable:         true,
		RetryAfterSeconds: secs,
		RetryAt:           now.Add(time.Duration(secs * float64(time.Second))).UTC().Format(time.RFC3339Nano),
		Scope:             string(ratelimit.ScopeProxy),
		Limit:             &LimitInfo{Kind: "principal", Key: in.p.String(), Limit: int64(limit), Window: window.String()},
	}), nil
}

// originAllowed reports whether a request's Origin may call: none at all,
// one listed, or a loopback origin on a loopback Host.
func (h *httpHandler) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	for _, o := range h.opts.AllowedOrigins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return isLoopbackHost(u.Hostname()) && isLoopbackHost(hostOnly(r.Host))
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// ceilUnix returns t in epoch seconds, rounded up.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

type httpError struct {
	Code              string  `json:"code"`
	Message           string  `json:"message"`
	RetryAfterSeconds float64 `json:"retryAfterSeconds,omitempty"`
}

func writeJSONError(w http.ResponseWriter, status int, code, msg string, retryAfter float64) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]httpError{"error": {Code: code, Message: msg, RetryAfterSeconds: math.Round(retryAfter*1000) / 1000}})
}

// statusWriter remembers the status code for metrics. It passes Flush on,
// which SSE responses need.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}
