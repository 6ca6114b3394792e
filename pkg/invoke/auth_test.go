package invoke

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

const authDoc = `{"openapi":"3.0.3","info":{"title":"a","version":"1"},
 "components":{"securitySchemes":{
   "hdr":{"type":"apiKey","in":"header","name":"X-Api-Key"},
   "qry":{"type":"apiKey","in":"query","name":"appid"},
   "ck":{"type":"apiKey","in":"cookie","name":"sid"},
   "basic":{"type":"http","scheme":"basic"},
   "bearer":{"type":"http","scheme":"bearer"},
   "oauth":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"/oauth/token","scopes":{"read":"r"}}}}
 }},
 "paths":{
  "/h":{"get":{"operationId":"h","security":[{"hdr":[]}],"responses":{"200":{"description":"ok"}}}},
  "/q":{"get":{"operationId":"q","security":[{"qry":[]}],"parameters":[{"name":"city","in":"query","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
  "/c":{"get":{"operationId":"c","security":[{"ck":[]}],"parameters":[{"name":"theme","in":"cookie","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
  "/b":{"get":{"operationId":"b","security":[{"basic":[]}],"responses":{"200":{"description":"ok"}}}},
  "/t":{"get":{"operationId":"t","security":[{"bearer":[]}],"responses":{"200":{"description":"ok"}}}},
  "/o":{"get":{"operationId":"o","security":[{"oauth":["read"]}],"responses":{"200":{"description":"ok"}}}},
  "/either":{"get":{"operationId":"either","security":[{"bearer":[]},{"hdr":[]}],"responses":{"200":{"description":"ok"}}}},
  "/optional":{"get":{"operationId":"optional","security":[{"bearer":[]},{}],"responses":{"200":{"description":"ok"}}}},
  "/open":{"get":{"operationId":"open","responses":{"200":{"description":"ok"}}}}
 }}`

// Recognisable secrets, one per auth kind.
const (
	secHeader  = "SECRET-hdr-7f3a9"
	secQuery   = "SECRET-qry-1b2c3"
	secCookie  = "SECRET-cookie-4d5e"
	secUser    = "SECRET-user-6f7a"
	secPass    = "SECRET-pass-8b9c"
	secBearer  = "SECRET-bearer-0d1e"
	secClient  = "SECRET-client-2f3a"
	secToken   = "SECRET-access-4b5c"
	secStatic  = "SECRET-static-6d7e"
	clientID   = "client-id-1"
	staticName = "X-Static-Key"
)

var allSecrets = []string{secHeader, secQuery, secCookie, secUser, secPass, secBearer, secClient, secToken, secStatic}

func authOptions() Options {
	return Options{Specs: map[string]SpecOptions{"a": {
		Headers: map[string]string{staticName: secStatic},
		Auth: map[string]Credential{
			"hdr":    {Value: secHeader},
			"qry":    {Value: secQuery},
			"ck":     {Value: secCookie},
			"basic":  {Username: secUser, Password: secPass},
			"bearer": {Token: secBearer},
			"oauth":  {ClientID: clientID, ClientSecret: secClient, Scopes: []string{"read"}},
		},
	}}}
}

