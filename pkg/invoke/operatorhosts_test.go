package invoke

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A local API the operator pointed at (its base URL, the loopback address
// its spec came from) was refused by block_private_networks, with a hint
// to try again later (issue 33 item 1). The operator's addresses connect;
// a redirect or a spec's own server elsewhere on loopback is still
// refused, with a hint naming block_private_networks and what changes it.
func TestBlockPrivateNetworksAllowsTheOperatorsLocalAPI(t *testing.T) {
	other := newRecorder(t, nil)
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/things", http.StatusFound)
	})
	direct := newRecorder(t, nil)
	hostport := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return HostPort(u)
	}
	localhost := "http://localhost:" + direct.URL[strings.LastIndex(direct.URL, ":")+1:]
	tests := []struct {
		name     string
		base     string
		operator []string
		allowed  []string // allowed_hosts, for the redirect
		wantOK   bool
	}{
		{"operator address", direct.URL, []string{hostport(direct.URL)}, nil, true},
		{"operator name resolving to loopback", localhost, []string{hostport(localhost)}, nil, true},
		{"not the operator's", direct.URL, nil, nil, false},
		{"another port of the operator's host", direct.URL, []string{hostport(other.URL)}, nil, false},
		{"redirect off the operator's address", up.URL, []string{hostport(up.URL)}, []string{hostport(other.URL)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{BlockPrivateNetworks: true, Specs: map[string]SpecOptions{
				"g": {OperatorHosts: tt.operator, AllowedHosts: tt.allowed},
			}}
			_, err := callThing(t, tt.base, opts)
			if tt.wantOK {
				if err != nil {
					t.Fatalf("got %v, want the call to go out", err)
				}
				return
			}
			var ue *UnreachableError
			if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "private") {
				t.Fatalf("got %T %v, want a private address refused", err, err)
			}
			if ue.Retryable() {
				t.Error("a refused address is retryable: waiting will not change the config")
			}
			h := ue.Hint()
			if !strings.Contains(h, "block_private_networks") || !strings.Contains(h, "--base-url") || strings.Contains(h, "Try again later") {
				t.Errorf("hint %q: want block_private_networks and --base-url, no try again later", h)
			}
		})
	}
	if other.count() != 0 {
		t.Error("a redirect reached a private address the operator did not write")
	}
}

// A spec's missing base URL said "Try again later" (issue 33 item 7): it
// names --base-url and base_url instead.
func TestNoServerHintNamesBaseURL(t *testing.T) {
	s := parseSpec(t, "g", getDoc, "")
	_, err := New(Options{}).Prepare(t.Context(), endpoint(t, s, "getThing"), Args{})
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("got %T %v", err, err)
	}
	if h := ue.Hint(); !strings.Contains(h, "--base-url") || strings.Contains(h, "Try again later") || ue.Retryable() {
		t.Errorf("hint %q retryable %v", h, ue.Retryable())
	}
}

// Upstream calls went out as Go-http-client/1.1 (issue 33 item 7): they
// carry the configured User-Agent unless the call or the spec's static
// headers set one.
func TestUserAgentNamesSpecgate(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]string // the spec's static headers
		args    Args
		want    string
	}{
		{"default", nil, Args{}, "specgate/1.2.3"},
		{"static header", map[string]string{"User-Agent": "my-app/1"}, Args{}, "my-app/1"},
		{"the model's header", nil, Args{Headers: map[string]string{"User-Agent": "agent/2"}}, "agent/2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newRecorder(t, nil)
			s := parseSpec(t, "g", getDoc, up.URL)
			c := New(Options{UserAgent: "specgate/1.2.3", Specs: map[string]SpecOptions{"g": {Headers: tt.headers}}})
			call, err := c.Prepare(t.Context(), endpoint(t, s, "getThing"), tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := call.Do(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := up.last(t).Header.Get("User-Agent"); got != tt.want {
				t.Errorf("User-Agent %q, want %q", got, tt.want)
			}
		})
	}
}
