package inauth_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/json"
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

	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/inauth/inauthtest"
)

var (
	t0    = time.Unix(1_700_000_000, 0)
	quiet = slog.New(slog.DiscardHandler)
)

var (
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

func TestJWTEveryAllowedAlgorithm(t *testing.T) {
	v, ti := newJWTSetup(t)
	for _, alg := range []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"} {
		t.Run(alg, func(t *testing.T) {
			kid, key := "rsa-1", any(keyRSA)
			if strings.HasPrefix(alg, "ES") {
				kid, key = "ec-"+alg, keyEC[alg]
			}
			p, err := v.Verify(t.Context(), inauthtest.Sign(t, alg, kid, key, inauthtest.Claims(ti.URL, t0)), t0)
			if err != nil {
				t.Fatal(err)
			}
			if p.Subject != "grace" || p.Org != "acme" || strings.Join(p.Scopes, ",") != "specgate:read,specgate:invoke" {
				t.Errorf("principal %+v", p)
			}
		})
	}
	// A token without kid is tried against every key.
	if _, err := v.Verify(t.Context(), inauthtest.Sign(t, "ES256", "", keyEC["ES256"], inauthtest.Claims(ti.URL, t0)), t0); err != nil {
		t.Errorf("token without kid: %v", err)
	}
	// scp, as a list, is read too.
	c := inauthtest.Claims(ti.URL, t0)
	delete(c, "scope")
	c["scp"] = []string{"specgate:admin"}
	if p, err := v.Verify(t.Context(), inauthtest.Sign(t, "RS256", "rsa-1", keyRSA, c), t0); err != nil || strings.Join(p.Scopes, ",") != "specgate:admin" {
		t.Errorf("scp: %+v, %v", p, err)
	}
	if got := ti.Fetches(); got != 1 {
		t.Errorf("JWKS fetched %d times, want 1", got)
	}
}

// TestJWTKeyRotation: after the issuer rotates, a new-key token passes
// within one refetch; tokens naming unknown kids cost at most one fetch
// per 10s and are refused at once while the gate is shut.
func TestJWTKeyRotation(t *testing.T) {
	v, ti := newJWTSetup(t)
	if _, err := v.Verify(t.Context(), inauthtest.Sign(t, "RS256", "rsa-1", keyRSA, inauthtest.Claims(ti.URL, t0)), t0); err != nil {
		t.Fatal(err)
	}
	ti.Set("", inauthtest.Key{KID: "rsa-2", Priv: keyRSA2})
	now := t0.Add(10 * time.Second)
	if _, err := v.Verify(t.Context(), inauthtest.Sign(t, "RS256", "rsa-2", keyRSA2, inauthtest.Claims(ti.URL, now)), now); err != nil {
		t.Fatalf("new-key token after rotation: %v", err)
	}
	if got := ti.Fetches(); got != 2 {
		t.Errorf("fetches after rotation = %d, want 2", got)
	}
	// The issuer now hangs: a token arriving while the gate is shut must
	// not wait for it.
	ti.Set("slow")
	before := ti.Fetches()
	for i := range 30 {
		at := now.Add(time.Duration(i) * 500 * time.Millisecond)
		kid := "random-" + strconv.Itoa(i)
		start := time.Now()
		_, err := v.Verify(t.Context(), inauthtest.Sign(t, "RS256", kid, keyRSA2, inauthtest.Claims(ti.URL, at)), at)
		if !errors.Is(err, inauth.ErrInvalidToken) {
			t.Fatalf("random kid %d: %v", i, err)
		}
		if at.Before(now.Add(10*time.Second)) && time.Since(start) > time.Second {
			t.Errorf("random kid %d waited %v with the gate shut", i, time.Since(start))
		}
	}
	if got := ti.Fetches() - before; got > 2 {
		t.Errorf("30 random-kid tokens cost %d fetches, want at most 2", got)
	}
	// The old set stays in use while fetches fail.
	ti.Set("down")
	at := now.Add(30 * time.Second)
	if _, err := v.Verify(t.Context(), inauthtest.Sign(t, "RS256", "rsa-2", keyRSA2, inauthtest.Claims(ti.URL, at)), at); err != nil {
		t.Errorf("known key while the issuer is down: %v", err)
	}
}

