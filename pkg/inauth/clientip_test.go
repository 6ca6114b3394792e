package inauth

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func mustPrefixes(list ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range list {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestClientIP(t *testing.T) {
	trusted := mustPrefixes("10.0.0.0/8", "192.0.2.1/32")
	tests := []struct {
		name, peer, xff, want string
	}{
		{"untrusted peer ignores XFF", "198.51.100.9:1234", "203.0.113.1", "198.51.100.9"},
		{"trusted peer, one hop", "10.1.2.3:1234", "203.0.113.1", "203.0.113.1"},
		{"right-most untrusted", "10.1.2.3:1234", "1.1.1.1, 203.0.113.1, 192.0.2.1", "203.0.113.1"},
		{"spoofed left entries ignored", "10.1.2.3:1234", "6.6.6.6, 203.0.113.1", "203.0.113.1"},
		{"all trusted: left-most", "10.1.2.3:1234", "10.9.9.9, 192.0.2.1", "10.9.9.9"},
		{"trusted peer without XFF", "10.1.2.3:1234", "", "10.1.2.3"},
		{"garbage stops at the last trusted hop", "10.1.2.3:1234", "203.0.113.1, junk", "10.1.2.3"},
		{"IPv4-mapped peer", "[::ffff:198.51.100.9]:80", "", "198.51.100.9"},
		{"IPv6 client", "10.1.2.3:1234", "2001:db8::1", "2001:db8::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.RemoteAddr = tt.peer
			if tt.xff != "" {
				r.Header.Set("X-Forwarded-For", tt.xff)
			}
			if got := ClientIP(r, trusted).String(); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	for addr, want := range map[string]string{
		"198.51.100.9":          "198.51.100.9",
		"2001:db8:1:2:3:4:5:6":  "2001:db8:1:2::/64",
		"::ffff:198.51.100.9":   "198.51.100.9",
		"2001:db8:1:2::ffff:ff": "2001:db8:1:2::/64",
	} {
		if got := IPKey(netip.MustParseAddr(addr)); got != want {
			t.Errorf("IPKey(%s) = %s, want %s", addr, got, want)
		}
	}
}
