package mcpserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/inauth/inauthtest"
	"github.com/specgate/specgate/pkg/serve"
)

var (
	quiet = slog.New(slog.DiscardHandler)

	keysOnce        sync.Once
	keyRSA, keyRSA2 *rsa.PrivateKey
	keyEC           map[string]*ecdsa.PrivateKey // by alg
)

// testKeys has keyRSA, keyRSA2 and keyEC hold inauthtest's keys.
func testKeys(testing.TB) {
	keysOnce.Do(func() { keyRSA, keyRSA2, keyEC = inauthtest.Keys() })
}

// newJWTSetup is inauthtest.NewVerifier, with the keys at hand.
func newJWTSetup(t testing.TB) (*inauth.JWTVerifier, *inauthtest.Issuer) {
	testKeys(t)
	return inauthtest.NewVerifier(t)
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
	good := func() jwt.MapClaims { return inauthtest.Claims(ti.URL, f.clock.Now()) }
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
	mismatch := inauthtest.NewIssuer(t, inauthtest.Key{KID: "rsa-1", Priv: keyRSA})
	mismatch.Name("https://someone-else.example")
	vm, err := inauth.NewJWTVerifier(inauth.JWTOptions{Issuer: mismatch.URL, Audience: inauthtest.Audience, Logger: quiet})
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
		return inauthtest.Sign(t, "RS256", "rotated-"+strconv.Itoa(int(ti.Fetches())), keyRSA2, good())
	}
	tests := []tc{
		{name: "1 MB token", token: func() string { return strings.Repeat("a", 1<<20) }},
		{name: "2 dots, garbage", token: func() string { return "a.b.c" }},
		{name: "4 dots", token: func() string { return "a.b.c.d.e" }},
		{name: "40 dots", token: func() string { return strings.Repeat("a.", 40) }},
		{name: "alg none", token: none},
		{name: "HS256 with the RSA public key", token: func() string { return inauthtest.Sign(t, "HS256", "rsa-1", pubPEM, good()) }},
		{name: "wrong aud", token: func() string {
			return inauthtest.Sign(t, "RS256", "rsa-1", keyRSA, with("aud", "https://other.example/mcp"))
		}},
		{name: "missing aud", token: func() string { return inauthtest.Sign(t, "RS256", "rsa-1", keyRSA, with("aud", nil)) }},
		{name: "wrong iss", token: func() string { return inauthtest.Sign(t, "RS256", "rsa-1", keyRSA, with("iss", ti.URL+"/")) }},
		{name: "expired", token: func() string {
			return inauthtest.Sign(t, "RS256", "rsa-1", keyRSA, with("exp", f.clock.Now().Add(-time.Minute).Unix()))
		}},
		{name: "no exp", token: func() string { return inauthtest.Sign(t, "RS256", "rsa-1", keyRSA, with("exp", nil)) }},
		{name: "nbf in the future", token: func() string {
			return inauthtest.Sign(t, "RS256", "rsa-1", keyRSA, with("nbf", f.clock.Now().Add(time.Minute).Unix()))
		}},
		{name: "signed by another key", token: func() string { return inauthtest.Sign(t, "RS256", "rsa-1", keyRSA2, good()) }},
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
		{name: "discovery issuer mismatch", token: func() string {
			return inauthtest.Sign(t, "RS256", "rsa-1", keyRSA, inauthtest.Claims(mismatch.URL, f.clock.Now()))
		}, v: vm},
	}
	f = newHTTPFixture(t, serve.Options{JWT: sw, FailedAuthPerWindow: len(tests), Window: time.Hour}, 0)
	list := rpc(1, "tools/list", nil)
	// Provision first, so each case tests what it names.
	resp, body := f.post(t, inauthtest.Sign(t, "RS256", "rsa-1", keyRSA, good()), list)
	expectStatus(t, resp, body, http.StatusOK)

	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sw.v.Store(v)
			if tt.v != nil {
				sw.v.Store(tt.v)
			}
			ti.Set(tt.mode)
			defer ti.Set("")
			// Past the unknown-kid gate, so a case that needs a fetch gets one.
			f.clock.Set(t0.Add(time.Duration(i+1) * 11 * time.Second))
			before := ti.Fetches()
			start := time.Now()
			resp, body := f.post(t, tt.token(), list)
			expectStatus(t, resp, body, http.StatusUnauthorized)
			if el := time.Since(start); el > 3*time.Second {
				t.Errorf("refused after %v", el)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, `error="invalid_token"`) {
				t.Errorf("WWW-Authenticate %q", got)
			}
			if tt.mode != "" && ti.Fetches() != before+1 {
				t.Errorf("JWKS fetches %d -> %d, want one refetch", before, ti.Fetches())
			}
		})
	}
	// Every case counted: the next failure is throttled, a good token passes,
	// and the keys survived every failed fetch.
	sw.v.Store(v)
	resp, body = f.post(t, "x.y.z", list)
	expectStatus(t, resp, body, http.StatusTooManyRequests)
	now := f.clock.Now()
	resp, body = f.post(t, inauthtest.Sign(t, "RS256", "rsa-1", keyRSA, inauthtest.Claims(ti.URL, now)), list)
	expectStatus(t, resp, body, http.StatusOK)
}

func TestHTTPJWTEndToEnd(t *testing.T) {
	v, ti := newJWTSetup(t)
	f := newHTTPFixture(t, serve.Options{JWT: v, RequestsPerWindow: 10}, 0)
	list := rpc(1, "tools/list", nil)
	// Two tokens for the same subject and org share one budget.
	tok1 := inauthtest.Sign(t, "RS256", "rsa-1", keyRSA, inauthtest.Claims(ti.URL, t0))
	tok2 := inauthtest.Sign(t, "ES256", "ec-ES256", keyEC["ES256"], inauthtest.Claims(ti.URL, t0))
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
