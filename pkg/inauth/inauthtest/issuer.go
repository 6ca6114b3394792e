// Package inauthtest serves a loopback OAuth authorization server and signs
// JWTs, for tests of bearer-token verification (inauth.JWTVerifier) and of
// the transports that use it.
package inauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/specgate/specgate/pkg/inauth"
)

// Audience is the audience of the tokens Claims describes.
const Audience = "https://mcp.example.com/mcp"

// Key is one signing key, named by its key id.
type Key struct {
	KID  string
	Priv crypto.Signer
}

var (
	keysOnce sync.Once
	rsa1     *rsa.PrivateKey
	rsa2     *rsa.PrivateKey
	ec       map[string]*ecdsa.PrivateKey // by alg
)

// Keys returns two RSA keys and an EC key per ES algorithm, generated once
// per test binary: RSA generation is slow.
func Keys() (rsaKey, rsaKey2 *rsa.PrivateKey, ecKeys map[string]*ecdsa.PrivateKey) {
	keysOnce.Do(func() {
		var err error
		if rsa1, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if rsa2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		ec = map[string]*ecdsa.PrivateKey{}
		for alg, c := range map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()} {
			if ec[alg], err = ecdsa.GenerateKey(c, rand.Reader); err != nil {
				panic(err)
			}
		}
	})
	return rsa1, rsa2, ec
}

// Issuer is a loopback authorization server: RFC 8414 metadata and a JWKS
// whose keys and failure mode a test changes, counting JWKS fetches.
type Issuer struct {
	*httptest.Server
	mu       sync.Mutex
	keys     []Key
	mode     string // "", "down", "slow", "huge", "garbage"
	issuer   string // the issuer the metadata names; default the URL
	fetches  atomic.Int64
	released chan struct{}
}

// NewIssuer serves keys until the test ends.
func NewIssuer(t testing.TB, keys ...Key) *Issuer {
	t.Helper()
	ti := &Issuer{keys: keys, released: make(chan struct{})}
	ti.Server = httptest.NewServer(http.HandlerFunc(ti.serve))
	t.Cleanup(func() { close(ti.released); ti.Close() })
	return ti
}

// Set makes the JWKS fail as mode says ("down": 503, "slow": no answer
// until the request or the test ends, "huge": over 1 MiB, "garbage": not
// JSON; "": served), and serves keys from now on unless keys is empty.
func (ti *Issuer) Set(mode string, keys ...Key) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ti.mode = mode
	if keys != nil {
		ti.keys = keys
	}
}

// Name has the metadata name iss as the issuer instead of the URL.
func (ti *Issuer) Name(iss string) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ti.issuer = iss
}

// Fetches is how many times the JWKS was fetched.
func (ti *Issuer) Fetches() int64 { return ti.fetches.Load() }

func (ti *Issuer) serve(w http.ResponseWriter, r *http.Request) {
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
			w.Write(JWKS(keys...))
		}
	default:
		http.NotFound(w, r)
	}
}

// JWKS is the JSON Web Key Set of the public halves of keys.
func JWKS(keys ...Key) []byte {
	var set jwkset.JWKSMarshal
	for _, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k.Priv.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: k.KID, USE: jwkset.UseSig}})
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

// Claims are a good token's claims from iss at now: subject grace of org
// acme, for Audience, with the read and invoke scopes, an hour to live.
func Claims(iss string, now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"iss": iss, "aud": []string{"other", Audience}, "sub": "grace", "org": "acme",
		"exp": now.Add(time.Hour).Unix(), "nbf": now.Add(-time.Minute).Unix(), "scope": "specgate:read specgate:invoke",
	}
}

// Sign signs claims with key under alg, naming kid unless it is empty.
func Sign(t testing.TB, alg, kid string, key any, claims jwt.MapClaims) string {
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

// NewVerifier serves key rsa-1 (the first of Keys) and the three EC keys
// (ec-ES256, ...) from a loopback issuer and returns a verifier for it,
// closed when the test ends.
func NewVerifier(t testing.TB) (*inauth.JWTVerifier, *Issuer) {
	t.Helper()
	rsaKey, _, ecKeys := Keys()
	keys := []Key{{"rsa-1", rsaKey}}
	for alg, k := range ecKeys {
		keys = append(keys, Key{"ec-" + alg, k})
	}
	ti := NewIssuer(t, keys...)
	v, err := inauth.NewJWTVerifier(inauth.JWTOptions{Issuer: ti.URL, Audience: Audience, FetchTimeout: 500 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v, ti
}