// echo answers with everything it received, so a leak would show.
func echo(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"access_token":"`+secToken+`","token_type":"bearer","expires_in":3600}`)
			return
		}
		all, _ := json.Marshal(map[string]any{"url": r.URL.String(), "headers": r.Header})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-RateLimit-Echo", r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"))
		w.Header().Set("Location", "/x?"+r.URL.RawQuery)
		w.WriteHeader(status)
		_, _ = w.Write(all)
	}
}

func TestAuthOnTheWire(t *testing.T) {
	up := newRecorder(t, echo(200))
	s := parseSpec(t, "a", authDoc, up.URL)
	c := New(authOptions())
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(secUser+":"+secPass))
	tests := []struct {
		op     string
		params map[string]any
		check  func(t *testing.T, r recorded)
	}{
		{"h", nil, func(t *testing.T, r recorded) {
			if r.Header.Get("X-Api-Key") != secHeader {
				t.Errorf("header %v", r.Header)
			}
		}},
		{"q", map[string]any{"city": "Paris"}, func(t *testing.T, r recorded) {
			if r.RawQuery != "city=Paris&appid="+secQuery {
				t.Errorf("query %q", r.RawQuery)
			}
		}},
		{"c", map[string]any{"theme": "dark"}, func(t *testing.T, r recorded) {
			if r.Header.Get("Cookie") != "theme=dark; sid="+secCookie {
				t.Errorf("cookie %q", r.Header.Get("Cookie"))
			}
		}},
		{"b", nil, func(t *testing.T, r recorded) {
			if r.Header.Get("Authorization") != basic {
				t.Errorf("authorization %q", r.Header.Get("Authorization"))
			}
		}},
		{"t", nil, func(t *testing.T, r recorded) {
			if r.Header.Get("Authorization") != "Bearer "+secBearer {
				t.Errorf("authorization %q", r.Header.Get("Authorization"))
			}
		}},
		{"o", nil, func(t *testing.T, r recorded) {
			if r.Header.Get("Authorization") != "Bearer "+secToken {
				t.Errorf("authorization %q", r.Header.Get("Authorization"))
			}
		}},
		{"either", nil, func(t *testing.T, r recorded) {
			if r.Header.Get("Authorization") != "Bearer "+secBearer || r.Header.Get("X-Api-Key") != "" {
				t.Errorf("headers %v", r.Header)
			}
		}},
		{"open", nil, func(t *testing.T, r recorded) {
			if r.Header.Get("Authorization") != "" || r.Header.Get(staticName) != secStatic {
				t.Errorf("headers %v", r.Header)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			call, err := c.Prepare(t.Context(), endpoint(t, s, tt.op), Args{Parameters: tt.params})
			if err != nil {
				t.Fatal(err)
			}
			res, err := call.Do(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			got := up.last(t)
			tt.check(t, got)
			if got.Header.Get(staticName) != secStatic {
				t.Errorf("static header missing")
			}
			assertNoSecrets(t, res, err, call)
		})
	}
	// The token endpoint got the client credentials.
	var tokenReq *recorded
	for _, r := range up.reqs {
		if r.RawPath == "/oauth/token" {
			tokenReq = &r
		}
	}
	if tokenReq == nil {
		t.Fatal("no token request")
	}
	if u, p, _ := (&http.Request{Header: tokenReq.Header}).BasicAuth(); u != clientID || p != secClient {
		t.Errorf("token request auth %q", tokenReq.Header.Get("Authorization"))
	}
	if string(tokenReq.Body) != "grant_type=client_credentials&scope=read" {
		t.Errorf("token request body %q", tokenReq.Body)
	}
}

// assertNoSecrets checks a result, an error and a call print no secret.
func assertNoSecrets(t *testing.T, res *Result, err error, call *Call) {
	t.Helper()
	var texts []string
	if res != nil {
		b, _ := json.Marshal(res)
		texts = append(texts, string(b), string(res.RawBody), fmt.Sprintf("%v %+v", res.Headers, res))
	}
	if err != nil {
		texts = append(texts, err.Error(), fmt.Sprintf("%+v %#v", err, err))
		var ae *AuthError
		if errors.As(err, &ae) {
			texts = append(texts, ae.Hint())
		}
	}
	if call != nil {
		texts = append(texts, fmt.Sprintf("%+v %v", call, call.URL()))
	}
	for _, txt := range texts {
		for _, sec := range allSecrets {
			if strings.Contains(txt, sec) {
				t.Errorf("secret %s leaked in %.200q", sec, txt)
			}
		}
		if strings.Contains(txt, base64.StdEncoding.EncodeToString([]byte(secUser+":"+secPass))) {
			t.Errorf("basic credentials leaked")
		}
	}
}

// Secrets appear only on the wire to the spec's own host: never in
// results, errors, or on a redirect to another host.
func TestSecretsNeverLeak(t *testing.T) {
	for _, status := range []int{200, 401, 403, 404, 429, 500} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			up := newRecorder(t, echo(status))
			s := parseSpec(t, "a", authDoc, up.URL)
			c := New(authOptions())
			for _, op := range []string{"h", "q", "c", "b", "t", "o"} {
				call, err := c.Prepare(t.Context(), endpoint(t, s, op), Args{})
				if err != nil {
					t.Fatal(err)
				}
				res, err := call.Do(t.Context())
				if status >= 400 && err == nil {
					t.Errorf("%s: no error for %d", op, status)
				}
				assertNoSecrets(t, res, err, call)
			}
		})
	}
	// Redirect to another host: not followed, nothing sent there.
	other := newRecorder(t, echo(200))
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" {
			echo(200)(w, r)
			return
		}
		http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
	})
	s := parseSpec(t, "a", authDoc, up.URL)
	c := New(authOptions())
	for _, op := range []string{"h", "q", "c", "b", "t", "o"} {
		call, err := c.Prepare(t.Context(), endpoint(t, s, op), Args{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := call.Do(t.Context())
		assertNoSecrets(t, res, err, call)
	}
	if other.count() != 0 {
		t.Errorf("other host got %d requests", other.count())
	}
	// Unreachable and timeout errors do not carry the URL (with its key).
	s = parseSpec(t, "a", authDoc, "http://127.0.0.1:1")
	call, err := c.Prepare(t.Context(), endpoint(t, s, "q"), Args{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := call.Do(t.Context())
	assertNoSecrets(t, res, err, call)
}

func TestMissingCredentials(t *testing.T) {
	up := newRecorder(t, echo(200))
	s := parseSpec(t, "a", authDoc, up.URL)
	// A credential whose ${ENV} is unset: AuthError at Prepare, nothing sent.
	c := New(Options{Specs: map[string]SpecOptions{"a": {Auth: map[string]Credential{"hdr": {MissingEnv: []string{"PETS_KEY"}}}}}})
	_, err := c.Prepare(t.Context(), endpoint(t, s, "h"), Args{})
	var ae *AuthError
	if !errors.As(err, &ae) || !strings.Contains(ae.Error(), "PETS_KEY") || ae.StatusCode != 0 {
		t.Errorf("got %T %v", err, err)
	}
	if up.count() != 0 {
		t.Error("sent without credentials")
	}
	// Nothing configured: sent as is; an optional scheme needs nothing.
	c = New(Options{})
	for _, op := range []string{"h", "optional"} {
		call, err := c.Prepare(t.Context(), endpoint(t, s, op), Args{})
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if _, err := call.Do(t.Context()); err != nil {
			t.Errorf("%s: %v", op, err)
		}
	}
}

func TestOAuthTokenCachedAndRefreshedOn401(t *testing.T) {
	var tokens, calls atomic.Int32
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" {
			n := tokens.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":"tok-%d","expires_in":3600}`, n)
			return
		}
		n := calls.Add(1)
		if n == 2 && r.Header.Get("Authorization") == "Bearer tok-1" {
			w.WriteHeader(401) // the token was revoked
			return
		}
		_, _ = io.WriteString(w, r.Header.Get("Authorization"))
	})
	s := parseSpec(t, "a", authDoc, up.URL)
	c := New(authOptions())
	want := []string{"Bearer tok-1", "Bearer tok-2", "Bearer tok-2"}
	for i, w := range want {
		call, err := c.Prepare(t.Context(), endpoint(t, s, "o"), Args{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := call.Do(t.Context()); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := up.last(t).Header.Get("Authorization"); got != w {
			t.Errorf("call %d sent %v, want %s", i, got, w)
		}
	}
	if tokens.Load() != 2 {
		t.Errorf("fetched %d tokens, want 2", tokens.Load())
	}
}

func TestOAuthTokenEndpointFails(t *testing.T) {
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"error":"invalid_client","secret":"`+secClient+`"}`)
	})
	s := parseSpec(t, "a", authDoc, up.URL)
	call, err := New(authOptions()).Prepare(t.Context(), endpoint(t, s, "o"), Args{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := call.Do(t.Context())
	var ae *AuthError
	if !errors.As(err, &ae) || !strings.Contains(ae.Error(), "token endpoint answered 400") {
		t.Errorf("got %T %v", err, err)
	}
	assertNoSecrets(t, res, err, call)
}

func TestAuthOnlyToOwnHostQueryKeyNotInURL(t *testing.T) {
	s := parseSpec(t, "a", authDoc, "http://api.example.invalid")
	call, err := New(authOptions()).Prepare(t.Context(), endpoint(t, s, "q"), Args{Parameters: map[string]any{"city": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if u := call.URL().String(); strings.Contains(u, secQuery) {
		t.Errorf("URL %s carries the key before sending", u)
	}
	if _, err := url.Parse(call.URL().String()); err != nil {
		t.Fatal(err)
	}
}

// A body cut at MaxResponseBytes in the middle of a secret it echoes keeps
// no part of it: the replacement never saw the whole secret there.
func TestSecretCutAtTheSizeLimitIsDropped(t *testing.T) {
	const limit = 1000
	for k := 1; k < len(secHeader); k++ {
		up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, strings.Repeat("x", limit-k)+r.Header.Get("X-Api-Key")+" and more")
		})
		s := parseSpec(t, "a", authDoc, up.URL)
		opts := authOptions()
		opts.MaxResponseBytes = limit
		c := New(opts)
		call, err := c.Prepare(t.Context(), endpoint(t, s, "h"), Args{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := call.Do(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !res.Truncated {
			t.Fatalf("cut after %d bytes of the secret: not truncated", k)
		}
		if got, want := string(res.RawBody), strings.Repeat("x", limit-k); got != want {
			t.Errorf("cut after %d bytes of the secret: body ends %q", k, got[max(0, len(got)-20):])
		}
		c.Close()
	}
}
