package mcpserver

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var b64 = base64.RawURLEncoding

// testKeys are signing keys generated once per test binary.
type testKeys struct {
	rsa, rsaOther *rsa.PrivateKey
	ec            *ecdsa.PrivateKey
}

var (
	keysOnce sync.Once
	keys     testKeys
)

func jwtKeys(t testing.TB) testKeys {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if keys.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keys.rsaOther, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keys.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
	})
	return keys
}

// writeJWKS writes the public keys as a JWKS file: kid "r1" (RSA) and "e1"
// (EC P-256).
func writeJWKS(t testing.TB, k testKeys) string {
	t.Helper()
	ecPub := k.ec.PublicKey
	raw, err := ecPub.Bytes() // 0x04 || X || Y
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]any{"keys": []map[string]any{
		{"kty": "RSA", "kid": "r1", "use": "sig", "alg": "RS256",
			"n": b64.EncodeToString(k.rsa.N.Bytes()), "e": b64.EncodeToString(big.NewInt(int64(k.rsa.E)).Bytes())},
		{"kty": "EC", "kid": "e1", "crv": "P-256",
			"x": b64.EncodeToString(raw[1:33]), "y": b64.EncodeToString(raw[33:])},
		{"kty": "oct", "kid": "h1", "k": "c2VjcmV0"}, // skipped
	}}
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, mustJSON(set), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// signJWT signs claims with alg ("RS256" with an *rsa.PrivateKey, "ES256"
// with an *ecdsa.PrivateKey, "none" unsigned).
func signJWT(t testing.TB, alg, kid string, key crypto.Signer, claims map[string]any) string {
	t.Helper()
	hdr := map[string]any{"alg": alg, "typ": "JWT"}
	if kid != "" {
		hdr["kid"] = kid
	}
	signed := b64.EncodeToString(mustJSON(hdr)) + "." + b64.EncodeToString(mustJSON(claims))
	sum := sha256.Sum256([]byte(signed))
	var sig []byte
	var err error
	switch alg {
	case "RS256":
		sig, err = rsa.SignPKCS1v15(rand.Reader, key.(*rsa.PrivateKey), crypto.SHA256, sum[:])
	case "ES256":
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, key.(*ecdsa.PrivateKey), sum[:])
		if err == nil {
			sig = make([]byte, 64)
			r.FillBytes(sig[:32])
			s.FillBytes(sig[32:])
		}
	case "HS256":
		sig = sum[:] // not a real HMAC: must be refused for its alg anyway
	}
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64.EncodeToString(sig)
}

func claimsAt(now time.Time) map[string]any {
	return map[string]any{
		"iss": "https://idp.example", "aud": []string{"other", "specgate"},
		"sub": "grace", "tenant": "acme",
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(5 * time.Minute).Unix(),
	}
}

func newTestVerifier(t testing.TB) (*JWTVerifier, testKeys) {
	t.Helper()
	k := jwtKeys(t)
	v, err := NewJWTVerifier(t.Context(), JWTOptions{
		JWKS: writeJWKS(t, k), Issuer: "https://idp.example", Audience: "specgate", OrgClaim: "tenant", Leeway: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return v, k
}

func TestJWTVerify(t *testing.T) {
	v, k := newTestVerifier(t)
	with := func(change func(map[string]any)) map[string]any {
		c := claimsAt(t0)
		change(c)
		return c
	}
	tests := []struct {
		name   string
		token  string
		reason string // "" when valid
	}{
		{"RS256", signJWT(t, "RS256", "r1", k.rsa, claimsAt(t0)), ""},
		{"ES256", signJWT(t, "ES256", "e1", k.ec, claimsAt(t0)), ""},
		{"no kid", signJWT(t, "ES256", "", k.ec, claimsAt(t0)), ""},
		{"audience as a string", signJWT(t, "RS256", "r1", k.rsa, with(func(c map[string]any) { c["aud"] = "specgate" })), ""},
		{"bad signature", signJWT(t, "RS256", "r1", k.rsaOther, claimsAt(t0)), "signature"},
		{"tampered claims", tamper(signJWT(t, "RS256", "r1", k.rsa, claimsAt(t0))), "signature"},
		{"RSA kid, EC alg", signJWT(t, "ES256", "r1", k.ec, claimsAt(t0)), "signature"},
		{"unknown kid", signJWT(t, "RS256", "zz", k.rsa, claimsAt(t0)), "signature"},
		{"wrong issuer", signJWT(t, "RS256", "r1", k.rsa, with(func(c map[string]any) { c["iss"] = "https://evil.example" })), "issuer"},
		{"wrong audience", signJWT(t, "RS256", "r1", k.rsa, with(func(c map[string]any) { c["aud"] = "someone-else" })), "audience"},
		{"no audience", signJWT(t, "RS256", "r1", k.rsa, with(func(c map[string]any) { delete(c, "aud") })), "audience"},
		{"expired", signJWT(t, "RS256", "r1", k.rsa, with(func(c map[string]any) { c["exp"] = t0.Add(-time.Second).Unix() })), "expired"},
		{"expires now", signJWT(t, "RS256", "r1", k.rsa, with(func(c map[string]any) { c["exp"] = t0.Unix() })), "expired"},
		{"no exp", signJWT(t, "RS256", "r1", k.rsa, with(func(c map[string]any) { delete(c, "exp") })), "exp"},
		{"not yet valid", signJWT(t, "RS256", "r1", k.rsa, with(func(c map[string]any) { c["nbf"] = t0.Add(time.Minute).Unix() })), "not valid yet"},
		{"no subject", signJWT(t, "RS256", "r1", k.rsa, with(func(c map[string]any) { delete(c, "sub") })), "sub"},
		{"alg none", signJWT(t, "none", "r1", nil, claimsAt(t0)), "algorithm"},
		{"alg HS256", signJWT(t, "HS256", "h1", nil, claimsAt(t0)), "algorithm"},
		{"not a JWT", "abc.def", "not a JWT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := v.Verify(t.Context(), tt.token, t0)
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if want := (Principal{Subject: "grace", Org: "acme"}); p.Subject != want.Subject || p.Org != want.Org {
					t.Errorf("principal %+v, want %+v", p, want)
				}
				return
			}
			if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("err %v, want ErrInvalidToken saying %q", err, tt.reason)
			}
			if err != nil && strings.Contains(err.Error(), tt.token) {
				t.Errorf("error holds the token")
			}
		})
	}
}

