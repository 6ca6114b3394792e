package invoke

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
)

// lookupFunc resolves a host name as net.Resolver.LookupNetIP does.
type lookupFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

// pinnedProxy is the transport of calls made with private networks blocked
// when a proxy may carry them. A proxy resolves the name it is given again,
// so a name checked here could still reach the inside through it (a
// rebinding name, or a proxy with its own DNS): a proxied request is
// resolved and checked here, and the proxy is given the checked address
// (the absolute URI or the CONNECT names the IP), while the Host header and
// the TLS server name stay the name, so the certificate is verified for
// it. A direct request goes through direct, whose dialer checks every
// address it connects to, a proxy's included.
//
// Each proxy and name has its own transport: its TLS config names the
// server, and connections to one IP are not shared between names.
type pinnedProxy struct {
	proxy  func(*http.Request) (*url.URL, error)
	lookup lookupFunc
	direct *http.Transport
	base   *http.Transport // what each proxied transport clones; its dialer does not check
	// allow holds the "host:port" addresses the operator wrote: sent
	// through the proxy by name, unchecked.
	allow map[string]bool
	// proxyTLS configures the TLS to an https:// proxy, whose server name
	// is the proxy's own. If nil, the defaults.
	proxyTLS *tls.Config

	mu     sync.Mutex
	byName map[string]*http.Transport
	order  []string // keys of byName, oldest first
}

// maxPinnedTransports bounds the proxied transports kept; the oldest is
// closed first.
const maxPinnedTransports = 256

func (p *pinnedProxy) RoundTrip(r *http.Request) (*http.Response, error) {
	u, err := p.proxy(r)
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	if u == nil {
		return p.direct.RoundTrip(r)
	}
	if p.allow[HostPort(r.URL)] {
		return p.transport(u, "").RoundTrip(r)
	}
	name := r.URL.Hostname()
	ip, err := p.checked(r.Context(), name)
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	out := r.Clone(r.Context())
	out.URL.Host = ipHost(ip, r.URL.Port())
	if out.Host == "" {
		out.Host = r.URL.Host
	}
	if out.URL.Scheme == "http" && out.URL.Opaque == "" && (u.Scheme == "http" || u.Scheme == "https") {
		// An HTTP proxy is sent the absolute URI, whose authority net/http
		// takes from the Host header unless the URL is opaque.
		out.URL.Opaque = "//" + out.URL.Host + r.URL.EscapedPath()
	}
	res, err := p.transport(u, name).RoundTrip(out)
	if res != nil {
		res.Request = r
	}
	return res, err
}

// checked resolves host and returns the address to send, refusing the host
// (errPrivateAddress) when any of its addresses is private.
func (p *pinnedProxy) checked(ctx context.Context, host string) (netip.Addr, error) {
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		if addrs, err = p.lookup(ctx, "ip", host); err != nil {
			return netip.Addr{}, err
		}
	}
	if len(addrs) == 0 {
		return netip.Addr{}, errors.New("no address for " + host)
	}
	pick := addrs[0].Unmap()
	for _, ip := range addrs {
		if isPrivate(ip) {
			return netip.Addr{}, errPrivateAddress
		}
		// an IPv4 address when there is one: a proxy without IPv6 routes
		// could not reach the name's IPv6 address it would not have chosen
		if ip = ip.Unmap(); ip.Is4() && !pick.Is4() {
			pick = ip
		}
	}
	return pick, nil
}

func ipHost(ip netip.Addr, port string) string {
	if port != "" {
		return net.JoinHostPort(ip.String(), port)
	}
	if ip.Is6() {
		return "[" + ip.String() + "]"
	}
	return ip.String()
}

func (p *pinnedProxy) transport(u *url.URL, name string) *http.Transport {
	key := u.String() + " " + strings.ToLower(name)
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.byName[key]; ok {
		return t
	}
	t := p.base.Clone()
	t.Proxy = http.ProxyURL(u)
	if name != "" {
		t.TLSClientConfig = &tls.Config{ServerName: name, MinVersion: tls.VersionTLS12}
	}
	if u.Scheme == "https" {
		// net/http would speak TLS to an https proxy with TLSClientConfig,
		// the target's server name and all: the proxy's is its own.
		t.DialTLSContext = p.dialProxyTLS(u.Hostname())
	}
	if p.byName == nil {
		p.byName = make(map[string]*http.Transport)
	}
	if len(p.order) >= maxPinnedTransports {
		old := p.order[0]
		p.order = p.order[1:]
		p.byName[old].CloseIdleConnections()
		delete(p.byName, old)
	}
	p.byName[key] = t
	p.order = append(p.order, key)
	return t
}

func (p *pinnedProxy) CloseIdleConnections() {
	p.direct.CloseIdleConnections()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.byName {
		t.CloseIdleConnections()
	}
}

func (p *pinnedProxy) dialProxyTLS(server string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := p.base.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if p.proxyTLS != nil {
			cfg = p.proxyTLS.Clone()
		}
		cfg.ServerName = server
		cfg.NextProtos = nil // the proxy is spoken to in HTTP/1.1 (CONNECT)
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		return tc, nil
	}
}
