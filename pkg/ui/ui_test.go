package ui

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fakeSource counts how often it is asked and records cancels.
type fakeSource struct {
	calls     atomic.Int64
	mu        sync.Mutex
	admitted  int64
	cancelled []string
	by        []Person
}

func (f *fakeSource) State(_ context.Context, _ time.Time) State {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return State{
		Upstreams: []Upstream{{Key: `<img src=x onerror=alert(1)>:443`, Used: 3, Limit: 10, Window: "10s", WindowSeconds: 10, Admitted: f.admitted}},
		Runs:      []Run{{ID: "run_1", Principal: "/ada", Status: "running", Done: 2, Total: 5}},
	}
}

func (f *fakeSource) CancelRun(_ context.Context, id string, by Person) error {
	if id != "run_1" {
		return ErrNotFound
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id)
	f.by = append(f.by, by)
	return nil
}

const adminToken = "admin-secret-token"

func verify(_ *http.Request, tok string) (string, error) {
	switch tok {
	case adminToken:
		return "ada", nil
	case "reader-token":
		return "", ErrNotAdmin
	case "throttled":
		return "", &ThrottledError{RetryAfter: 30 * time.Second}
	}
	return "", errors.New("wrong")
}

type page struct {
	t   *testing.T
	h   *Handler
	src *fakeSource
	now time.Time
}

