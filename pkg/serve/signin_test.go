package serve

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestUIClientAddr(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	tests := []struct {
		name    string
		peer    string
		xff     string
		trusted []netip.Prefix
		want    string
	}{
		{"the socket's peer", "198.51.100.4:5000", "", proxies, "198.51.100.4"},
		{"X-Forwarded-For from a peer not trusted", "198.51.100.4:5000", "203.0.113.7", proxies, "198.51.100.4"},
		{"X-Forwarded-For through a trusted proxy", "10.1.2.3:5000", "203.0.113.7", proxies, "203.0.113.7"},
		{"no trusted proxies", "10.1.2.3:5000", "203.0.113.7", nil, "10.1.2.3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/ui/api/runs/cancel", nil)
			r.RemoteAddr = tc.peer
			if tc.xff != "" {
				r.Header.Set("X-Forwarded-For", tc.xff)
			}
			if got := UIClientAddr(tc.trusted)(r); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
