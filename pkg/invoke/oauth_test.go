package invoke

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/spec"
)

// tokenServer is a loopback OAuth2 token endpoint (at /oauth/token, where
// authDoc's oauth scheme points) and an upstream in one. It counts token
// requests and the tokens it issued, and records the Authorization of every
// other request.
type tokenServer struct {
	*httptest.Server

	// secrets maps the client ids it knows to their secrets.
	secrets map[string]string
	// postOnly refuses HTTP basic client authentication, as providers
	// that support only client_secret_post do.
	postOnly bool
	// expiresIn is the tokens' lifetime in seconds; 0 leaves it out.
	expiresIn int
	// gate, when set, holds every token answer until open is called (or
	// a second token request arrives: the calls are no longer sharing one
	// fetch, and holding them would only hang the test). Set it with
	// setGate.
	gate     chan struct{}
	gateOnce *sync.Once
	// arrived is closed when the first token request arrives.
	arrived     chan struct{}
	arrivedOnce sync.Once
	// api answers every other path; nil answers 200 with the Authorization
	// it received (so an unredacted token would show in the result).
	api http.HandlerFunc

	requests atomic.Int32 // token requests of any outcome
	issued   atomic.Int32 // tokens issued

	mu       sync.Mutex
	forms    []url.Values // token request bodies
	perID    map[string]int
	apiAuths []string
}

