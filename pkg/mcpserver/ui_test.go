package mcpserver

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/upstreamtest"
	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/serve"
	"github.com/specgate/specgate/pkg/spec"
	"github.com/specgate/specgate/pkg/ui"
)

// The page's used and limit are rate_limit_status's, after N calls.
func TestUIStateAgreesWithRateLimitStatus(t *testing.T) {
	f := newGovFixture(t, govConfig{
		upstream: upstreamtest.Options{Limit: 100, Window: time.Second},
		budgets: func(key string) []ratelimit.Budget {
			return []ratelimit.Budget{{Match: key, Requests: 10, Window: time.Minute, OnLimit: ratelimit.Reject}}
		},
	})
	for range 4 {
		f.invokeOK(t, "quota.listItems")
	}
	st := f.callOK(t, "rate_limit_status", nil)
	up := onlyUpstream(t, st)
	got := f.srv.UISource().State(t.Context(), time.Now())
	if len(got.Upstreams) != 1 {
		t.Fatalf("page upstreams = %+v", got.Upstreams)
	}
	u := got.Upstreams[0]
	limit := up["limits"].(map[string]any)["requestsPerWindow"]
	if u.Key != up["upstream"] || float64(u.Used) != up["requestsUsed"] || float64(u.Limit) != limit || float64(u.Admitted) != up["admitted"] {
		t.Errorf("page = %+v, rate_limit_status = %v", u, up)
	}
	if u.Used != 4 || u.Limit != 10 || u.WindowSeconds != 60 {
		t.Errorf("page used %d of %d per %gs, want 4 of 10 per 60s", u.Used, u.Limit, u.WindowSeconds)
	}
	if len(got.Principals) != 1 || got.Principals[0].Calls != 4 {
		t.Errorf("principals = %+v, want one with 4 calls", got.Principals)
	}
}

func TestUISignIn(t *testing.T) {
	opts := serve.Options{
		Tokens: map[string]Principal{
			"admin-tok":  {Subject: "ada", Scopes: []string{"specgate:admin"}},
			"reader-tok": {Subject: "bob", Scopes: []string{"specgate:read"}},
		},
		Scopes:              inauth.Scopes{Read: "specgate:read", Admin: "specgate:admin"},
		MetricsToken:        "metrics-tok",
		FailedAuthPerWindow: 2,
		Now:                 func() time.Time { return t0 },
	}
	f := newHTTPFixture(t, opts, 0)
	opts.Windows = serve.NewWindows(nil, 0)
	verify := serve.UISignIn(f.srv, opts)
	tests := []struct {
		name, token, who string
		err              func(error) bool
	}{
		{"admin", "admin-tok", "ada", nil},
		{"metrics token", "metrics-tok", "metrics token", nil},
		{"no admin scope", "reader-tok", "", func(err error) bool { return errors.Is(err, ui.ErrNotAdmin) }},
		{"wrong 1", "nope", "", func(err error) bool { return err != nil && !errors.Is(err, ui.ErrNotAdmin) }},
		{"wrong 2", "nope", "", func(err error) bool { var te *ui.ThrottledError; return err != nil && !errors.As(err, &te) }},
		{"wrong 3, throttled", "nope", "", func(err error) bool {
			var te *ui.ThrottledError
			return errors.As(err, &te) && te.RetryAfter == time.Minute
		}},
		{"a valid token from a throttled address passes", "admin-tok", "ada", nil},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("POST", "/ui/api/signin", nil)
		who, err := verify(r, tc.token)
		if tc.err == nil && (err != nil || who != tc.who) {
			t.Errorf("%s: %q, %v; want %q", tc.name, who, err, tc.who)
		}
		if tc.err != nil && !tc.err(err) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
		if err != nil && strings.Contains(err.Error(), tc.token) {
			t.Errorf("%s: the error holds the token", tc.name)
		}
	}
}

// The page is mounted on the HTTP listener, answers its own origin on a
// public host (where /mcp refuses browser origins) and shows nothing
// before sign-in.
func TestUIMountedOnTheHTTPHandler(t *testing.T) {
	opts := serve.Options{Tokens: map[string]Principal{"admin-tok": {Subject: "ada"}}}
	var page http.Handler
	opts.UI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { page.ServeHTTP(w, r) })
	f := newHTTPFixture(t, opts, 0)
	hub := ui.NewHub(f.srv.UISource(), ui.HubOptions{})
	hub.Tick(t.Context())
	page = ui.New(ui.Options{Hub: hub, Verify: serve.UISignIn(f.srv, opts)})

	get := func(path string, hd ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", f.ts.URL+path, nil)
		for i := 0; i+1 < len(hd); i += 2 {
			req.Header.Set(hd[i], hd[i+1])
		}
		resp, err := f.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := get("/ui/"); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("/ui/: %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	if resp := get("/ui/api/state"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("state before sign-in: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", f.ts.URL+"/ui/api/signin", nil)
	req.Host = "specgate.example.com"
	req.Header.Set("Origin", "https://specgate.example.com")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Authorization", "Bearer admin-tok")
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Who, CSRF string }
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != 200 || out.Who != "ada" || out.CSRF == "" {
		t.Errorf("sign-in from the page's own public origin: %d %+v", resp.StatusCode, out)
	}
}

