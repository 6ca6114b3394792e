package ratelimit

import (
	"strings"
	"testing"
	"time"
)

// A budget holds for its upstream however the host is written: case, a trailing dot, IPv6
// brackets and spellings. Names that are only the same machine by resolution (localhost,
// 127.0.0.1) stay apart, and LoopbackNearMisses says so.
func TestBudgetMatchesNormalisedHosts(t *testing.T) {
	tests := []struct {
		match, key string
		same       bool
	}{
		{"localhost", "localhost:8080", true},
		{"LocalHost.", "localhost:8080", true},
		{"localhost:8080", "LOCALHOST.:8080", true},
		{"api.example.com", "API.Example.COM.:443", true},
		{"::1", "[::1]:8080", true},
		{"[::1]", "[0:0:0:0:0:0:0:1]:8080", true},
		{"[::1]:8080", "[0::1]:8080", true},
		{"127.0.0.1", "[::ffff:127.0.0.1]:80", true},
		{"localhost", "127.0.0.1:8080", false},
		{"127.0.0.1", "[::1]:8080", false},
		{"localhost:8080", "localhost:8081", false},
	}
	for _, tt := range tests {
		t.Run(tt.match+" "+tt.key, func(t *testing.T) {
			l := newLimiter(t, Options{
				Budgets:   []Budget{{Match: tt.match, Requests: 1, Window: time.Minute}},
				Endpoints: []Endpoint{{ID: "a", Upstream: tt.key}, {ID: "b", Upstream: tt.key}},
			})
			if _, err := l.AdmitAt(Request{Endpoint: "a"}, at(0)); err != nil {
				t.Fatal(err)
			}
			_, err := l.AdmitAt(Request{Endpoint: "b"}, at(0))
			if held := err != nil; held != tt.same {
				t.Fatalf("second call held: %v, want %v (%v)", held, tt.same, err)
			}
			if _, ok := l.Budget(strings.ToUpper(tt.match)); !ok {
				t.Errorf("Budget(%q) not found", strings.ToUpper(tt.match))
			}
		})
	}
}

func TestBudgetsNamingOneUpstreamTwiceRefused(t *testing.T) {
	_, err := New(Options{Budgets: []Budget{{Match: "localhost", Requests: 1}, {Match: "LOCALHOST.", Requests: 2}}})
	if err == nil || !strings.Contains(err.Error(), "name the same upstream") {
		t.Fatalf("got %v", err)
	}
}

func TestLoopbackNearMisses(t *testing.T) {
	l := newLimiter(t, Options{
		Budgets: []Budget{{Match: "localhost:8080", Requests: 1}, {Match: "api.example.com", Requests: 1}},
		Endpoints: []Endpoint{
			{ID: "spec.a", Upstream: "localhost:8080"},
			{ID: "spec.op", Upstream: "127.0.0.1:8080"},
			{ID: "spec.v6", Upstream: "[::1]:8080"},
			{ID: "spec.other", Upstream: "127.0.0.1:9090"},
			{ID: "ext", Upstream: "api.example.com:443"},
		},
	})
	got := l.LoopbackNearMisses()
	want := []string{
		`upstream 127.0.0.1:8080 matches no budget, but budget "localhost:8080" names the same machine another way; add a budget for 127.0.0.1:8080 or join the specs to one named upstream`,
		`upstream [::1]:8080 matches no budget, but budget "localhost:8080" names the same machine another way; add a budget for [::1]:8080 or join the specs to one named upstream`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
