package config

import (
	"strings"
	"testing"
)

// `match: "https://petstore3.swagger.io/api/v3"` matched no call, silently
// (issue 33 item 2): a URL is read as its host, with its port when written.
func TestUpstreamMatchURLIsItsHost(t *testing.T) {
	tests := []struct {
		match, want, problem string
	}{
		{"https://petstore3.swagger.io/api/v3", "petstore3.swagger.io", ""},
		{"http://127.0.0.1:8000/", "127.0.0.1:8000", ""},
		{"https://API.example.com:8443/v1?x=1", "api.example.com:8443", ""},
		{"api.github.com", "api.github.com", ""},
		{"ftp://files.example.com/x", "ftp://files.example.com/x", "is not a host, host:port or group name"},
		{"api.example.com/v1", "api.example.com/v1", "is not a host, host:port or group name"},
	}
	for _, tt := range tests {
		t.Run(tt.match, func(t *testing.T) {
			c, err := Parse([]byte("upstreams:\n  - {match: \"" + tt.match + "\", requests_per_window: 5, window: 1m}\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Upstreams[0].Match; got != tt.want {
				t.Errorf("match %q, want %q", got, tt.want)
			}
			err = c.Validate()
			if tt.problem == "" && err != nil && strings.Contains(err.Error(), "match") {
				t.Errorf("got %v", err)
			}
			if tt.problem != "" && (err == nil || !strings.Contains(err.Error(), tt.problem)) {
				t.Errorf("got %v, want %q", err, tt.problem)
			}
		})
	}
}