// TestJWTUnknownKidSentAThousandTimes: 1,000 tokens naming key ids the
// issuer never had, from 10 callers at one instant, cost the issuer one
// JWKS fetch and are all refused, none waiting for another's fetch.
func TestJWTUnknownKidSentAThousandTimes(t *testing.T) {
	v, ti := newJWTSetup(t)
	if _, err := v.Verify(t.Context(), inauthtest.Sign(t, "ES256", "ec-ES256", keyEC["ES256"], inauthtest.Claims(ti.URL, t0)), t0); err != nil {
		t.Fatal(err)
	}
	before := ti.Fetches()
	at := t0.Add(time.Minute) // the gate is open: one fetch may happen
	tok := func(i int) string {
		return inauthtest.Sign(t, "ES256", "unknown-"+strconv.Itoa(i), keyEC["ES256"], inauthtest.Claims(ti.URL, at))
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
	if got := ti.Fetches() - before; got > 1 {
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
	keys    []inauthtest.Key
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
		return answer(http.StatusOK, inauthtest.JWKS(m.keys...))
	}
	return answer(http.StatusNotFound, nil)
}

func (m *memIssuer) set(down bool, keys ...inauthtest.Key) {
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
		iss := &memIssuer{keys: []inauthtest.Key{{KID: "ec-1", Priv: keyEC["ES256"]}}}
		v, err := inauth.NewJWTVerifier(inauth.JWTOptions{Issuer: memIssuerURL, Audience: inauthtest.Audience, Refresh: time.Minute,
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
		iss.set(false, inauthtest.Key{KID: "ec-1", Priv: keyEC["ES256"]}, inauthtest.Key{KID: "ec-2", Priv: keyEC["ES384"]})
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if got := iss.fetched(); got != 2 {
			t.Fatalf("fetches after one refresh interval = %d, want 2", got)
		}
		// The added key is known: its token passes without an unknown-kid fetch.
		tok := inauthtest.Sign(t, "ES384", "ec-2", keyEC["ES384"], inauthtest.Claims(memIssuerURL, t0))
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
			w.Write(inauthtest.JWKS(inauthtest.Key{KID: "k", Priv: keyEC["ES384"]}))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	v, err := inauth.NewJWTVerifier(inauth.JWTOptions{Issuer: srv.URL + "/tenant", Audience: inauthtest.Audience})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	if err := v.Provision(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), inauthtest.Sign(t, "ES384", "k", keyEC["ES384"], inauthtest.Claims(srv.URL+"/tenant", t0)), t0); err != nil {
		t.Error(err)
	}
}

func TestJWTLeeway(t *testing.T) {
	v, ti := newJWTSetup(t)
	c := inauthtest.Claims(ti.URL, t0)
	c["exp"] = t0.Unix()
	tok := inauthtest.Sign(t, "ES256", "ec-ES256", keyEC["ES256"], c)
	if _, err := v.Verify(t.Context(), tok, t0.Add(20*time.Second)); err != nil {
		t.Errorf("within leeway: %v", err)
	}
	if _, err := v.Verify(t.Context(), tok, t0.Add(40*time.Second)); !errors.Is(err, inauth.ErrInvalidToken) {
		t.Errorf("past leeway: %v", err)
	}
}

func FuzzJWTVerify(f *testing.F) {
	v, ti := newJWTSetup(f)
	f.Add(inauthtest.Sign(f, "RS256", "rsa-1", keyRSA, inauthtest.Claims(ti.URL, t0)))
	f.Add(inauthtest.Sign(f, "ES256", "ec-ES256", keyEC["ES256"], inauthtest.Claims(ti.URL, t0)))
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
		tok := inauthtest.Sign(b, alg, kid, key, inauthtest.Claims(ti.URL, t0))
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
