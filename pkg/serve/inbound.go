package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/telemetry"
)

// authenticate finds the caller's principal, or answers 401 or 429.
func (h *handler) authenticate(w http.ResponseWriter, r *http.Request) (inauth.Principal, bool) {
	if !h.auth {
		return inauth.Principal{Subject: "anonymous"}, true
	}
	// Bound the work before parsing: an oversized header is refused as a
	// failed attempt without being looked at.
	oversized := len(r.Header.Get("Authorization")) > inauth.MaxAuthorization
	tok := ""
	if !oversized {
		tok = inauth.BearerToken(r)
	}
	if tok == "" && !oversized {
		// A client's first step before it authenticates: not a failure.
		h.metrics.Refused("unauthenticated")
		h.meta.Challenge(w, r, "", "")
		inauth.WriteError(w, http.StatusUnauthorized, "UNAUTHORIZED", "send Authorization: Bearer <token>", 0)
		return inauth.Principal{}, false
	}
	now := h.now()
	if !oversized {
		if p, ok := h.tokens.Lookup(tok); ok {
			return p, true
		}
		if h.opts.JWT != nil {
			p, err := h.opts.JWT.Verify(r.Context(), tok, now)
			if err == nil {
				return p, true
			}
			h.b.Logger().Debug("bearer token refused", "err", err, "client", inauth.ClientIP(r, h.opts.TrustedProxies))
		}
	}
	if h.opts.FailedAuthPerWindow > 0 {
		if ok, reset := takeFailedAuth(r, &h.opts, h.metrics, now); !ok {
			h.metrics.Refused("failed_auth")
			wait := reset.Sub(now)
			w.Header().Set("Retry-After", retryAfterHeader(wait))
			w.Header().Set("Cache-Control", "no-store")
			inauth.WriteError(w, http.StatusTooManyRequests, "TOO_MANY_REQUESTS",
				"too many failed authentication attempts from this address", ratelimit.WaitSeconds(wait))
			return inauth.Principal{}, false
		}
	}
	h.metrics.Refused("invalid_token")
	h.meta.Challenge(w, r, "invalid_token", "")
	inauth.WriteError(w, http.StatusUnauthorized, "UNAUTHORIZED", "the bearer token is not valid", 0)
	return inauth.Principal{}, false
}

// takeFailedAuth counts a refused token against its client address's
// failed-auth window: the one key /mcp and the governance page's sign-in
// (UISignIn) share, so a wrong token costs the same on either. ok is false,
// until reset, once the window is spent.
func takeFailedAuth(r *http.Request, opts *Options, m *telemetry.Metrics, now time.Time) (ok bool, reset time.Time) {
	ok, _, reset, err := opts.Windows.Take(r.Context(), keyFailedAuth+inauth.IPKey(inauth.ClientIP(r, opts.TrustedProxies)),
		opts.FailedAuthPerWindow, opts.Window, now)
	if err != nil && !errors.Is(err, ErrTooManyKeys) {
		m.ObserveStoreError("inbound")
	}
	return ok, reset
}

// chargeRequest counts the request in the principal's budget and sets the
// X-RateLimit-* headers, or answers 429 (or 503 when the store fails).
func (h *handler) chargeRequest(w http.ResponseWriter, r *http.Request, p inauth.Principal) bool {
	limit := h.opts.RequestsPerWindow
	if limit <= 0 {
		return true
	}
	now := h.now()
	ok, remaining, reset, err := h.opts.Windows.Take(r.Context(), keyRequests+p.Key(), limit, h.opts.Window, now)
	if err != nil && !errors.Is(err, ErrTooManyKeys) {
		h.metrics.ObserveStoreError("inbound")
		h.b.Logger().Warn("inbound budget store failed", "err", err)
		w.Header().Set("Retry-After", "1")
		inauth.WriteError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "the inbound budget store is unavailable; try again shortly", 1)
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
	h.metrics.Refused(reason)
	wait := reset.Sub(now)
	hd.Set("Retry-After", retryAfterHeader(wait))
	hd.Set("Cache-Control", "no-store")
	inauth.WriteError(w, http.StatusTooManyRequests, "TOO_MANY_REQUESTS", msg, ratelimit.WaitSeconds(wait))
	return false
}

// inboundKey is the context key of an HTTP request's inboundCall.
type inboundKey struct{}

// inboundCall lets the tool path charge the caller's tool-call budget.
type inboundCall struct {
	h *handler
	p inauth.Principal
}

// ToolCallRefusal is a tool call refused by its caller's tool-call budget
// (Options.ToolCallsPerWindow), for the tool path to answer as a
// rate_limit tool error.
type ToolCallRefusal struct {
	// Message says which budget, or that it could not be counted.
	Message string
	// RetryAfter is how long to wait from Now, the time of the clock that
	// counted.
	RetryAfter time.Duration
	Now        time.Time
	// Principal is the caller, Limit and Window its budget.
	Principal inauth.Principal
	Limit     int
	Window    time.Duration
}

// ChargeToolCall charges the tool-call budget of the principal the HTTP
// transport put in ctx; it returns the refusal when the budget is spent,
// nil otherwise (and always nil outside HTTP, or without a budget).
func ChargeToolCall(ctx context.Context) *ToolCallRefusal {
	in, _ := ctx.Value(inboundKey{}).(*inboundCall)
	if in == nil {
		return nil
	}
	h := in.h
	limit, window := h.opts.ToolCallsPerWindow, h.opts.Window
	now := h.now()
	ok, _, reset, err := h.opts.Windows.Take(ctx, keyToolCalls+in.p.Key(), limit, window, now)
	if ok {
		return nil
	}
	msg := "this principal has used its " + strconv.Itoa(limit) + " tool calls per " + window.String()
	reason := "tool_calls"
	switch {
	case errors.Is(err, ErrTooManyKeys):
		reason, msg = "table_full", "specgate is tracking too many callers at once"
	case err != nil:
		h.metrics.ObserveStoreError("inbound")
		reason, msg = "store_error", "the inbound budget store is unavailable"
		reset = now.Add(time.Second)
	}
	h.metrics.Refused(reason)
	return &ToolCallRefusal{Message: msg, RetryAfter: reset.Sub(now), Now: now, Principal: in.p, Limit: limit, Window: window}
}

// originAllowed reports whether a request's Origin may call: none at all,
// one listed, or a loopback origin on a loopback Host.
func (h *handler) originAllowed(r *http.Request) bool {
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

// retryAfterHeader formats a wait as whole seconds, rounded up, at least 1.
func retryAfterHeader(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
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
