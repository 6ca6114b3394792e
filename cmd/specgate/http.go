package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/serve"
	"github.com/specgate/specgate/pkg/ui"
)

// httpOptions turns the config's http: section into the server's HTTP
// options. It fetches the JWT issuer's keys, so it may do I/O; the caller
// closes opts.JWT when it is an io.Closer.
func httpOptions(ctx context.Context, h *config.HTTP, log *slog.Logger) (serve.Options, error) {
	opts := serve.Options{
		TrustedProxies:      h.TrustedProxyPrefixes(),
		AllowedOrigins:      h.AllowedOrigins,
		MaxBodyBytes:        int64(h.MaxBodyBytes),
		BodyTimeout:         time.Duration(h.BodyTimeout),
		RequestsPerWindow:   h.Inbound.RequestsPerWindow,
		ToolCallsPerWindow:  h.Inbound.ToolCallsPerWindow,
		FailedAuthPerWindow: h.Inbound.FailedAuthPerWindow,
		Window:              time.Duration(h.Inbound.Window),
		MaxTracked:          h.Inbound.MaxTracked,
		Sessions:            h.Sessions,
		Resource:            h.Auth.Resource,
		Scopes: inauth.Scopes{
			Read: h.Auth.Scopes.Read, Invoke: h.Auth.Scopes.Invoke, Admin: h.Auth.Scopes.Admin,
		},
		MetricsToken: h.MetricsToken.Reveal(),
	}
	opts.AuthorizationServers = h.Auth.AuthorizationServers
	if len(opts.AuthorizationServers) == 0 && h.Auth.JWT.Issuer != "" {
		opts.AuthorizationServers = []string{h.Auth.JWT.Issuer}
	}
	for _, t := range h.Auth.Tokens {
		// A token whose variable was unset is empty and never matches.
		if tok := t.Token.Reveal(); tok != "" {
			if opts.Tokens == nil {
				opts.Tokens = map[string]inauth.Principal{}
			}
			opts.Tokens[tok] = inauth.Principal{Subject: t.Subject, Org: t.Org, Scopes: t.Scopes}
		}
	}
	if j := h.Auth.JWT; j.Issuer != "" {
		aud := j.Audience
		if aud == "" {
			aud = h.Auth.Resource
		}
		v, err := inauth.NewJWTVerifier(inauth.JWTOptions{
			Issuer: j.Issuer, JWKS: j.JWKS, Audience: aud,
			SubjectClaim: j.SubjectClaim, OrgClaim: j.OrgClaim, Logger: log,
		})
		if err != nil {
			return opts, fmt.Errorf("http.auth.jwt: %w", err)
		}
		// An issuer down at start is not fatal: tokens are refused until
		// it answers, and the other replicas keep serving.
		if err := v.Provision(ctx); err != nil {
			log.Warn("http.auth.jwt: JWT keys unavailable; JWTs are refused until the issuer answers", "err", err)
		}
		opts.JWT = v
	}
	return opts, nil
}

// httpServer is `serve --http`: the MCP handler behind a gate that refuses
// new requests once draining starts.
type httpServer struct {
	hs       *http.Server
	timeout  time.Duration // to finish in-flight calls after the signal
	perIP    int           // open connections one client address may hold
	trusted  []netip.Prefix
	draining atomic.Bool
	// closeAuth, if set, stops the JWT verifier's key refresh once serving ends.
	closeAuth func()
	// drain, if set, answers the calls waiting in the limiter's queues at once
	// when shutdown begins (retryable, nothing sent).
	drain func()
	// drainRuns, if set, lets the runs in the background end within the
	// shutdown timeout and records the rest as lost.
	drainRuns func(context.Context)
	// hub samples the state the governance page shows, once a second.
	hub *ui.Hub
	// uiToken is the page's one-time sign-in token; empty when tokens sign in.
	uiToken string
}

// newHTTPServer builds the server for addr. Without inbound auth it refuses
// any address that is not loopback: anyone who can reach it could call
// every configured API with specgate's credentials.
func newHTTPServer(ctx context.Context, a *app, addr string) (*httpServer, error) {
	h := &a.cfg.HTTP
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--http %q is not host:port", addr)
	}
	opts, err := httpOptions(ctx, h, a.log)
	if err != nil {
		return nil, err
	}
	closeAuth := func() {}
	if v, ok := opts.JWT.(*inauth.JWTVerifier); ok {
		closeAuth = v.Close
	}
	if !loopbackHost(host) && len(opts.Tokens) == 0 && opts.JWT == nil {
		return nil, fmt.Errorf("refusing to serve on %q without inbound auth: configure http.auth tokens or jwt, or listen on 127.0.0.1", addr)
	}
	opts.Windows = serve.NewWindows(sharedStore(a.store), h.Inbound.MaxTracked)
	opts.Degraded = func() (bool, string) {
		if a.limiter == nil {
			return false, ""
		}
		d, _, reason := a.limiter.Degraded()
		return d, reason
	}
	// The page signs in with what /mcp and /metrics accept, counting wrong
	// tokens in the same failed-auth windows; with neither, once with the
	// URL printed at start.
	verify, oneTime := serve.UISignIn(a.srv, opts), ""
	if len(opts.Tokens) == 0 && opts.JWT == nil && opts.MetricsToken == "" {
		verify, oneTime = nil, oneTimeToken()
	}
	page, hub := newUIPage(a, verify, oneTime, serve.UIClientAddr(opts.TrustedProxies))
	opts.UI = page
	s := &httpServer{timeout: time.Duration(h.ShutdownTimeout), perIP: h.MaxConnsPerIP, trusted: opts.TrustedProxies, closeAuth: closeAuth,
		drainRuns: a.srv.DrainRuns, hub: hub, uiToken: oneTime}
	if a.limiter != nil {
		s.drain = a.limiter.Drain
	}
	s.hs = &http.Server{
		Handler:           s.gate(serve.NewHandler(a.srv, opts)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Duration(h.IdleTimeout),
	}
	return s, nil
}

// loopbackHost reports whether host names only this machine; an empty host
// (all interfaces) does not.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// gate answers 503 to requests that arrive while draining (on a kept-alive
// connection), so a load balancer moves them to another replica.
func (s *httpServer) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() && r.URL.Path != "/healthz" {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			http.Error(w, "specgate is shutting down", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serve serves on ln until ctx ends, then stops accepting, lets in-flight
// calls finish within the shutdown timeout and closes what is left.
func (s *httpServer) serve(ctx context.Context, ln net.Listener) error {
	if s.closeAuth != nil {
		defer s.closeAuth()
	}
	if s.hub != nil {
		go s.hub.Run(ctx)
	}
	errc := make(chan error, 1)
	ln = serve.LimitConnsPerIP(ln, s.perIP, s.trusted)
	go func() { errc <- s.hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	if s.drain != nil {
		s.drain()
	}
	shutdown, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	runsDone := make(chan struct{})
	go func() {
		defer close(runsDone)
		if s.drainRuns != nil {
			s.drainRuns(shutdown)
		}
	}()
	err := s.hs.Shutdown(shutdown)
	<-errc // http.ErrServerClosed once Shutdown has begun
	<-runsDone
	if errors.Is(err, context.DeadlineExceeded) {
		s.hs.Close()
		return fmt.Errorf("shutdown: calls still in flight after http.shutdown_timeout (%s) were cut", s.timeout)
	}
	return err
}
