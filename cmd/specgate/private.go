package main

import (
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/invoke"
)

// operatorHosts are the addresses the operator wrote for sc, which
// block_private_networks lets through: its base_url, and the host its spec
// was read from when that is loopback (a local app serving its own spec,
// whose calls go back to it). A name from a remote location could be made
// to resolve anywhere, so only a loopback location counts.
func operatorHosts(sc config.Spec) []string {
	var out []string
	if u, err := url.Parse(sc.BaseURL); err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") {
		out = append(out, invoke.HostPort(u))
	}
	if u, err := url.Parse(sc.Location); err == nil && sc.IsURL() && isLoopbackHost(u.Hostname()) {
		out = append(out, invoke.HostPort(u))
	}
	return out
}

// isLoopbackHost reports whether host is localhost or a loopback address.
func isLoopbackHost(host string) bool {
	host = strings.ToLower(host)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// blockedBaseURL says why calls to base, a loaded spec's base URL, would be
// refused by block_private_networks, or "" when they would not be: its
// host is a private, loopback or link-local address, or localhost, and the
// operator did not write it. Names are not resolved: check stays off the
// network beyond loading the specs, and a name's address can change.
func blockedBaseURL(sc config.Spec, base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || slices.Contains(operatorHosts(sc), invoke.HostPort(u)) {
		return ""
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, ip)
	} else if isLoopbackHost(host) {
		addrs = append(addrs, netip.IPv6Loopback())
	}
	for _, ip := range addrs {
		if invoke.IsPrivate(ip) {
			return "calls to " + u.Host + " will be refused: the address is private, loopback or link-local and came from the spec " +
				"(block_private_networks); write it as specs[" + specName(sc) + "].base_url (or --base-url) to allow it, or set block_private_networks: false"
		}
	}
	return ""
}