func newTokenServer(t *testing.T, ts *tokenServer) *tokenServer {
	t.Helper()
	if ts.secrets == nil {
		ts.secrets = map[string]string{clientID: secClient}
	}
	ts.perID = map[string]int{}
	ts.arrived = make(chan struct{})
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/oauth/token" {
			ts.mu.Lock()
			ts.apiAuths = append(ts.apiAuths, r.Header.Get("Authorization"))
			ts.mu.Unlock()
			if ts.api != nil {
				ts.api(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"youSent": r.Header.Get("Authorization")})
			return
		}
		if ts.requests.Add(1) > 1 {
			ts.open()
		}
		ts.arrivedOnce.Do(func() { close(ts.arrived) })
		ts.mu.Lock()
		gate := ts.gate
		ts.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		_ = r.ParseForm()
		ts.mu.Lock()
		ts.forms = append(ts.forms, r.PostForm)
		ts.mu.Unlock()
		id, secret, basic := r.BasicAuth()
		if basic {
			id, _ = url.QueryUnescape(id)
			secret, _ = url.QueryUnescape(secret)
		} else {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.PostForm.Get("grant_type") != "client_credentials":
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"error":"unsupported_grant_type"}`)
			return
		case basic && ts.postOnly:
			w.WriteHeader(401)
			_, _ = io.WriteString(w, `{"error":"invalid_client","error_description":"use client_secret_post"}`)
			return
		case id == "" || ts.secrets[id] != secret:
			w.WriteHeader(401)
			_, _ = io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		n := ts.issued.Add(1)
		ts.mu.Lock()
		ts.perID[id]++
		ts.mu.Unlock()
		body := map[string]any{"access_token": fmt.Sprintf("SECRET-access-%s-%d", id, n), "token_type": "bearer"}
		if ts.expiresIn > 0 {
			body["expires_in"] = ts.expiresIn
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *tokenServer) sentAuths() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.apiAuths...)
}

func (ts *tokenServer) form(i int) url.Values {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.forms[i]
}

// setGate holds token answers until open.
func (ts *tokenServer) setGate() {
	ts.mu.Lock()
	ts.gate, ts.gateOnce = make(chan struct{}), new(sync.Once)
	ts.mu.Unlock()
}

// open lets held token answers go.
func (ts *tokenServer) open() {
	ts.mu.Lock()
	g, once := ts.gate, ts.gateOnce
	ts.mu.Unlock()
	if g != nil {
		once.Do(func() { close(g) })
	}
}

func (ts *tokenServer) issuedTo(id string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.perID[id]
}

func oauthOptions() Options {
	return Options{Specs: map[string]SpecOptions{"a": {Auth: map[string]Credential{
		"oauth": {ClientID: clientID, ClientSecret: secClient, Scopes: []string{"read"}},
	}}}}
}

// callOnce prepares and sends one call and checks its result and error
// show no client secret and no access token.
func callOnce(t *testing.T, ctx context.Context, c *Client, e *spec.Endpoint) (*Result, error) {
	t.Helper()
	call, err := c.Prepare(ctx, e, Args{})
	if err != nil {
		return nil, err
	}
	res, err := call.Do(ctx)
	assertNoOAuthSecrets(t, res, err, call)
	return res, err
}

// assertNoOAuthSecrets checks nothing the model could see holds a client
// secret or an access token (every one the tests issue starts with
// "SECRET-"), in any encoding the secret forms cover.
func assertNoOAuthSecrets(t *testing.T, res *Result, err error, call *Call) {
	t.Helper()
	assertNoSecrets(t, res, err, call)
	var texts []string
	if res != nil {
		b, _ := json.Marshal(res)
		texts = append(texts, string(b), string(res.RawBody), fmt.Sprintf("%v", res.RawHeaders))
	}
	if err != nil {
		texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
	}
	for _, txt := range texts {
		if strings.Contains(txt, "SECRET-") || strings.Contains(txt, base64.StdEncoding.EncodeToString([]byte(clientID+":"+secClient))) {
			t.Errorf("a secret leaked in %.300q", txt)
		}
	}
}

// callConcurrently sends n calls at once and returns their errors. Token
// answers are held until n-1 callers wait for the one fetch in flight, so
// the calls truly overlap.
func callConcurrently(t *testing.T, c *Client, ts *tokenServer, e *spec.Endpoint, n int) []error {
	t.Helper()
	ts.setGate()
	var waiting atomic.Int32
	c.tokens.onWait = func() {
		if waiting.Add(1) == int32(n-1) {
			ts.open()
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = callOnce(t, t.Context(), c, e)
		})
	}
	wg.Wait()
	c.tokens.onWait = nil
	return errs
}

func TestOAuthConcurrentCallsShareOneFetch(t *testing.T) {
	ts := newTokenServer(t, &tokenServer{expiresIn: 3600})
	s := parseSpec(t, "a", authDoc, ts.URL)
	c := New(oauthOptions())
	for i, err := range callConcurrently(t, c, ts, endpoint(t, s, "o"), 20) {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if got := ts.requests.Load(); got != 1 {
		t.Errorf("token requests: got %d, want 1", got)
	}
	auths := ts.sentAuths()
	if len(auths) != 20 {
		t.Fatalf("upstream got %d calls, want 20", len(auths))
	}
	for _, a := range auths {
		if a != "Bearer SECRET-access-"+clientID+"-1" {
			t.Errorf("sent %q", a)
		}
	}
	// The token request: client credentials grant, the configured scope,
	// the client authenticated with HTTP basic first.
	if f := ts.form(0); f.Get("grant_type") != "client_credentials" || f.Get("scope") != "read" || f.Get("client_secret") != "" {
		t.Errorf("token request form %v", f)
	}
}

func TestOAuthTokenReusedUntilShortlyBeforeExpiry(t *testing.T) {
	ts := newTokenServer(t, &tokenServer{expiresIn: 3600})
	s := parseSpec(t, "a", authDoc, ts.URL)
	e := endpoint(t, s, "o")
	c := New(oauthOptions())
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var elapsed atomic.Int64
	c.tokens.now = func() time.Time { return base.Add(time.Duration(elapsed.Load())) }

	call := func() {
		t.Helper()
		if _, err := callOnce(t, t.Context(), c, e); err != nil {
			t.Fatal(err)
		}
	}
	call()
	// A tenth of the hour, at most a minute, early: valid until 59 minutes.
	elapsed.Store(int64(59*time.Minute - time.Second))
	call()
	if got := ts.issued.Load(); got != 1 {
		t.Fatalf("tokens issued before expiry: got %d, want 1", got)
	}
	elapsed.Store(int64(59*time.Minute + time.Second))
	for i, err := range callConcurrently(t, c, ts, e, 20) {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if got := ts.issued.Load(); got != 2 {
		t.Errorf("tokens issued after expiry: got %d, want 2 (exactly one new fetch)", got)
	}
	auths := ts.sentAuths()
	for _, a := range auths[2:] {
		if a != "Bearer SECRET-access-"+clientID+"-2" {
			t.Errorf("after expiry sent %q", a)
		}
	}
}

func TestOAuthTokenWithoutExpiryKeptUntilRefused(t *testing.T) {
	ts := newTokenServer(t, &tokenServer{})
	s := parseSpec(t, "a", authDoc, ts.URL)
	c := New(oauthOptions())
	var elapsed atomic.Int64
	c.tokens.now = func() time.Time { return time.Unix(0, elapsed.Load()) }
	for range 3 {
		if _, err := callOnce(t, t.Context(), c, endpoint(t, s, "o")); err != nil {
			t.Fatal(err)
		}
		elapsed.Add(int64(365 * 24 * time.Hour))
	}
	if got := ts.issued.Load(); got != 1 {
		t.Errorf("tokens issued: got %d, want 1", got)
	}
}

func TestOAuthClientSecretPost(t *testing.T) {
	ts := newTokenServer(t, &tokenServer{postOnly: true, expiresIn: 60})
	s := parseSpec(t, "a", authDoc, ts.URL)
	e := endpoint(t, s, "o")
	c := New(oauthOptions())
	var elapsed atomic.Int64
	c.tokens.now = func() time.Time { return time.Unix(0, elapsed.Load()) }

	res, err := callOnce(t, t.Context(), c, e)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || ts.sentAuths()[0] != "Bearer SECRET-access-"+clientID+"-1" {
		t.Errorf("status %d, sent %q", res.StatusCode, ts.sentAuths())
	}
	// Basic was tried and refused, then the form body worked.
	if got := ts.requests.Load(); got != 2 {
		t.Errorf("token requests for the first token: got %d, want 2", got)
	}
	if f := ts.form(1); f.Get("client_id") != clientID || f.Get("client_secret") != secClient || f.Get("scope") != "read" {
		t.Errorf("client_secret_post form %v", f)
	}
	// The style that worked is remembered: the next token takes one request.
	elapsed.Store(int64(time.Minute))
	if _, err := callOnce(t, t.Context(), c, e); err != nil {
		t.Fatal(err)
	}
	if got := ts.requests.Load(); got != 3 {
		t.Errorf("token requests after expiry: got %d, want 3", got)
	}
	if ts.issued.Load() != 2 {
		t.Errorf("tokens issued: %d, want 2", ts.issued.Load())
	}
}

func TestOAuthConcurrent401RefetchesOnce(t *testing.T) {
	const n = 20
	first := "Bearer SECRET-access-" + clientID + "-1"
	all, refreshed := make(chan struct{}), make(chan struct{})
	var arrived atomic.Int32
	var refreshedOnce sync.Once
	ts := newTokenServer(t, &tokenServer{expiresIn: 3600})
	ts.api = func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != first {
			refreshedOnce.Do(func() { close(refreshed) })
			_, _ = io.WriteString(w, `{"ok":true}`)
			return
		}
		// The first token was revoked. Every call sent it; the first to
		// arrive is refused once all have, and the rest only after that
		// call came back with a new token: their 401s must not drop it.
		k := arrived.Add(1)
		if k == n {
			close(all)
		}
		wait := all
		if k > 1 {
			wait = refreshed
		}
		select {
		case <-wait:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"token revoked"}`)
	}
	s := parseSpec(t, "a", authDoc, ts.URL)
	e := endpoint(t, s, "o")
	c := New(oauthOptions())
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var res *Result
			res, errs[i] = callOnce(t, t.Context(), c, e)
			if errs[i] == nil && res.StatusCode != 200 {
				errs[i] = fmt.Errorf("status %d", res.StatusCode)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if got := ts.issued.Load(); got != 2 {
		t.Errorf("tokens issued: got %d, want 2 (one refetch after the 401s)", got)
	}
	auths := ts.sentAuths()
	if len(auths) != 2*n {
		t.Errorf("upstream calls: got %d, want %d (each sent once more)", len(auths), 2*n)
	}
}