func newPage(t *testing.T, o Options) *page {
	t.Helper()
	p := &page{t: t, src: &fakeSource{}, now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if o.Verify == nil && o.OneTimeToken == "" {
		o.Verify = verify
	}
	hub := NewHub(p.src, HubOptions{Now: func() time.Time { return p.now }})
	hub.Tick(t.Context())
	o.Hub = hub
	o.Now = func() time.Time { return p.now }
	p.h = New(o)
	return p
}

// do serves one request from the page's own origin unless hd says otherwise.
func (p *page) do(method, path, body string, hd map[string]string) *httptest.ResponseRecorder {
	p.t.Helper()
	r := httptest.NewRequest(method, "http://127.0.0.1:8080"+path, strings.NewReader(body))
	if method == http.MethodPost {
		r.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for k, v := range hd {
		if v == "" {
			r.Header.Del(k)
			continue
		}
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	p.h.ServeHTTP(w, r)
	return w
}

// signIn returns a session's cookie and CSRF token.
func (p *page) signIn() (cookie, csrf string) {
	p.t.Helper()
	w := p.do("POST", "/ui/api/signin", "", map[string]string{"Authorization": "Bearer " + adminToken})
	if w.Code != http.StatusOK {
		p.t.Fatalf("sign-in: %d %s", w.Code, w.Body)
	}
	var out struct{ CSRF string }
	json.Unmarshal(w.Body.Bytes(), &out)
	for _, c := range w.Result().Cookies() {
		if c.Name == cookieName {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui" {
				p.t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/ui", c)
			}
			return c.Name + "=" + c.Value, out.CSRF
		}
	}
	p.t.Fatal("sign-in set no cookie")
	return "", ""
}

func TestSignInAndState(t *testing.T) {
	p := newPage(t, Options{})
	cookie, _ := p.signIn()
	w := p.do("GET", "/ui/api/state", "", map[string]string{"Cookie": cookie})
	if w.Code != http.StatusOK {
		t.Fatalf("state: %d %s", w.Code, w.Body)
	}
	var st struct {
		Upstreams []Upstream
		Runs      []Run
		Samples   map[string][][6]int64
	}
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Upstreams) != 1 || st.Upstreams[0].Used != 3 || st.Upstreams[0].Limit != 10 || len(st.Runs) != 1 {
		t.Errorf("state = %s", w.Body)
	}
	if strings.Contains(w.Body.String(), "<img") {
		t.Errorf("the state carries raw markup: %s", w.Body)
	}
	if got := w.Header().Get("Content-Security-Policy"); !strings.HasPrefix(got, "default-src 'self'") {
		t.Errorf("CSP = %q", got)
	}
}

func TestBadInput(t *testing.T) {
	p := newPage(t, Options{})
	cookie, csrf := p.signIn()
	_, otherCSRF := p.signIn()
	cancel := `{"runId":"run_1"}`
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		hd     map[string]string
		want   int
	}{
		{"state without a cookie", "GET", "/ui/api/state", "", nil, 401},
		{"session without a cookie", "GET", "/ui/api/session", "", nil, 401},
		{"forged cookie", "GET", "/ui/api/state", "", map[string]string{"Cookie": cookieName + "=forged"}, 401},
		{"events without a cookie", "GET", "/ui/api/events", "", nil, 401},
		{"events with a forged cookie", "GET", "/ui/api/events", "", map[string]string{"Cookie": cookieName + "=forged"}, 401},
		{"decide without a cookie", "POST", "/ui/api/approvals/decide", `{"id":"apr_1","action":"approve"}`, map[string]string{csrfHeader: csrf}, 401},
		{"decide with a forged cookie", "POST", "/ui/api/approvals/decide", `{"id":"apr_1","action":"approve"}`, map[string]string{"Cookie": cookieName + "=forged", csrfHeader: csrf}, 401},
		{"cross-origin decide", "POST", "/ui/api/approvals/decide", `{"id":"apr_1","action":"approve"}`, map[string]string{"Cookie": cookie, csrfHeader: csrf, "Sec-Fetch-Site": "", "Origin": "https://evil.example"}, 403},
		{"huge cookie", "GET", "/ui/api/state", "", map[string]string{"Cookie": cookieName + "=" + strings.Repeat("a", 4000)}, 401},
		{"cancel without a cookie", "POST", "/ui/api/runs/cancel", cancel, map[string]string{csrfHeader: csrf}, 401},
		{"cancel without CSRF", "POST", "/ui/api/runs/cancel", cancel, map[string]string{"Cookie": cookie}, 403},
		{"cancel with another session's CSRF", "POST", "/ui/api/runs/cancel", cancel, map[string]string{"Cookie": cookie, csrfHeader: otherCSRF}, 403},
		{"cross-site cancel", "POST", "/ui/api/runs/cancel", cancel, map[string]string{"Cookie": cookie, csrfHeader: csrf, "Sec-Fetch-Site": "cross-site"}, 403},
		{"cross-origin cancel by Origin", "POST", "/ui/api/runs/cancel", cancel, map[string]string{"Cookie": cookie, csrfHeader: csrf, "Sec-Fetch-Site": "", "Origin": "https://evil.example"}, 403},
		{"cross-site sign-in", "POST", "/ui/api/signin", "", map[string]string{"Authorization": "Bearer " + adminToken, "Sec-Fetch-Site": "cross-site"}, 403},
		{"sign-in without a token", "POST", "/ui/api/signin", "", nil, 401},
		{"sign-in with a wrong token", "POST", "/ui/api/signin", "", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"sign-in without admin", "POST", "/ui/api/signin", "", map[string]string{"Authorization": "Bearer reader-token"}, 403},
		{"sign-in throttled", "POST", "/ui/api/signin", "", map[string]string{"Authorization": "Bearer throttled"}, 429},
		{"sign-in with a huge header", "POST", "/ui/api/signin", "", map[string]string{"Authorization": "Bearer " + strings.Repeat("x", 9000)}, 401},
		{"an id of 1 MB", "POST", "/ui/api/runs/cancel", `{"runId":"` + strings.Repeat("r", 1<<20) + `"}`, map[string]string{"Cookie": cookie, csrfHeader: csrf}, 413},
		{"an id over the bound", "POST", "/ui/api/runs/cancel", `{"runId":"` + strings.Repeat("r", 200) + `"}`, map[string]string{"Cookie": cookie, csrfHeader: csrf}, 400},
		{"not JSON", "POST", "/ui/api/runs/cancel", `runId=run_1`, map[string]string{"Cookie": cookie, csrfHeader: csrf}, 400},
		{"an unknown run", "POST", "/ui/api/runs/cancel", `{"runId":"run_2"}`, map[string]string{"Cookie": cookie, csrfHeader: csrf}, 404},
		{"cancel", "POST", "/ui/api/runs/cancel", cancel, map[string]string{"Cookie": cookie, csrfHeader: csrf}, 200},
		{"GET on a POST route", "GET", "/ui/api/runs/cancel", "", map[string]string{"Cookie": cookie}, 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := p.do(tc.method, tc.path, tc.body, tc.hd)
			if w.Code != tc.want {
				t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, w.Code, w.Body, tc.want)
			}
			if tc.want != 200 && strings.Contains(w.Body.String(), "upstreams") {
				t.Errorf("a refusal carries state: %s", w.Body)
			}
			if strings.Contains(w.Body.String(), adminToken) {
				t.Errorf("the answer holds the token")
			}
		})
	}
	if got := p.src.cancelled; len(got) != 1 || got[0] != "run_1" {
		t.Errorf("cancelled = %v, want [run_1] once", got)
	}
	if got := p.src.by; len(got) != 1 || got[0] != (Person{Who: "ada", From: "192.0.2.1"}) {
		t.Errorf("cancelled by %v, want ada from the request's address", got)
	}
}

