package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/mcpserver"
)

func TestServeHTTPRefusesPublicAddressWithoutAuth(t *testing.T) {
	withTokens := config.Default()
	withTokens.HTTP.Auth.Tokens = []config.Token{{Token: config.NewSecret("s3cret"), Subject: "ci"}}
	tests := []struct {
		addr string
		cfg  *config.Config
		ok   bool
	}{
		{"127.0.0.1:0", config.Default(), true},
		{"localhost:0", config.Default(), true},
		{"[::1]:0", config.Default(), true},
		{"0.0.0.0:8080", config.Default(), false},
		{":8080", config.Default(), false},
		{"192.0.2.1:8080", config.Default(), false},
		{"0.0.0.0:8080", withTokens, true},
	}
	for _, tt := range tests {
		a := &app{cfg: tt.cfg, srv: mcpserver.New(mcpserver.Options{})}
		_, err := newHTTPServer(t.Context(), a, tt.addr)
		if (err == nil) != tt.ok {
			t.Errorf("%s (tokens %d): err %v", tt.addr, len(tt.cfg.HTTP.Auth.Tokens), err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error names a token")
		}
	}
}

var discard = slog.New(slog.DiscardHandler)

// The hardening keys reach the server: http.body_timeout the handler,
// http.idle_timeout net/http, http.max_conns_per_ip the listener.
func TestServeHTTPHardeningFromConfig(t *testing.T) {
	cfg := config.Default()
	cfg.HTTP.BodyTimeout = config.Duration(7 * time.Second)
	cfg.HTTP.IdleTimeout = config.Duration(9 * time.Second)
	cfg.HTTP.MaxConnsPerIP = 3
	a := &app{cfg: cfg, srv: mcpserver.New(mcpserver.Options{})}
	s, err := newHTTPServer(t.Context(), a, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if s.hs.IdleTimeout != 9*time.Second || s.hs.ReadHeaderTimeout <= 0 || s.perIP != 3 {
		t.Errorf("idle %v, read header %v, per IP %d", s.hs.IdleTimeout, s.hs.ReadHeaderTimeout, s.perIP)
	}
	opts, err := httpOptions(t.Context(), &cfg.HTTP, discard)
	if err != nil {
		t.Fatal(err)
	}
	if opts.BodyTimeout != 7*time.Second {
		t.Errorf("body timeout %v", opts.BodyTimeout)
	}
	def := config.Default().HTTP
	if time.Duration(def.BodyTimeout) != 30*time.Second || time.Duration(def.IdleTimeout) != 2*time.Minute || def.MaxConnsPerIP != 64 {
		t.Errorf("defaults %v %v %d, want 30s 2m 64 as config.example.yaml says", def.BodyTimeout, def.IdleTimeout, def.MaxConnsPerIP)
	}
}

func TestHTTPOptionsFromConfig(t *testing.T) {
	cfg := config.Default()
	cfg.HTTP.TrustedProxies = []string{"10.0.0.0/8"}
	cfg.HTTP.Auth.Tokens = []config.Token{
		{Token: config.NewSecret("a"), Subject: "ann", Org: "acme", Scopes: []string{"r"}},
		{Token: config.NewSecret(""), Subject: "unset"},
	}
	opts, err := httpOptions(t.Context(), &cfg.HTTP, discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.Tokens) != 1 || !reflect.DeepEqual(opts.Tokens["a"], inauth.Principal{Subject: "ann", Org: "acme", Scopes: []string{"r"}}) {
		t.Errorf("tokens %v", opts.Tokens)
	}
	if opts.RequestsPerWindow != 600 || opts.ToolCallsPerWindow != 300 || opts.Window != time.Minute ||
		opts.FailedAuthPerWindow != 10 || opts.MaxTracked != 10000 || opts.MaxBodyBytes != 4<<20 || len(opts.TrustedProxies) != 1 {
		t.Errorf("options %+v", opts)
	}
	if opts.Resource != "" || opts.AuthorizationServers != nil || opts.MetricsToken != "" {
		t.Errorf("auth options without auth config: %+v", opts)
	}
	// An issuer that does not answer at start: serve anyway, refuse JWTs.
	cfg.HTTP.Auth.JWT.Issuer = "http://127.0.0.1:1"
	cfg.HTTP.Auth.Resource = "https://mcp.example/mcp"
	opts, err = httpOptions(t.Context(), &cfg.HTTP, discard)
	if err != nil {
		t.Fatal(err)
	}
	if opts.JWT == nil || !reflect.DeepEqual(opts.AuthorizationServers, []string{"http://127.0.0.1:1"}) || opts.Resource != "https://mcp.example/mcp" {
		t.Errorf("jwt options %+v", opts)
	}
	opts.JWT.(*inauth.JWTVerifier).Close()
}

// TestServeHTTPDrainsOnShutdown: a call in flight when the signal comes
// finishes; the server then stops.
func TestServeHTTPDrainsOnShutdown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s := &httpServer{timeout: 30 * time.Second}
	s.hs = &http.Server{Handler: s.gate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		w.Write([]byte("done"))
	}))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.serve(ctx, ln) }()

	type answer struct {
		code int
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/mcp")
		if err != nil {
			got <- answer{err: err}
			return
		}
		resp.Body.Close()
		got <- answer{code: resp.StatusCode}
	}()
	<-entered
	cancel()
	select {
	case err := <-served:
		t.Fatalf("serve returned with a call in flight: %v", err)
	default:
	}
	close(release)
	if a := <-got; a.err != nil || a.code != http.StatusOK {
		t.Fatalf("in-flight call: %+v", a)
	}
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/mcp"); err == nil {
		t.Errorf("a new request was served after shutdown")
	}
}

func TestServeHTTPCutsCallsPastTheTimeout(t *testing.T) {
	entered := make(chan struct{})
	s := &httpServer{timeout: 0}
	s.hs = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done() // until the server cuts it
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.serve(ctx, ln) }()
	go func() {
		if resp, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	cancel()
	if err := <-served; err == nil || !strings.Contains(err.Error(), "shutdown_timeout") {
		t.Fatalf("serve: %v", err)
	}
}

func TestDrainingGateRefusesNewRequests(t *testing.T) {
	s := &httpServer{}
	h := s.gate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	s.draining.Store(true)
	for path, want := range map[string]int{"/mcp": http.StatusServiceUnavailable, "/readyz": http.StatusServiceUnavailable, "/healthz": http.StatusOK} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		if rec.Code != want {
			t.Errorf("%s: %d, want %d", path, rec.Code, want)
		}
	}
}
