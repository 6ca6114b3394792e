package inauth

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP returns the address a request comes from: the socket's peer,
// unless the peer is a trusted proxy, in which case the right-most
// X-Forwarded-For entry that is not a trusted proxy.
func ClientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := remoteAddr(r)
	if !peer.IsValid() || !inPrefixes(peer, trusted) {
		return peer
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	addr := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			// A hop we cannot read: the last proxy we trust is all we know.
			return addr
		}
		addr = a.Unmap()
		if !inPrefixes(addr, trusted) {
			return addr
		}
	}
	return addr
}

// IPKey groups client addresses the way one client holds them: an IPv4
// address alone, an IPv6 address by its /64.
func IPKey(a netip.Addr) string {
	if !a.IsValid() {
		return "unknown"
	}
	if a.Is6() && !a.Is4In6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.Unmap().String()
}

// fromTrustedProxy reports whether the request's peer is a trusted proxy.
func fromTrustedProxy(r *http.Request, trusted []netip.Prefix) bool {
	peer := remoteAddr(r)
	return peer.IsValid() && inPrefixes(peer, trusted)
}

func remoteAddr(r *http.Request) netip.Addr {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func inPrefixes(a netip.Addr, list []netip.Prefix) bool {
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