func TestSessionExpires(t *testing.T) {
	p := newPage(t, Options{SessionTTL: time.Hour})
	cookie, csrf := p.signIn()
	for _, tc := range []struct {
		after time.Duration
		want  int
	}{{59 * time.Minute, 200}, {time.Minute, 401}, {0, 401}} {
		p.now = p.now.Add(tc.after)
		if w := p.do("GET", "/ui/api/state", "", map[string]string{"Cookie": cookie}); w.Code != tc.want {
			t.Errorf("at %s: %d, want %d", p.now.Format(time.TimeOnly), w.Code, tc.want)
		}
	}
	// an expired cookie decides nothing, CSRF token or not
	body := `{"id":"apr_1","action":"approve"}`
	if w := p.do("POST", "/ui/api/approvals/decide", body, map[string]string{"Cookie": cookie, csrfHeader: csrf}); w.Code != http.StatusUnauthorized {
		t.Errorf("deciding with an expired cookie: %d, want 401", w.Code)
	}
	if w := p.do("POST", "/ui/api/runs/cancel", `{"runId":"run_1"}`, map[string]string{"Cookie": cookie, csrfHeader: csrf}); w.Code != http.StatusUnauthorized || len(p.src.cancelled) != 0 {
		t.Errorf("cancelling with an expired cookie: %d, cancelled %v", w.Code, p.src.cancelled)
	}
}

func TestSignOutEndsTheSession(t *testing.T) {
	p := newPage(t, Options{})
	cookie, csrf := p.signIn()
	if w := p.do("POST", "/ui/api/signout", "", map[string]string{"Cookie": cookie, csrfHeader: csrf}); w.Code != http.StatusNoContent {
		t.Fatalf("sign-out: %d", w.Code)
	}
	if w := p.do("GET", "/ui/api/state", "", map[string]string{"Cookie": cookie}); w.Code != http.StatusUnauthorized {
		t.Errorf("state after sign-out: %d, want 401", w.Code)
	}
}

func TestSessionsAreBounded(t *testing.T) {
	p := newPage(t, Options{MaxSessions: 3})
	first, _ := p.signIn()
	for range 3 {
		p.now = p.now.Add(time.Second)
		p.signIn()
	}
	if n := len(p.h.ss.m); n != 3 {
		t.Errorf("%d sessions kept, want 3", n)
	}
	if w := p.do("GET", "/ui/api/state", "", map[string]string{"Cookie": first}); w.Code != http.StatusUnauthorized {
		t.Errorf("the oldest session: %d, want 401", w.Code)
	}
}

func TestOneTimeToken(t *testing.T) {
	p := newPage(t, Options{OneTimeToken: "once"})
	tests := []struct {
		name string
		path string
		want int
	}{
		{"wrong token", "/ui/?token=twice", 401},
		{"right token", "/ui/?token=once", 303},
		{"used again", "/ui/?token=once", 401},
	}
	for _, tc := range tests {
		w := p.do("GET", tc.path, "", nil)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
		if tc.want == 303 && (w.Header().Get("Location") != "/ui/" || len(w.Result().Cookies()) != 1) {
			t.Errorf("%s: Location %q, cookies %v", tc.name, w.Header().Get("Location"), w.Result().Cookies())
		}
	}
}