func TestOAuthByPrincipalTokens(t *testing.T) {
	const adaSecret, bobSecret = "SECRET-ada-client-1", "SECRET-bob-client-2"
	ts := newTokenServer(t, &tokenServer{expiresIn: 3600, secrets: map[string]string{"ada-id": adaSecret, "bob-id": bobSecret}})
	var refused atomic.Bool
	ts.api = func(w http.ResponseWriter, r *http.Request) {
		// Bob's first token is revoked once.
		if r.Header.Get("Authorization") == "Bearer SECRET-access-bob-id-2" && refused.CompareAndSwap(false, true) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	}
	s := parseSpec(t, "a", authDoc, ts.URL)
	e := endpoint(t, s, "o")
	c := New(Options{Specs: map[string]SpecOptions{"a": {Auth: map[string]Credential{"oauth": {
		Scopes: []string{"read"},
		ByPrincipal: []PrincipalCredential{
			{Subject: "ada", Credential: Credential{ClientID: "ada-id", ClientSecret: adaSecret}},
			{Subject: "bob", Credential: Credential{ClientID: "bob-id", ClientSecret: bobSecret}},
		},
	}}}}})
	ada := WithPrincipal(t.Context(), Principal{Subject: "ada"})
	bob := WithPrincipal(t.Context(), Principal{Subject: "bob"})
	for _, ctx := range []context.Context{ada, bob, ada, bob} {
		res, err := callOnce(t, ctx, c, e)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("got %v, %v", res, err)
		}
		for _, sec := range []string{adaSecret, bobSecret} {
			if strings.Contains(string(res.RawBody), sec) {
				t.Errorf("secret in body")
			}
		}
	}
	want := []string{
		"Bearer SECRET-access-ada-id-1",
		"Bearer SECRET-access-bob-id-2", // refused
		"Bearer SECRET-access-bob-id-3",
		"Bearer SECRET-access-ada-id-1", // Bob's 401 left Ada's token alone
		"Bearer SECRET-access-bob-id-3",
	}
	if got := ts.sentAuths(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sent %q\nwant %q", got, want)
	}
	if ts.issuedTo("ada-id") != 1 || ts.issuedTo("bob-id") != 2 {
		t.Errorf("issued ada %d bob %d, want 1 and 2", ts.issuedTo("ada-id"), ts.issuedTo("bob-id"))
	}
	// A principal with no entry and no default: auth_error, nothing fetched.
	_, err := c.Prepare(WithPrincipal(t.Context(), Principal{Subject: "carol"}), e, Args{})
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Key != "specs[a].auth.oauth.by_principal" {
		t.Errorf("got %v", err)
	}
}

