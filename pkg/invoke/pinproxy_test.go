package invoke

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// seenRequest is what a recordingProxy was asked: the request line, the
// Host header, and for a CONNECT the TLS server name the client sent
// through the tunnel.
type seenRequest struct {
	line, host, sni string
}

// recordingProxy is a loopback proxy that forwards nothing: a plain request
// is answered by the proxy itself, a CONNECT is accepted and the client's
// TLS hello read, then the tunnel closed. It reads the request line and
// headers as sent: net/http's server replaces the Host header of an
// absolute-form request with the URI's authority.
type recordingProxy struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	seen []seenRequest
}

func newRecordingProxy(t *testing.T) (*recordingProxy, *url.URL) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{ln: ln}
	p.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(conn) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p, &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

func (p *recordingProxy) serve(conn net.Conn) {
	defer conn.Close()
	tp := textproto.NewReader(bufio.NewReader(conn))
	line, err := tp.ReadLine()
	if err != nil {
		return
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return
	}
	// recorded before the client hears anything back, so it has been
	// once the call returns
	p.mu.Lock()
	i := len(p.seen)
	p.seen = append(p.seen, seenRequest{line: strings.TrimSuffix(line, " HTTP/1.1"), host: h.Get("Host")})
	p.mu.Unlock()
	if strings.HasPrefix(line, "CONNECT ") {
		conn.Write([]byte("HTTP/1.1 200 OK\r\n\r\n"))
		_ = tls.Server(conn, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			p.mu.Lock()
			p.seen[i].sni = h.ServerName
			p.mu.Unlock()
			return nil, errors.New("the test proxy ends the tunnel")
		}}).Handshake()
		return
	}
	conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"via\":\"proxy\"}"))
}

func (p *recordingProxy) requests() []seenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seenRequest(nil), p.seen...)
}

// rebinder answers a name's first lookup with a public address and every
// later one with loopback, as a rebinding DNS name does.
type rebinder struct {
	mu     sync.Mutex
	first  netip.Addr
	lookup int
}

func (rb *rebinder) LookupNetIP(_ context.Context, _, _ string) ([]netip.Addr, error) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	rb.lookup++
	if rb.lookup == 1 {
		return []netip.Addr{rb.first}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestProxiedCallSendsTheCheckedAddress: with block_private_networks, a
// proxied call's name was checked here and then handed to the proxy, which
// resolved it again: a rebinding name (public when checked, loopback when
// the proxy looked) reached a loopback upstream. The proxy is now given the
// checked address, the Host header keeping the name; once the name turns
// private, the call is refused and the proxy not asked.
func TestProxiedCallSendsTheCheckedAddress(t *testing.T) {
	tests := []struct {
		name, base, first string
		want              seenRequest
	}{
		{"plain http", "http://rebind.example/api", "203.0.113.10",
			seenRequest{line: "GET http://203.0.113.10/api/v1/things", host: "rebind.example"}},
		{"a port", "http://rebind.example:8080/api", "203.0.113.10",
			seenRequest{line: "GET http://203.0.113.10:8080/api/v1/things", host: "rebind.example:8080"}},
		{"ipv6", "http://rebind.example/api", "2001:db8::1",
			seenRequest{line: "GET http://[2001:db8::1]/api/v1/things", host: "rebind.example"}},
		{"https: CONNECT to the address, TLS for the name", "https://secure.example/api", "203.0.113.10",
			seenRequest{line: "CONNECT 203.0.113.10:443", host: "203.0.113.10:443", sni: "secure.example"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rp, pu := newRecordingProxy(t)
			rb := &rebinder{first: netip.MustParseAddr(tt.first)}
			c := New(Options{Proxy: ProxyTo(pu), BlockPrivateNetworks: true, lookup: rb.LookupNetIP})
			t.Cleanup(c.Close)
			s := parseSpec(t, "p", proxySpec, tt.base)
			e := endpoint(t, s, "listThings")
			do := func() error {
				call, err := c.Prepare(t.Context(), e, Args{})
				if err != nil {
					t.Fatal(err)
				}
				_, err = call.Do(t.Context())
				return err
			}
			err := do()
			if tt.want.sni == "" && err != nil {
				t.Fatalf("first call: %v", err)
			}
			err = do()
			var ue *UnreachableError
			if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "private") {
				t.Errorf("second call, the name now loopback: %v, want a private-address refusal", err)
			}
			if got := rp.requests(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("the proxy saw %+v, want only %+v", got, tt.want)
			}
		})
	}
}