func TestWrongTokensThrottledWithoutVerify(t *testing.T) {
	p := newPage(t, Options{OneTimeToken: "once", FailedPerMinute: 3})
	var got []int
	for range 5 {
		got = append(got, p.do("POST", "/ui/api/signin", "", map[string]string{"Authorization": "Bearer guess"}).Code)
	}
	if want := []int{401, 401, 401, 429, 429}; !equal(got, want) {
		t.Errorf("codes = %v, want %v", got, want)
	}
	p.now = p.now.Add(time.Minute)
	if w := p.do("POST", "/ui/api/signin", "", map[string]string{"Authorization": "Bearer once"}); w.Code != 200 {
		t.Errorf("the right token a minute later: %d", w.Code)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAssetsAreEmbeddedAndSelfContained(t *testing.T) {
	p := newPage(t, Options{})
	for _, path := range []string{"/ui/", "/ui/app.js", "/ui/app.css"} {
		w := p.do("GET", path, "", nil)
		if w.Code != 200 {
			t.Fatalf("%s: %d", path, w.Code)
		}
		body := w.Body.String()
		for _, bad := range []string{"http://", "https://", "innerHTML", "outerHTML", "insertAdjacentHTML", "eval(", "<script>"} {
			if strings.Contains(body, bad) && !(bad == "http://" && strings.Contains(body, "http://www.w3.org/2000/svg")) {
				t.Errorf("%s holds %q", path, bad)
			}
		}
	}
	if w := p.do("GET", "/ui", "", nil); w.Code != http.StatusSeeOther {
		t.Errorf("/ui: %d, want a redirect to /ui/", w.Code)
	}
}

func TestStateComputedOncePerTickFor100Viewers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPage(t, Options{})
		cookie, _ := p.signIn()
		ctx, cancel := context.WithCancel(t.Context())
		hub := NewHub(p.src, HubOptions{})
		p.h.o.Hub = hub
		p.src.calls.Store(0)
		done := make(chan struct{})
		go func() { hub.Run(ctx); close(done) }()
		synctest.Wait()
		for tick := range 3 {
			var wg sync.WaitGroup
			for range 100 {
				wg.Go(func() {
					w := p.do("GET", "/ui/api/state", "", map[string]string{"Cookie": cookie})
					if w.Code != 200 {
						t.Errorf("viewer: %d", w.Code)
					}
				})
			}
			wg.Wait()
			if got := p.src.calls.Load(); got != int64(tick+1) {
				t.Errorf("after tick %d and 100 viewers, the source was asked %d times", tick+1, got)
			}
			time.Sleep(time.Second) // in the bubble: one tick passes
			synctest.Wait()
		}
		cancel()
		<-done
	})
}

func TestHubSamplesAdmittedPerSecond(t *testing.T) {
	src := &fakeSource{}
	now := time.Unix(1000, 0)
	hub := NewHub(src, HubOptions{Samples: 3, Now: func() time.Time { return now }})
	for _, adm := range []int64{0, 4, 4, 10, 11} {
		src.mu.Lock()
		src.admitted = adm
		src.mu.Unlock()
		hub.Tick(t.Context())
		now = now.Add(time.Second)
	}
	var st struct{ Samples map[string][][6]int64 }
	if err := json.Unmarshal(hub.JSON(), &st); err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, s := range st.Samples[`<img src=x onerror=alert(1)>:443`] {
		got = append(got, s[1])
	}
	if want := []int64{0, 6, 1}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("admitted per second, last 3 = %v, want %v", got, want)
	}
}

func TestAuditTailKeepsTheLast100Lines(t *testing.T) {
	var a AuditTail
	for i := range 150 {
		line := `{"n":` + strings.Repeat(" ", i%3) + string(rune('0'+i%10)) + "}\n"
		// written in two pieces, as a buffered writer may
		io.WriteString(&a, line[:3])
		io.WriteString(&a, line[3:])
	}
	io.WriteString(&a, "not json\n")
	lines := a.Lines()
	if len(lines) != AuditLines {
		t.Fatalf("%d lines, want %d", len(lines), AuditLines)
	}
	var last struct{ N int }
	json.Unmarshal(lines[len(lines)-1], &last)
	if last.N != 9 {
		t.Errorf("last line = %s, want n 9 (line 149)", lines[len(lines)-1])
	}
	var nilTail *AuditTail
	if n, err := nilTail.Write([]byte("{}\n")); n != 3 || err != nil || len(nilTail.Lines()) != 0 {
		t.Errorf("a nil tail: %d, %v", n, err)
	}
}