func TestJWTLeeway(t *testing.T) {
	k := jwtKeys(t)
	v, err := NewJWTVerifier(t.Context(), JWTOptions{JWKS: writeJWKS(t, k), Issuer: "https://idp.example", Audience: "specgate"})
	if err != nil {
		t.Fatal(err)
	}
	c := claimsAt(t0)
	c["exp"] = t0.Add(-10 * time.Second).Unix()
	if _, err := v.Verify(t.Context(), signJWT(t, "RS256", "r1", k.rsa, c), t0); err != nil {
		t.Errorf("10s past exp within the default 30s leeway: %v", err)
	}
	c["exp"] = t0.Add(-31 * time.Second).Unix()
	if _, err := v.Verify(t.Context(), signJWT(t, "RS256", "r1", k.rsa, c), t0); err == nil {
		t.Errorf("31s past exp accepted")
	}
}

func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	var c map[string]any
	data, _ := b64.DecodeString(parts[1])
	json.Unmarshal(data, &c)
	c["sub"] = "mallory"
	parts[1] = b64.EncodeToString(mustJSON(c))
	return strings.Join(parts, ".")
}

func TestJWKSRejectsBadKeys(t *testing.T) {
	for name, set := range map[string]string{
		"not JSON":       `{`,
		"no usable key":  `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`,
		"EC off curve":   `{"keys":[{"kty":"EC","crv":"P-256","x":"` + b64.EncodeToString(make([]byte, 32)) + `","y":"` + b64.EncodeToString(append(make([]byte, 31), 1)) + `"}]}`,
		"EC short coord": `{"keys":[{"kty":"EC","crv":"P-256","x":"AQ","y":"AQ"}]}`,
	} {
		if _, err := parseJWKS([]byte(set)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestJWKSFromURL(t *testing.T) {
	k := jwtKeys(t)
	data, err := os.ReadFile(writeJWKS(t, k))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	var fetches int32
	var mu sync.Mutex
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetches++
		mu.Unlock()
		w.Write(data)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	v, err := NewJWTVerifier(t.Context(), JWTOptions{JWKS: srv.URL + "/jwks", Issuer: "https://idp.example", Audience: "specgate", OrgClaim: "tenant"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), signJWT(t, "ES256", "e1", k.ec, claimsAt(t0)), t0); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fetches != 1 {
		t.Errorf("%d fetches", fetches)
	}
}

func TestHTTPJWTEndToEnd(t *testing.T) {
	v, k := newTestVerifier(t)
	f := newHTTPFixture(t, HTTPOptions{JWT: v, RequestsPerWindow: 10}, 0)
	list := rpc(1, "tools/list", nil)
	// Two tokens for the same subject and org share one budget.
	tok1 := signJWT(t, "RS256", "r1", k.rsa, claimsAt(t0))
	tok2 := signJWT(t, "ES256", "e1", k.ec, claimsAt(t0))
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
	// An expired token is refused.
	f.clock.Set(t0.Add(time.Hour))
	resp, body = f.post(t, tok1, list)
	expectStatus(t, resp, body, http.StatusUnauthorized)
}

func FuzzJWTVerify(f *testing.F) {
	v, k := newTestVerifier(f)
	f.Add(signJWT(f, "RS256", "r1", k.rsa, claimsAt(t0)))
	f.Add(signJWT(f, "ES256", "e1", k.ec, claimsAt(t0)))
	f.Add("e30.e30.")
	f.Add("...")
	f.Fuzz(func(t *testing.T, tok string) {
		p, err := v.Verify(context.Background(), tok, t0)
		if err != nil && !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("error %v does not match ErrInvalidToken", err)
		}
		if err == nil && p.Subject == "" {
			t.Fatalf("accepted with no subject")
		}
	})
}
