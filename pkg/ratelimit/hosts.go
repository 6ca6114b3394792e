package ratelimit

import (
	"net"
	"net/netip"
	"slices"
	"strings"
)

// normalKey returns the form upstream keys and budget matches are compared in: lower case,
// without a host's trailing dot, an IP address in its canonical spelling (IPv6 compressed
// and unbracketed when bare, IPv4-mapped IPv6 as IPv4). Names are equal only when they are
// literally the same address: "localhost" and "127.0.0.1" stay apart, since what a name
// resolves to is the resolver's business (see LoopbackNearMisses).
func normalKey(k string) string {
	if host, port, err := net.SplitHostPort(k); err == nil {
		return net.JoinHostPort(normalHost(host), port)
	}
	return normalHost(k)
}

func normalHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); err == nil {
		return a.Unmap().String()
	}
	return h
}

// loopbackHost reports a host that names this machine: localhost (and its subdomains, RFC
// 6761), 127.0.0.0/8 or ::1.
func loopbackHost(h string) bool {
	h = normalHost(h)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
}

// LoopbackNearMisses explains, for each registered endpoint's upstream key that no budget
// matches, a budget that names the same machine under another loopback spelling
// (localhost, 127.0.0.1, [::1]) and the same port, or no port: such a budget does not hold
// for that key, which is most likely not what was meant. One sentence per key, sorted;
// nil when there is nothing to say. Meant for specgate check and the start-up log.
func (l *Limiter) LoopbackNearMisses() []string {
	keys := map[string]bool{}
	if eps := l.endpoints.Load(); eps != nil {
		for _, ep := range *eps {
			if k := ep.upKey; k != "" {
				keys[k] = true
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k := range keys {
		if _, ok := l.budgets[l.canonical(k)]; ok {
			continue // a budget matches
		}
		host, port, err := net.SplitHostPort(k)
		if err != nil || !loopbackHost(host) {
			continue
		}
		var near []string
		for m := range l.budgets {
			mh, mp, err := net.SplitHostPort(m)
			if err != nil {
				mh, mp = m, ""
			}
			if loopbackHost(mh) && (mp == "" || mp == port) {
				near = append(near, `"`+m+`"`)
			}
		}
		if len(near) > 0 {
			slices.Sort(near)
			out = append(out, "upstream "+k+" matches no budget, but budget "+strings.Join(near, ", ")+
				" names the same machine another way; add a budget for "+k+" or join the specs to one named upstream")
		}
	}
	slices.Sort(out)
	return out
}