// A regression: a token forgotten (another call's 401) while this call was
// in flight must still be redacted from this call's answer.
func TestOAuthTokenForgottenMidCallStillRedacted(t *testing.T) {
	ts := newTokenServer(t, &tokenServer{expiresIn: 3600})
	c := New(oauthOptions())
	ts.api = func(w http.ResponseWriter, r *http.Request) {
		c.tokens.mu.Lock()
		var held []sentToken
		for k, e := range c.tokens.entries {
			held = append(held, sentToken{k, e.value})
		}
		c.tokens.mu.Unlock()
		for _, h := range held {
			c.tokens.forget(h.key, h.value)
		}
		_, _ = io.WriteString(w, `{"echo":"`+r.Header.Get("Authorization")+`"}`)
	}
	s := parseSpec(t, "a", authDoc, ts.URL)
	res, err := callOnce(t, t.Context(), c, endpoint(t, s, "o"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.RawBody); got != `{"echo":"Bearer [redacted]"}` {
		t.Errorf("body %s", got)
	}
}

func TestOAuthTokenEndpointErrors(t *testing.T) {
	escaped := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(clientID) + ":" + url.QueryEscape(secClient)))
	other := newRecorder(t, echo(200))
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string // in the error's reason
	}{
		{"oauth error with the secret in its description", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"error":"invalid_client","error_description":"client `+secClient+` unknown; you sent `+escaped+`"}`)
		}, "the token endpoint answered 400: invalid_client client [redacted] unknown; you sent [redacted]"},
		{"long html body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			_, _ = io.WriteString(w, "<html>"+url.QueryEscape(secClient)+" "+strings.Repeat("bad gateway ", 5000)+"</html>")
		}, "the token endpoint answered 502: <html>[redacted] bad gateway"},
		{"no access token", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"token_type":"bearer","client_secret":"`+secClient+`"}`)
		}, "answered without an access_token"},
		{"redirect elsewhere is not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
		}, "the token endpoint answered 307"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTokenServer(t, &tokenServer{})
			ts.Config.Handler = tt.handler
			s := parseSpec(t, "a", authDoc, ts.URL)
			_, err := callOnce(t, t.Context(), New(oauthOptions()), endpoint(t, s, "o"))
			var ae *AuthError
			if !errors.As(err, &ae) {
				t.Fatalf("got %T %v, want *AuthError", err, err)
			}
			if !strings.Contains(ae.Reason, tt.want) {
				t.Errorf("reason %q, want it to contain %q", ae.Reason, tt.want)
			}
			if ae.Key != "specs[a].auth.oauth.client_id" || ae.StatusCode != 0 || !ae.Refused {
				t.Errorf("got %+v", ae)
			}
			if len(ae.Error()) > 500 {
				t.Errorf("error of %d bytes, want it bounded", len(ae.Error()))
			}
			if !strings.HasPrefix(ae.Error(), `no access token could be fetched for a scheme "oauth"`) {
				t.Errorf("message %q", ae.Error())
			}
		})
	}
	if other.count() != 0 {
		t.Errorf("the redirect target got %d requests", other.count())
	}
}