// TestPinnedProxyKeepsOneTransportPerName: two names behind one address
// never share a connection (each TLS session is for its own name), and the
// transports kept are bounded.
func TestPinnedProxyKeepsOneTransportPerName(t *testing.T) {
	pu, _ := url.Parse("http://proxy.test:3128")
	p := newTransport(true, ProxyTo(pu), nil, nil).(*pinnedProxy)
	a, b := p.transport(pu, "a.example"), p.transport(pu, "b.example")
	if a == b || p.transport(pu, "A.example") != a {
		t.Errorf("a.example and b.example share a transport, or A.example has its own")
	}
	if got := a.TLSClientConfig.ServerName; got != "a.example" {
		t.Errorf("a.example's TLS server name is %q", got)
	}
	for i := range maxPinnedTransports + 10 {
		p.transport(pu, "h"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+"-"+string(rune('a'+i/26))+".example")
	}
	if n := len(p.byName); n > maxPinnedTransports {
		t.Errorf("%d transports kept, want at most %d", n, maxPinnedTransports)
	}
}

// TestPinnedProxyOverHTTPSProxy: through an https:// proxy, the TLS to the
// proxy is for the proxy's name and the TLS through the tunnel for the
// target's, while the CONNECT names the checked address.
func TestPinnedProxyOverHTTPSProxy(t *testing.T) {
	type seen struct{ connect, sni string }
	got := make(chan seen, 1)
	ps := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.Write([]byte("HTTP/1.1 200 OK\r\n\r\n"))
		_ = tls.Server(conn, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			got <- seen{connect: r.Host, sni: h.ServerName}
			return nil, errors.New("the test proxy ends the tunnel")
		}}).Handshake()
	}))
	t.Cleanup(ps.Close)
	pu, _ := url.Parse(ps.URL)
	rb := &rebinder{first: netip.MustParseAddr("203.0.113.10")}
	c := New(Options{Proxy: http.ProxyURL(pu), BlockPrivateNetworks: true, lookup: rb.LookupNetIP})
	t.Cleanup(c.Close)
	c.blocked.Transport.(*pinnedProxy).proxyTLS = ps.Client().Transport.(*http.Transport).TLSClientConfig
	s := parseSpec(t, "p", proxySpec, "https://secure.example/api")
	call, err := c.Prepare(t.Context(), endpoint(t, s, "listThings"), Args{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call.Do(t.Context()); err == nil {
		t.Fatal("the call succeeded through a proxy that ends every tunnel")
	}
	select {
	case rec := <-got:
		if want := (seen{connect: "203.0.113.10:443", sni: "secure.example"}); rec != want {
			t.Errorf("the proxy saw %+v, want %+v", rec, want)
		}
	default:
		t.Fatal("the proxy saw no CONNECT: the TLS to it failed")
	}
}

// TestPinnedProxyChecksEveryAddress: a name with one private address among
// public ones is refused, and an IPv4 address is sent when there is one.
func TestPinnedProxyChecksEveryAddress(t *testing.T) {
	tests := []struct {
		name  string
		addrs []string
		want  string // "" when refused
	}{
		{"all public, IPv6 first", []string{"2001:db8::1", "203.0.113.10"}, "203.0.113.10"},
		{"IPv6 only", []string{"2001:db8::1"}, "2001:db8::1"},
		{"mapped IPv4", []string{"::ffff:203.0.113.10"}, "203.0.113.10"},
		{"one loopback among public", []string{"203.0.113.10", "127.0.0.1"}, ""},
		{"mapped loopback", []string{"::ffff:127.0.0.1"}, ""},
		{"metadata address", []string{"169.254.169.254"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pinnedProxy{lookup: func(context.Context, string, string) ([]netip.Addr, error) {
				var out []netip.Addr
				for _, a := range tt.addrs {
					out = append(out, netip.MustParseAddr(a))
				}
				return out, nil
			}}
			ip, err := p.checked(t.Context(), "name.example")
			if tt.want == "" {
				if !errors.Is(err, errPrivateAddress) {
					t.Errorf("got %v, %v; want a private-address refusal", ip, err)
				}
				return
			}
			if err != nil || ip.String() != tt.want {
				t.Errorf("got %v, %v; want %s", ip, err, tt.want)
			}
		})
	}
}
