package invoke

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

const proxySpec = `openapi: 3.0.3
info: {title: p, version: "1"}
paths:
  /v1/things:
    get:
      operationId: listThings
      responses: {"200": {description: ok}}
`

// forwardProxy is a loopback HTTP proxy that answers every request itself
// (nothing is forwarded, so nothing leaves the machine) and records the
// request lines it was given.
type forwardProxy struct {
	mu    sync.Mutex
	lines []string
}

func (p *forwardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.lines = append(p.lines, r.Method+" "+r.RequestURI)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"via":"proxy"}`))
}

func (p *forwardProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// TestCallsGoThroughTheProxy: calls ignored every proxy (Proxy: nil), so
// behind an egress proxy every call was upstream_unreachable.
func TestCallsGoThroughTheProxy(t *testing.T) {
	fp := &forwardProxy{}
	ps := httptest.NewServer(fp)
	t.Cleanup(ps.Close)
	pu, _ := url.Parse(ps.URL)
	for _, block := range []bool{false, true} {
		c := New(Options{Proxy: http.ProxyURL(pu), BlockPrivateNetworks: block})
		t.Cleanup(c.Close)
		// 203.0.113.0/24 is a documentation range: never dialled, the
		// proxy answers.
		s := parseSpec(t, "p", proxySpec, "http://203.0.113.10/api")
		call, err := c.Prepare(t.Context(), endpoint(t, s, "listThings"), Args{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := call.Do(t.Context())
		if err != nil {
			t.Fatalf("block=%v: %v", block, err)
		}
		if res.StatusCode != 200 {
			t.Fatalf("block=%v: status %d", block, res.StatusCode)
		}
	}
	want := "GET http://203.0.113.10/api/v1/things"
	if got := fp.seen(); len(got) != 2 || got[0] != want || got[1] != want {
		t.Errorf("the proxy saw %q, want %q twice", got, want)
	}
}

// TestProxyDoesNotBypassPrivateNetworkBlock: through a proxy the dialer
// sees only the proxy's address; the target is checked by name first, so
// a private target is still refused and the proxy is never asked.
func TestProxyDoesNotBypassPrivateNetworkBlock(t *testing.T) {
	fp := &forwardProxy{}
	ps := httptest.NewServer(fp)
	t.Cleanup(ps.Close)
	pu, _ := url.Parse(ps.URL)
	c := New(Options{Proxy: http.ProxyURL(pu), BlockPrivateNetworks: true})
	t.Cleanup(c.Close)
	for _, base := range []string{"http://10.1.2.3/api", "http://169.254.169.254/api", "http://localhost:9/api"} {
		s := parseSpec(t, "p", proxySpec, base)
		call, err := c.Prepare(t.Context(), endpoint(t, s, "listThings"), Args{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = call.Do(t.Context())
		var ue *UnreachableError
		if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "private") {
			t.Errorf("%s: %v, want a private-address refusal", base, err)
		}
	}
	if got := fp.seen(); len(got) != 0 {
		t.Errorf("the proxy was asked %q", got)
	}
}

// TestConfiguredProxyLeavesLoopbackDirect: the config's proxy took every
// call, a spec's mock on loopback included, which an egress proxy cannot
// reach; loopback goes direct, as with HTTPS_PROXY.
func TestConfiguredProxyLeavesLoopbackDirect(t *testing.T) {
	pu, _ := url.Parse("http://proxy.corp.example:3128")
	proxy := ProxyTo(pu)
	for target, want := range map[string]*url.URL{
		"http://127.0.0.1:8080/v1":     nil,
		"http://127.3.4.5/v1":          nil,
		"http://localhost:9/v1":        nil,
		"http://mock.localhost/v1":     nil,
		"http://[::1]:8080/v1":         nil,
		"https://api.example.com/v1":   pu,
		"http://203.0.113.10/v1":       pu,
		"http://10.1.2.3/v1":           pu, // private but not loopback: the proxy, or block_private_networks, decides
		"http://localhost.example/v1":  pu,
		"http://[::ffff:127.0.0.1]/v1": nil,
	} {
		r, _ := http.NewRequest("GET", target, nil)
		if got, err := proxy(r); err != nil || got != want {
			t.Errorf("%s: proxy %v (%v), want %v", target, got, err, want)
		}
	}

	// A call to a loopback upstream with the proxy configured reaches it.
	fp := &forwardProxy{}
	ps := httptest.NewServer(fp)
	t.Cleanup(ps.Close)
	pu, _ = url.Parse(ps.URL)
	up := newRecorder(t, nil)
	c := New(Options{Proxy: ProxyTo(pu)})
	t.Cleanup(c.Close)
	s := parseSpec(t, "p", proxySpec, up.URL)
	call, err := c.Prepare(t.Context(), endpoint(t, s, "listThings"), Args{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	if up.count() != 1 || len(fp.seen()) != 0 {
		t.Errorf("upstream saw %d requests, the proxy %q", up.count(), fp.seen())
	}
}

// TestDirectCallToTheProxysAddressIsRefused: with block_private_networks,
// the dialer let any connection to a proxy's host:port through unchecked,
// taking it for the proxy's own; a spec whose server is that loopback proxy
// (left direct by ProxyTo) reached it, the private-address check skipped.
func TestDirectCallToTheProxysAddressIsRefused(t *testing.T) {
	fp := &forwardProxy{}
	ps := httptest.NewServer(fp)
	t.Cleanup(ps.Close)
	pu, _ := url.Parse(ps.URL)
	c := New(Options{Proxy: ProxyTo(pu), BlockPrivateNetworks: true})
	t.Cleanup(c.Close)
	// The first call goes through the proxy (a documentation address,
	// answered by the proxy itself), so its address is one the dialer knows.
	for _, base := range []string{"http://203.0.113.10/api", ps.URL + "/api", "http://localhost:" + pu.Port() + "/api"} {
		s := parseSpec(t, "p", proxySpec, base)
		call, err := c.Prepare(t.Context(), endpoint(t, s, "listThings"), Args{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = call.Do(t.Context())
		if base == "http://203.0.113.10/api" {
			if err != nil {
				t.Fatalf("through the proxy: %v", err)
			}
			continue
		}
		var ue *UnreachableError
		if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "private") {
			t.Errorf("%s: %v, want a private-address refusal", base, err)
		}
	}
	if got, want := fp.seen(), []string{"GET http://203.0.113.10/api/v1/things"}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("the proxy saw %q, want only %q", got, want)
	}
}
