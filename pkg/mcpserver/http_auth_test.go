package mcpserver

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/serve"
)

const testAudience = "https://mcp.example.com/mcp"

var quiet = slog.New(slog.DiscardHandler)

// testKey is one signing key and the algorithms it signs.
type testKey struct {
	kid  string
	priv crypto.Signer
}

var (
	keysOnce sync.Once
	keyRSA   *rsa.PrivateKey
	keyRSA2  *rsa.PrivateKey
	keyEC    map[string]*ecdsa.PrivateKey // by alg
)

// testKeys generates the keys once per test binary: RSA generation is slow.
func testKeys(t testing.TB) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if keyRSA, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keyRSA2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		keyEC = map[string]*ecdsa.PrivateKey{}
		for alg, c := range map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()} {
			if keyEC[alg], err = ecdsa.GenerateKey(c, rand.Reader); err != nil {
				panic(err)
			}
		}
	})
}

// testIssuer is a loopback authorization server: RFC 8414 metadata and a
// JWKS whose keys and failure mode tests change, counting JWKS fetches.
type testIssuer struct {
	*httptest.Server
	mu       sync.Mutex
	keys     []testKey
	mode     string // "", "down", "slow", "huge", "garbage"
	issuer   string // the issuer the metadata names; default the URL
	fetches  atomic.Int64
	released chan struct{}
}

func newTestIssuer(t testing.TB, keys ...testKey) *testIssuer {
	t.Helper()
	ti := &testIssuer{keys: keys, released: make(chan struct{})}
	ti.Server = httptest.NewServer(http.HandlerFunc(ti.serve))
	t.Cleanup(func() { close(ti.released); ti.Close() })
	return ti
}

func (ti *testIssuer) set(mode string, keys ...testKey) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ti.mode = mode
	if keys != nil {
		ti.keys = keys
	}
}

func (ti *testIssuer) serve(w http.ResponseWriter, r *http.Request) {
	ti.mu.Lock()
	mode, keys, iss := ti.mode, ti.keys, ti.issuer
	ti.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		if iss == "" {
			iss = ti.URL
		}
		json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": ti.URL + "/jwks"})
	case "/jwks":
		ti.fetches.Add(1)
		switch mode {
		case "down":
			http.Error(w, "down", http.StatusServiceUnavailable)
		case "slow":
			select {
			case <-r.Context().Done():
			case <-ti.released:
			}
		case "huge":
			w.Write([]byte(`{"keys":[` + strings.Repeat(" ", 2<<20) + `]}`))
		case "garbage":
			w.Write([]byte("<html>not json</html>"))
		default:
			w.Write(jwksJSON(keys...))
		}
	default:
		http.NotFound(w, r)
	}
}

func jwksJSON(keys ...testKey) []byte {
	var set jwkset.JWKSMarshal
	for _, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k.priv.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: k.kid, USE: jwkset.UseSig}})
		if err != nil {
			panic(err)
		}
		set.Keys = append(set.Keys, jwk.Marshal())
	}
	data, err := json.Marshal(set)
	if err != nil {
		panic(err)
	}
	return data
}

func claimsFor(iss string, now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"iss": iss, "aud": []string{"other", testAudience}, "sub": "grace", "org": "acme",
		"exp": now.Add(time.Hour).Unix(), "nbf": now.Add(-time.Minute).Unix(), "scope": "specgate:read specgate:invoke",
	}
}

