package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/inauth"
)

// TestHTTPJWTAudience: JWTs must carry http.auth.resource as audience, or
// http.auth.jwt.audience when that overrides it.
func TestHTTPJWTAudience(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := jwkset.NewJWKFromKey(key.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: "k", USE: jwkset.UseSig}})
	if err != nil {
		t.Fatal(err)
	}
	var iss *httptest.Server
	iss = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]string{"issuer": iss.URL, "jwks_uri": iss.URL + "/jwks"})
		case "/jwks":
			json.NewEncoder(w).Encode(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{jwk.Marshal()}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(iss.Close)
	now := time.Now()
	token := func(aud string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"iss": iss.URL, "aud": aud, "sub": "ada", "exp": now.Add(time.Hour).Unix()})
		tok.Header["kid"] = "k"
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	const resource, override = "https://mcp.example/mcp", "api://specgate"
	for _, tt := range []struct {
		audience string // http.auth.jwt.audience
		accepted string // the aud that passes; the other is refused
		refused  string
	}{
		{"", resource, override},
		{override, override, resource},
	} {
		cfg := config.Default()
		cfg.HTTP.Auth.Resource = resource
		cfg.HTTP.Auth.JWT.Issuer = iss.URL
		cfg.HTTP.Auth.JWT.Audience = tt.audience
		opts, err := httpOptions(t.Context(), &cfg.HTTP, discard)
		if err != nil {
			t.Fatal(err)
		}
		v := opts.JWT.(*inauth.JWTVerifier)
		if _, err := v.Verify(t.Context(), token(tt.accepted), now); err != nil {
			t.Errorf("audience %q: aud %q refused: %v", tt.audience, tt.accepted, err)
		}
		if _, err := v.Verify(t.Context(), token(tt.refused), now); !errors.Is(err, inauth.ErrInvalidToken) {
			t.Errorf("audience %q: aud %q: %v, want refused", tt.audience, tt.refused, err)
		}
		v.Close()
	}
}
