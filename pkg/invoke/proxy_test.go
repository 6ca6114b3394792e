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