func sign(t testing.TB, alg, kid string, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newJWTSetup serves keys rsa-1 and the three EC keys from a loopback
// issuer and returns a verifier for it.
func newJWTSetup(t testing.TB) (*inauth.JWTVerifier, *testIssuer) {
	t.Helper()
	testKeys(t)
	keys := []testKey{{"rsa-1", keyRSA}}
	for alg, k := range keyEC {
		keys = append(keys, testKey{"ec-" + alg, k})
	}
	ti := newTestIssuer(t, keys...)
	v, err := inauth.NewJWTVerifier(inauth.JWTOptions{Issuer: ti.URL, Audience: testAudience, FetchTimeout: 500 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v, ti
}

func TestJWTEveryAllowedAlgorithm(t *testing.T) {
	v, ti := newJWTSetup(t)
	for _, alg := range []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"} {
		t.Run(alg, func(t *testing.T) {
			kid, key := "rsa-1", any(keyRSA)
			if strings.HasPrefix(alg, "ES") {
				kid, key = "ec-"+alg, keyEC[alg]
			}
			p, err := v.Verify(t.Context(), sign(t, alg, kid, key, claimsFor(ti.URL, t0)), t0)
			if err != nil {
				t.Fatal(err)
			}
			if p.Subject != "grace" || p.Org != "acme" || strings.Join(p.Scopes, ",") != "specgate:read,specgate:invoke" {
				t.Errorf("principal %+v", p)
			}
		})
	}
	// A token without kid is tried against every key.
	if _, err := v.Verify(t.Context(), sign(t, "ES256", "", keyEC["ES256"], claimsFor(ti.URL, t0)), t0); err != nil {
		t.Errorf("token without kid: %v", err)
	}
	// scp, as a list, is read too.
	c := claimsFor(ti.URL, t0)
	delete(c, "scope")
	c["scp"] = []string{"specgate:admin"}
	if p, err := v.Verify(t.Context(), sign(t, "RS256", "rsa-1", keyRSA, c), t0); err != nil || strings.Join(p.Scopes, ",") != "specgate:admin" {
		t.Errorf("scp: %+v, %v", p, err)
	}
	if got := ti.fetches.Load(); got != 1 {
		t.Errorf("JWKS fetched %d times, want 1", got)
	}
}

// switchVerifier lets one HTTP fixture use the verifier a case needs.
type switchVerifier struct {
	v atomic.Pointer[inauth.JWTVerifier]
}

func (s *switchVerifier) Verify(ctx context.Context, tok string, now time.Time) (Principal, error) {
	return s.v.Load().Verify(ctx, tok, now)
}

// TestJWTBadTokensRefusedQuickly: each bad token is a 401 with
// error="invalid_token" within the fetch timeout, and counts as a failed
// attempt: once they are all spent, the next one gets 429.
func TestJWTBadTokensRefusedQuickly(t *testing.T) {
	v, ti := newJWTSetup(t)
	sw := &switchVerifier{}
	sw.v.Store(v)
	pubDER, err := x509.MarshalPKIXPublicKey(keyRSA.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	var f *httpFixture
	good := func() jwt.MapClaims { return claimsFor(ti.URL, f.clock.Now()) }
	with := func(k string, val any) jwt.MapClaims {
		c := good()
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	none := func() string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodNone, good()).SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mismatch := newTestIssuer(t, testKey{"rsa-1", keyRSA})
	mismatch.issuer = "https://someone-else.example"
	vm, err := inauth.NewJWTVerifier(inauth.JWTOptions{Issuer: mismatch.URL, Audience: testAudience, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Close)

	type tc struct {
		name  string
		token func() string
		mode  string              // the issuer's JWKS mode during the case
		v     *inauth.JWTVerifier // nil: v
	}
	unknownKid := func() string {
		return sign(t, "RS256", "rotated-"+strconv.Itoa(int(ti.fetches.Load())), keyRSA2, good())
	}
	tests := []tc{
		{name: "1 MB token", token: func() string { return strings.Repeat("a", 1<<20) }},
		{name: "2 dots, garbage", token: func() string { return "a.b.c" }},
		{name: "4 dots", token: func() string { return "a.b.c.d.e" }},
		{name: "40 dots", token: func() string { return strings.Repeat("a.", 40) }},
		{name: "alg none", token: none},
		{name: "HS256 with the RSA public key", token: func() string { return sign(t, "HS256", "rsa-1", pubPEM, good()) }},
		{name: "wrong aud", token: func() string { return sign(t, "RS256", "rsa-1", keyRSA, with("aud", "https://other.example/mcp")) }},
		{name: "missing aud", token: func() string { return sign(t, "RS256", "rsa-1", keyRSA, with("aud", nil)) }},
		{name: "wrong iss", token: func() string { return sign(t, "RS256", "rsa-1", keyRSA, with("iss", ti.URL+"/")) }},
		{name: "expired", token: func() string {
			return sign(t, "RS256", "rsa-1", keyRSA, with("exp", f.clock.Now().Add(-time.Minute).Unix()))
		}},
		{name: "no exp", token: func() string { return sign(t, "RS256", "rsa-1", keyRSA, with("exp", nil)) }},
		{name: "nbf in the future", token: func() string {
			return sign(t, "RS256", "rsa-1", keyRSA, with("nbf", f.clock.Now().Add(time.Minute).Unix()))
		}},
		{name: "signed by another key", token: func() string { return sign(t, "RS256", "rsa-1", keyRSA2, good()) }},
		{name: "crit header", token: func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, good())
			tok.Header["kid"], tok.Header["crit"], tok.Header["exp-policy"] = "rsa-1", []string{"exp-policy"}, "lax"
			s, err := tok.SignedString(keyRSA)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{name: "JWKS unreachable", token: unknownKid, mode: "down"},
		{name: "JWKS slow", token: unknownKid, mode: "slow"},
		{name: "JWKS huge", token: unknownKid, mode: "huge"},
		{name: "JWKS not JSON", token: unknownKid, mode: "garbage"},
		{name: "discovery issuer mismatch", token: func() string { return sign(t, "RS256", "rsa-1", keyRSA, claimsFor(mismatch.URL, f.clock.Now())) }, v: vm},
	}
	f = newHTTPFixture(t, serve.Options{JWT: sw, FailedAuthPerWindow: len(tests), Window: time.Hour}, 0)
	list := rpc(1, "tools/list", nil)
	// Provision first, so each case tests what it names.
	resp, body := f.post(t, sign(t, "RS256", "rsa-1", keyRSA, good()), list)
	expectStatus(t, resp, body, http.StatusOK)

	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sw.v.Store(v)
			if tt.v != nil {
				sw.v.Store(tt.v)
			}
			ti.set(tt.mode)
			defer ti.set("")
			// Past the unknown-kid gate, so a case that needs a fetch gets one.
			f.clock.Set(t0.Add(time.Duration(i+1) * 11 * time.Second))
			before := ti.fetches.Load()
			start := time.Now()
			resp, body := f.post(t, tt.token(), list)
			expectStatus(t, resp, body, http.StatusUnauthorized)
			if el := time.Since(start); el > 3*time.Second {
				t.Errorf("refused after %v", el)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, `error="invalid_token"`) {
				t.Errorf("WWW-Authenticate %q", got)
			}
			if tt.mode != "" && ti.fetches.Load() != before+1 {
				t.Errorf("JWKS fetches %d -> %d, want one refetch", before, ti.fetches.Load())
			}
		})
	}
	// Every case counted: the next failure is throttled, a good token passes,
	// and the keys survived every failed fetch.
	sw.v.Store(v)
	resp, body = f.post(t, "x.y.z", list)
	expectStatus(t, resp, body, http.StatusTooManyRequests)
	now := f.clock.Now()
	resp, body = f.post(t, sign(t, "RS256", "rsa-1", keyRSA, claimsFor(ti.URL, now)), list)
	expectStatus(t, resp, body, http.StatusOK)
}

// TestJWTKeyRotation: after the issuer rotates, a new-key token passes
// within one refetch; tokens naming unknown kids cost at most one fetch
// per 10s and are refused at once while the gate is shut.
func TestJWTKeyRotation(t *testing.T) {
	v, ti := newJWTSetup(t)
	if _, err := v.Verify(t.Context(), sign(t, "RS256", "rsa-1", keyRSA, claimsFor(ti.URL, t0)), t0); err != nil {
		t.Fatal(err)
	}
	ti.set("", testKey{"rsa-2", keyRSA2})
	now := t0.Add(10 * time.Second)
	if _, err := v.Verify(t.Context(), sign(t, "RS256", "rsa-2", keyRSA2, claimsFor(ti.URL, now)), now); err != nil {
		t.Fatalf("new-key token after rotation: %v", err)
	}
	if got := ti.fetches.Load(); got != 2 {
		t.Errorf("fetches after rotation = %d, want 2", got)
	}
	// The issuer now hangs: a token arriving while the gate is shut must
	// not wait for it.
	ti.set("slow")
	before := ti.fetches.Load()
	for i := range 30 {
		at := now.Add(time.Duration(i) * 500 * time.Millisecond)
		kid := "random-" + strconv.Itoa(i)
		start := time.Now()
		_, err := v.Verify(t.Context(), sign(t, "RS256", kid, keyRSA2, claimsFor(ti.URL, at)), at)
		if !errors.Is(err, inauth.ErrInvalidToken) {
			t.Fatalf("random kid %d: %v", i, err)
		}
		if at.Before(now.Add(10*time.Second)) && time.Since(start) > time.Second {
			t.Errorf("random kid %d waited %v with the gate shut", i, time.Since(start))
		}
	}
	if got := ti.fetches.Load() - before; got > 2 {
		t.Errorf("30 random-kid tokens cost %d fetches, want at most 2", got)
	}
	// The old set stays in use while fetches fail.
	ti.set("down")
	at := now.Add(30 * time.Second)
	if _, err := v.Verify(t.Context(), sign(t, "RS256", "rsa-2", keyRSA2, claimsFor(ti.URL, at)), at); err != nil {
		t.Errorf("known key while the issuer is down: %v", err)
	}
}

// TestJWTUnknownKidSentAThousandTimes: 1,000 tokens naming key ids the
// issuer never had, from 10 callers at one instant, cost the issuer one
// JWKS fetch and are all refused, none waiting for another's fetch.
func TestJWTUnknownKidSentAThousandTimes(t *testing.T) {
	v, ti := newJWTSetup(t)
	if _, err := v.Verify(t.Context(), sign(t, "ES256", "ec-ES256", keyEC["ES256"], claimsFor(ti.URL, t0)), t0); err != nil {
		t.Fatal(err)
	}
	before := ti.fetches.Load()
	at := t0.Add(time.Minute) // the gate is open: one fetch may happen
	tok := func(i int) string {
		return sign(t, "ES256", "unknown-"+strconv.Itoa(i), keyEC["ES256"], claimsFor(ti.URL, at))
	}
	toks := make([]string, 1000)
	for i := range toks {
		toks[i] = tok(i)
	}
	var wg sync.WaitGroup
	var accepted atomic.Int64
	start := time.Now()
	for g := range 10 {
		wg.Go(func() {
			for i := g; i < len(toks); i += 10 {
				if _, err := v.Verify(t.Context(), toks[i], at); !errors.Is(err, inauth.ErrInvalidToken) {
					accepted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d unknown-kid tokens were not refused", n)
	}
	if got := ti.fetches.Load() - before; got > 1 {
		t.Errorf("1,000 unknown-kid tokens cost %d JWKS fetches, want at most 1", got)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("refusing them took %v", el)
	}
}

// memIssuer is an issuer served in memory, for tests inside a synctest
// bubble: its metadata and JWKS, counting JWKS fetches.
type memIssuer struct {
	mu      sync.Mutex
	keys    []testKey
	down    bool
	fetches int
}

const memIssuerURL = "https://id.example"

func (m *memIssuer) RoundTrip(r *http.Request) (*http.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	answer := func(status int, body []byte) (*http.Response, error) {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
	}
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		return answer(http.StatusOK, []byte(`{"issuer":"`+memIssuerURL+`","jwks_uri":"`+memIssuerURL+`/jwks"}`))
	case "/jwks":
		m.fetches++
		if m.down {
			return answer(http.StatusServiceUnavailable, []byte(`{}`))
		}
		return answer(http.StatusOK, jwksJSON(m.keys...))
	}
	return answer(http.StatusNotFound, nil)
}

func (m *memIssuer) set(down bool, keys ...testKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = down
	if keys != nil {
		m.keys = keys
	}
}

func (m *memIssuer) fetched() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fetches
}

// TestJWTKeysRefreshPeriodically: the JWKS is fetched again every Refresh,
// so a key the issuer adds is known before any token names it, and a
// failed refresh keeps the keys at hand.
func TestJWTKeysRefreshPeriodically(t *testing.T) {
	testKeys(t)
	synctest.Test(t, func(t *testing.T) {
		iss := &memIssuer{keys: []testKey{{"ec-1", keyEC["ES256"]}}}
		v, err := inauth.NewJWTVerifier(inauth.JWTOptions{Issuer: memIssuerURL, Audience: testAudience, Refresh: time.Minute,
			Client: &http.Client{Transport: iss}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		if err := v.Provision(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := iss.fetched(); got != 1 {
			t.Fatalf("fetches after provisioning = %d, want 1", got)
		}
		iss.set(false, testKey{"ec-1", keyEC["ES256"]}, testKey{"ec-2", keyEC["ES384"]})
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if got := iss.fetched(); got != 2 {
			t.Fatalf("fetches after one refresh interval = %d, want 2", got)
		}
		// The added key is known: its token passes without an unknown-kid fetch.
		tok := sign(t, "ES384", "ec-2", keyEC["ES384"], claimsFor(memIssuerURL, t0))
		if _, err := v.Verify(t.Context(), tok, t0); err != nil {
			t.Fatalf("token of the refreshed key: %v", err)
		}
		if got := iss.fetched(); got != 2 {
			t.Errorf("fetches after verifying = %d, want still 2", got)
		}
		// The issuer fails: the refresh fails, the keys stay.
		iss.set(true)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := iss.fetched(); got != 3 {
			t.Fatalf("fetches after a second interval = %d, want 3", got)
		}
		if _, err := v.Verify(t.Context(), tok, t0); err != nil {
			t.Errorf("token of a known key after a failed refresh: %v", err)
		}
	})
}

func TestJWTDiscoveryOpenIDConfiguration(t *testing.T) {
	testKeys(t)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tenant/.well-known/openid-configuration":
			json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL + "/tenant", "jwks_uri": srv.URL + "/keys"})
		case "/keys":
			w.Write(jwksJSON(testKey{"k", keyEC["ES384"]}))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	v, err := inauth.NewJWTVerifier(inauth.JWTOptions{Issuer: srv.URL + "/tenant", Audience: testAudience})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	if err := v.Provision(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), sign(t, "ES384", "k", keyEC["ES384"], claimsFor(srv.URL+"/tenant", t0)), t0); err != nil {
		t.Error(err)
	}
}

func TestJWTLeeway(t *testing.T) {
	v, ti := newJWTSetup(t)
	c := claimsFor(ti.URL, t0)
	c["exp"] = t0.Unix()
	tok := sign(t, "ES256", "ec-ES256", keyEC["ES256"], c)
	if _, err := v.Verify(t.Context(), tok, t0.Add(20*time.Second)); err != nil {
		t.Errorf("within leeway: %v", err)
	}
	if _, err := v.Verify(t.Context(), tok, t0.Add(40*time.Second)); !errors.Is(err, inauth.ErrInvalidToken) {
		t.Errorf("past leeway: %v", err)
	}
}

func TestHTTPJWTEndToEnd(t *testing.T) {
	v, ti := newJWTSetup(t)
	f := newHTTPFixture(t, serve.Options{JWT: v, RequestsPerWindow: 10}, 0)
	list := rpc(1, "tools/list", nil)
	// Two tokens for the same subject and org share one budget.
	tok1 := sign(t, "RS256", "rsa-1", keyRSA, claimsFor(ti.URL, t0))
	tok2 := sign(t, "ES256", "ec-ES256", keyEC["ES256"], claimsFor(ti.URL, t0))
	resp, body := f.post(t, tok1, list)
	expectStatus(t, resp, body, http.StatusOK)
	resp, body = f.post(t, tok2, list)
	expectStatus(t, resp, body, http.StatusOK)
	if got := resp.Header.Get("X-RateLimit-Remaining"); got != "8" {
		t.Errorf("X-RateLimit-Remaining %q, want 8", got)
	}
	resp, body = f.post(t, tok1, toolsCall(2, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}))
	expectStatus(t, resp, body, http.StatusOK)
	if !strings.Contains(f.audit.String(), `"principal":"grace@acme"`) {
		t.Errorf("audit %s", f.audit.String())
	}
	f.clock.Set(t0.Add(2 * time.Hour))
	resp, body = f.post(t, tok1, list)
	expectStatus(t, resp, body, http.StatusUnauthorized)
}

func FuzzJWTVerify(f *testing.F) {
	v, ti := newJWTSetup(f)
	f.Add(sign(f, "RS256", "rsa-1", keyRSA, claimsFor(ti.URL, t0)))
	f.Add(sign(f, "ES256", "ec-ES256", keyEC["ES256"], claimsFor(ti.URL, t0)))
	f.Add("e30.e30.")
	f.Add("..")
	f.Fuzz(func(t *testing.T, tok string) {
		p, err := v.Verify(t.Context(), tok, t0)
		if err != nil && !errors.Is(err, inauth.ErrInvalidToken) {
			t.Fatalf("error %v does not match inauth.ErrInvalidToken", err)
		}
		if err == nil && p.Subject == "" {
			t.Fatalf("accepted with no subject")
		}
	})
}

func BenchmarkJWTVerifyCachedKeys(b *testing.B) {
	v, ti := newJWTSetup(b)
	for _, alg := range []string{"RS256", "ES256"} {
		kid, key := "rsa-1", any(keyRSA)
		if alg == "ES256" {
			kid, key = "ec-ES256", keyEC["ES256"]
		}
		tok := sign(b, alg, kid, key, claimsFor(ti.URL, t0))
		if _, err := v.Verify(b.Context(), tok, t0); err != nil {
			b.Fatal(err)
		}
		b.Run(alg, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(b.Context(), tok, t0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRefuse1MBToken measures the handler refusing a 1 MB bearer
// token (the request itself is built once, outside the loop).
func BenchmarkRefuse1MBToken(b *testing.B) {
	v, _ := newJWTSetup(b)
	srv := New(Options{})
	h := serve.NewHandler(srv, serve.Options{JWT: v})
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+strings.Repeat("a", 1<<20))
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusUnauthorized {
			b.Fatalf("status %d", w.Code)
		}
	}
}
