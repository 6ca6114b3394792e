package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/telemetry"
)

// Options configure NewHandler. The zero value serves without
// authentication and without inbound budgets, with the Origin check, a 4 MiB
// body limit and /metrics: bind it to loopback only.
type Options struct {
	// Tokens maps static bearer tokens to the principals they stand for;
	// several tokens may map to one principal (rotation), and then share
	// its budgets. Empty tokens never match. If empty, no static tokens.
	Tokens map[string]inauth.Principal
	// JWT verifies bearer tokens that are not static tokens. If nil, none.
	// With neither Tokens nor JWT, requests are not authenticated and all
	// share the principal "anonymous".
	JWT inauth.TokenVerifier

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
	Scopes inauth.Scopes
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
	// nil, the Backend's.
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

type handler struct {
	b          Backend
	metrics    *telemetry.Metrics
	opts       Options
	tokens     inauth.StaticTokens
	meta       *inauth.Metadata
	auth       bool
	now        func() time.Time
	streamable http.Handler
	mux        *http.ServeMux
	// sessions, if not nil, are the 2025-era sessions (Sessions on).
	sessions *httpSessions
	inflight inflights
}

// NewHandler serves b as streamable HTTP MCP at /mcp, liveness at /healthz,
// readiness at /readyz and Prometheus metrics at /metrics, with the
// authentication and inbound budgets of opts on /mcp. Unless opts.Sessions
// is on, it holds no per-session state, so any replica can answer any
// request.
func NewHandler(b Backend, opts Options) http.Handler {
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
	h := &handler{
		b:       b,
		metrics: b.Metrics(),
		opts:    opts,
		tokens:  inauth.NewStaticTokens(opts.Tokens),
		meta: &inauth.Metadata{Resource: opts.Resource, AuthorizationServers: opts.AuthorizationServers,
			ResourceName: opts.ResourceName, Scopes: opts.Scopes, TrustedProxies: opts.TrustedProxies},
		auth: len(opts.Tokens) > 0 || opts.JWT != nil,
		now:  opts.Now,
	}
	if h.now == nil {
		h.now = b.Now
	}
	if opts.Degraded != nil {
		h.metrics.SetDegraded(opts.Degraded)
	}
	ids := server.WithStateLess(true)
	if opts.Sessions {
		h.sessions = newHTTPSessions(opts.SessionIdle, opts.MaxTracked, h.now)
		ids = server.WithSessionIdManagerResolver(h.sessions)
	}
	// The body is read and bounded by MaxBodyBytes before mcp-go sees it;
	// a bound of mcp-go's own (4 MiB) refused what that one allowed.
	h.streamable = server.NewStreamableHTTPServer(b.MCP(), server.WithEndpointPath("/mcp"), ids, server.WithMaxRequestBodyBytes(0))
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("/mcp", h.serveMCP)
	h.mux.Handle(inauth.WellKnownResource, h.meta)
	h.mux.Handle(inauth.WellKnownResource+"/mcp", h.meta)
	h.mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	h.mux.HandleFunc("/readyz", h.serveReady)
	metrics := promhttp.HandlerFor(h.metrics.Registry(), promhttp.HandlerOpts{})
	if opts.MetricsToken != "" {
		want := sha256.Sum256([]byte(opts.MetricsToken))
		next := metrics
		metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := sha256.Sum256([]byte(inauth.BearerToken(r)))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
				inauth.WriteError(w, http.StatusUnauthorized, "UNAUTHORIZED", "/metrics needs Authorization: Bearer <http.metrics_token>", 0)
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

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	if !strings.HasPrefix(r.URL.Path, inauth.WellKnownResource) && !h.isUI(r) && !h.originAllowed(r) {
		h.metrics.Refused("origin")
		inauth.WriteError(w, http.StatusForbidden, "FORBIDDEN", "this Origin may not call specgate", 0)
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *handler) isUI(r *http.Request) bool {
	return h.opts.UI != nil && (r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/"))
}

func (h *handler) serveReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	body := map[string]any{"status": "loading"}
	code := http.StatusServiceUnavailable
	if rd := h.b.Readiness(); rd.Loaded {
		if rd.Err != nil {
			body = map[string]any{"status": "failed", "error": rd.Err.Error()}
		} else {
			code = http.StatusOK
			body = map[string]any{"status": "ready", "endpoints": rd.Endpoints, "specs": rd.Specs}
			if rd.Failed != nil {
				body["failedSpecs"] = rd.Failed
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

func (h *handler) serveMCP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	h.mcp(sw, r)
	h.metrics.CountInbound(sw.status())
}

func (h *handler) mcp(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if r.ContentLength > h.opts.MaxBodyBytes {
		h.refuseBody(w)
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
		inauth.WriteError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "specgate serves no GET stream without sessions; POST each message", 0)
		return
	}
	if h.auth {
		if h.opts.Scopes.Enabled() {
			ctx = inauth.WithGrant(ctx, h.opts.Scopes, p.Scopes)
		}
		ctx = invoke.WithPrincipal(ctx, p)
	}
	if h.opts.ToolCallsPerWindow > 0 {
		ctx = context.WithValue(ctx, inboundKey{}, &inboundCall{h: h, p: p})
	}
	ctx = context.WithValue(ctx, overHTTPKey{}, h.sessions != nil)
	if r.Method != http.MethodPost {
		h.streamable.ServeHTTP(w, r.WithContext(ctx))
		return
	}
	var body []byte
	if r.Body != nil {
		if body, ok = h.readBody(w, r); !ok {
			return
		}
	}
	// The one reading of the message by specgate: the key check, the
	// scope check, the tool's decode, cancellation and tasks all work
	// from it, and mcp-go is handed the same bytes unless a number in the
	// arguments needs wrapping.
	m, need, ctx, rpcErr := h.precheck(ctx, body)
	if rpcErr != nil {
		h.metrics.Refused("ambiguous_keys")
		rpcErr.write(w)
		return
	}
	if !h.checkScope(w, r, p, need) {
		return
	}
	if m != nil {
		body = m.Rewrite()
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	h.serveScoped(w, r.WithContext(ctx), p.Key(), m, body)
}

// readBody reads a POST's body within MaxBodyBytes and BodyTimeout, or
// answers 413, 408 or 400.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	// The body must arrive within BodyTimeout (set in ServeHTTP); the
	// deadline is lifted once it is read, so a long answer stream is not
	// cut. A body that failed keeps it: net/http would otherwise wait for
	// the rest of it without one.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err == nil {
		if h.opts.BodyTimeout > 0 {
			_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		}
		return body, true
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		h.refuseBody(w)
		return nil, false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		h.metrics.Refused("body_timeout")
		w.Header().Set("Connection", "close")
		inauth.WriteError(w, http.StatusRequestTimeout, "BODY_TIMEOUT", "the request body did not arrive within "+h.opts.BodyTimeout.String(), 0)
		return nil, false
	}
	inauth.WriteError(w, http.StatusBadRequest, "BAD_REQUEST", "the request body could not be read", 0)
	return nil, false
}

// refuseBody answers 413 to a body over MaxBodyBytes.
func (h *handler) refuseBody(w http.ResponseWriter) {
	h.metrics.Refused("body_too_large")
	inauth.WriteError(w, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE", "the request body is over "+strconv.FormatInt(h.opts.MaxBodyBytes, 10)+" bytes", 0)
}