// Token requests go through the call's guarded client: with private
// networks blocked, a loopback token endpoint is never contacted.
func TestOAuthTokenFetchBlockedPrivateNetwork(t *testing.T) {
	ts := newTokenServer(t, &tokenServer{expiresIn: 3600})
	s := parseSpec(t, "a", authDoc, ts.URL)
	opts := oauthOptions()
	opts.BlockPrivateNetworks = true
	_, err := callOnce(t, t.Context(), New(opts), endpoint(t, s, "o"))
	var ae *AuthError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "block_private_networks") {
		t.Fatalf("got %T %v", err, err)
	}
	if ts.requests.Load() != 0 || len(ts.sentAuths()) != 0 {
		t.Errorf("the loopback server was contacted")
	}
}

// A caller whose context ends while it waits for another's fetch gets its
// own context's error at once; the fetch goes on for the others.
func TestOAuthWaiterCancelled(t *testing.T) {
	ts := newTokenServer(t, &tokenServer{expiresIn: 3600})
	ts.setGate()
	s := parseSpec(t, "a", authDoc, ts.URL)
	e := endpoint(t, s, "o")
	c := New(oauthOptions())
	waiting := make(chan struct{})
	c.tokens.onWait = func() { close(waiting) }
	done := make(chan error, 1)
	go func() {
		_, err := callOnce(t, t.Context(), c, e)
		done <- err
	}()
	// The first caller holds the fetch (the gate is shut); once the token
	// request arrived, a second caller waits and is cancelled.
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-waiting
		cancel()
	}()
	select {
	case <-ts.arrived:
	case err := <-done:
		t.Fatalf("first call ended early: %v", err)
	}
	if _, err := callOnce(t, ctx, c, e); !errors.Is(err, context.Canceled) {
		t.Errorf("waiter got %v, want context.Canceled", err)
	}
	ts.open()
	if err := <-done; err != nil {
		t.Errorf("fetching call: %v", err)
	}
	if ts.issued.Load() != 1 {
		t.Errorf("tokens issued %d, want 1", ts.issued.Load())
	}
}