func TestPrincipalNameOfAKey(t *testing.T) {
	for _, p := range []Principal{{Subject: "ada"}, {Subject: "ada", Org: "acme"}, {Subject: "a/b@c", Org: "x y"}, {Subject: localPrincipal}} {
		if got := principalName(p.Key()); got != p.String() {
			t.Errorf("principalName(%q) = %q, want %q", p.Key(), got, p.String())
		}
	}
}

// Learned limits keep the header that set them, and a shadow budget its
// would-refuse count, as rate_limit_status renders them.
func TestUIUpstreamFromStatus(t *testing.T) {
	rem, src := int64(7), "Retry-After"
	got := uiUpstream(UpstreamStatus{Key: "api.github.com:443", RequestsUsed: 3, Limits: UpstreamLimits{RequestsPerWindow: 30, Window: "1m0s"},
		Learned: []LearnedLimit{{Resource: "core", BlockSource: &src, BlockedForSeconds: 12,
			Requests: &LearnedQuota{Limit: 5000, Remaining: &rem, Source: "X-RateLimit-Limit", ResetInSeconds: 30}}},
		Shadow: &ShadowBudget{Calls: 9, WouldRefuse: 4, RequestsUsed: 9, Limits: UpstreamLimits{RequestsPerWindow: 5}}})
	if got.Used != 3 || got.Limit != 30 || got.WindowSeconds != 60 {
		t.Errorf("budget = %d/%d per %gs", got.Used, got.Limit, got.WindowSeconds)
	}
	kinds := map[string]ui.Learned{}
	for _, l := range got.Learned {
		kinds[l.Kind] = l
	}
	if b := kinds["block"]; b.Source != "Retry-After" || b.ResetInSeconds != 12 || b.Resource != "core" {
		t.Errorf("block = %+v", b)
	}
	if r := kinds["requests"]; r.Limit != 5000 || r.Remaining == nil || *r.Remaining != 7 || r.Source != "X-RateLimit-Limit" {
		t.Errorf("requests = %+v", r)
	}
	if len(got.Learned) != 2 {
		t.Errorf("learned = %+v, want a block and a requests quota", got.Learned)
	}
	if got.Shadow == nil || got.Shadow.WouldRefuse != 4 || got.Shadow.Calls != 9 || got.Shadow.Limit != 5 {
		t.Errorf("shadow = %+v", got.Shadow)
	}
}

func TestPrincipalStatsAreBounded(t *testing.T) {
	st := newStats()
	e := &spec.Endpoint{ID: "s.e"}
	for i := range maxPrincipalStats + 5 {
		st.observe("org/p"+strconv.Itoa(i), e, "up", time.Millisecond, 0, 0)
	}
	st.observe("org/p1", e, "up", time.Millisecond, time.Second, 0)
	st.refused("org/p1", &ratelimit.LimitError{Scope: ratelimit.ScopeProxy})
	if n := len(st.who); n != maxPrincipalStats {
		t.Errorf("%d principals counted, want %d", n, maxPrincipalStats)
	}
	if p := st.who["org/p1"]; p == nil || p.calls != 1 || p.queueTurns != 1 || p.refused["proxy"] != 1 {
		t.Errorf("p1 = %+v, want 1 call, 1 queue turn, 1 proxy refusal", p)
	}
}

// The event stream reaches a viewer through the HTTP handler a frame a
// tick, as it is written (nothing on the way buffers it).
func TestUIEventsStreamThroughTheHTTPHandler(t *testing.T) {
	opts := serve.Options{Tokens: map[string]Principal{"admin-tok": {Subject: "ada"}}}
	var page http.Handler
	opts.UI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { page.ServeHTTP(w, r) })
	f := newHTTPFixture(t, opts, 0)
	hub := ui.NewHub(f.srv.UISource(), ui.HubOptions{})
	page = ui.New(ui.Options{Hub: hub, Verify: serve.UISignIn(f.srv, opts)})

	req, _ := http.NewRequest("POST", f.ts.URL+"/ui/api/signin", nil)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Authorization", "Bearer admin-tok")
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(resp.Cookies()) != 1 {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	req, _ = http.NewRequestWithContext(t.Context(), "GET", f.ts.URL+"/ui/api/events", nil)
	req.AddCookie(resp.Cookies()[0])
	stream, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != 200 || stream.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %q", stream.StatusCode, stream.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(stream.Body)
	for tick := range 3 {
		hub.Tick(t.Context()) // the reader waits for each frame: none is held back
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("tick %d: %v", tick, err)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				if !json.Valid([]byte(data)) || !strings.Contains(data, `"upstreams"`) {
					t.Errorf("tick %d: data %.80q", tick, data)
				}
				break
			}
		}
	}
}