func TestDecideApprovals(t *testing.T) {
	room := NewApprovals(0, nil)
	p := newPage(t, Options{Approvals: room})
	cookie, csrf := p.signIn()
	_, otherCSRF := p.signIn()
	type asked struct {
		d   Decision
		err error
	}
	answers := make(chan asked, 1)
	go func() {
		d, err := room.Ask(t.Context(), Approval{Method: "POST", Path: "/pet"}, time.Minute)
		answers <- asked{d, err}
	}()
	var id string
	for id == "" && t.Context().Err() == nil {
		if got, _ := room.Pending(); len(got) == 1 {
			id = got[0].ID
		}
		runtime.Gosched()
	}
	body := func(id, action string) string { return `{"id":"` + id + `","action":"` + action + `"}` }
	auth := map[string]string{"Cookie": cookie, csrfHeader: csrf}
	tests := []struct {
		name string
		body string
		hd   map[string]string
		want int
	}{
		{"without CSRF", body(id, "approve"), map[string]string{"Cookie": cookie}, 403},
		{"another session's CSRF", body(id, "approve"), map[string]string{"Cookie": cookie, csrfHeader: otherCSRF}, 403},
		{"an id of 1 MB", body(strings.Repeat("a", 1<<20), "approve"), auth, 413},
		{"an unknown action", body(id, "maybe"), auth, 400},
		{"another deployment's id", body("apr_00000000000000000000000000000000", "approve"), auth, 404},
		{"approve", body(id, "approve"), auth, 200},
		{"approve again", body(id, "approve"), auth, 404},
		{"decline once decided", body(id, "decline"), auth, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if w := p.do("POST", "/ui/api/approvals/decide", tc.body, tc.hd); w.Code != tc.want {
				t.Errorf("%d %s, want %d", w.Code, w.Body, tc.want)
			}
		})
	}
	a := <-answers
	if a.err != nil || !a.d.Approved || a.d.By != (Person{Who: "ada", From: "192.0.2.1"}) {
		t.Errorf("the write heard %+v, %v; want approved by ada", a.d, a.err)
	}
}

func TestTenThousandApprovalsPendingAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		room := NewApprovals(0, nil)
		ctx, cancel := context.WithCancel(t.Context())
		errs := make(chan error, 10000)
		for range 10000 {
			go func() {
				_, err := room.Ask(ctx, Approval{Method: "DELETE", Path: "/pet/1"}, time.Hour)
				errs <- err
			}()
		}
		synctest.Wait()
		shown, total := room.Pending()
		if total != DefaultMaxPending || len(shown) != maxShown {
			t.Errorf("pending %d, shown %d; want %d and %d", total, len(shown), DefaultMaxPending, maxShown)
		}
		refused := 0
		for range 10000 - DefaultMaxPending {
			if errors.Is(<-errs, ErrTooManyPending) {
				refused++
			}
		}
		if refused != 10000-DefaultMaxPending {
			t.Errorf("%d refused at once, want %d", refused, 10000-DefaultMaxPending)
		}
		hub := NewHub(&fakeSource{}, HubOptions{Approvals: room})
		hub.Tick(ctx)
		if n := len(hub.JSON()); n > 200<<10 {
			t.Errorf("the state with 1,000 pending is %d bytes", n)
		}
		// what a signed-in viewer reads: the oldest 100, and the count
		p := newPage(t, Options{})
		p.h.o.Hub = hub
		cookie, _ := p.signIn()
		w := p.do("GET", "/ui/api/state", "", map[string]string{"Cookie": cookie})
		var st struct {
			Approvals []Approval
			Pending   int `json:"pendingApprovals"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Code != 200 {
			t.Fatalf("state: %d %v", w.Code, err)
		}
		if len(st.Approvals) != maxShown || st.Pending != DefaultMaxPending {
			t.Errorf("the page lists %d of %d pending; want %d of %d", len(st.Approvals), st.Pending, maxShown, DefaultMaxPending)
		}
		cancel()
		for range DefaultMaxPending {
			<-errs
		}
	})
}
