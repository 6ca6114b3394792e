package mcpserver

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Principal is who is calling: a subject in an organisation. Budgets key on
// it, never on the token, so a rotated token keeps its budget.
type Principal struct {
	Subject string
	Org     string
	// Scopes the caller's token carries; checked only when HTTPOptions
	// names scopes.
	Scopes []string
}

// Key returns an unambiguous key for budgets.
func (p Principal) Key() string {
	return url.PathEscape(p.Org) + "/" + url.PathEscape(p.Subject)
}

// String names the principal for logs: subject, or subject@org.
func (p Principal) String() string {
	if p.Org == "" {
		return p.Subject
	}
	return p.Subject + "@" + p.Org
}

// ErrInvalidToken is the error of a bearer token that failed verification.
// Its message never holds the token.
var ErrInvalidToken = errors.New("invalid bearer token")

// tokenError is a refused JWT with the reason, for logs; it matches
// ErrInvalidToken.
type tokenError struct{ reason string }

func (e *tokenError) Error() string        { return "invalid bearer token: " + e.reason }
func (e *tokenError) Is(target error) bool { return target == ErrInvalidToken }

func invalid(format string, a ...any) error { return &tokenError{reason: fmt.Sprintf(format, a...)} }

// staticTokens maps SHA-256 digests of tokens to principals, so a lookup
// takes the same time whatever prefix of a token a caller guessed.
type staticTokens map[[sha256.Size]byte]Principal

func newStaticTokens(tokens map[string]Principal) staticTokens {
	out := staticTokens{}
	for tok, p := range tokens {
		if tok == "" {
			continue
		}
		out[sha256.Sum256([]byte(tok))] = p
	}
	return out
}

func (st staticTokens) lookup(tok string) (Principal, bool) {
	p, ok := st[sha256.Sum256([]byte(tok))]
	return p, ok
}

// JWTOptions configure a JWTVerifier.
type JWTOptions struct {
	// JWKS is a JWKS file path or an http(s) URL. Required.
	JWKS string
	// Issuer is the required iss. Required.
	Issuer string
	// Audience must be the aud or one of its entries. Required.
	Audience string
	// SubjectClaim names the principal's subject. If empty, "sub".
	SubjectClaim string
	// OrgClaim names the principal's organisation; a token without it has
	// org "". If empty, "org".
	OrgClaim string
	// Leeway tolerates clock skew on exp and nbf. If zero, 30s; negative:
	// none.
	Leeway time.Duration
	// Client fetches a JWKS URL. If nil, a client with a 10s timeout.
	Client *http.Client
	// Refresh is how often a JWKS URL is fetched again, and the least time
	// between fetches caused by an unknown key id. If zero, 5m.
	Refresh time.Duration
}

// JWTVerifier verifies bearer JWTs signed with RS256/384/512, PS256/384/512
// or ES256/384/512 against keys from a JWKS. It is safe for concurrent
// use. A JWKS URL is fetched again when it is older than Refresh, or when a
// token names a key id it does not know and the last fetch is over
// unknownKidRefetch old; a failed fetch keeps the keys it had, and one fetch
// runs at a time while other verifications use the keys at hand.
type JWTVerifier struct {
	opts     JWTOptions
	fetching sync.Mutex // held by the one fetch in progress

	mu      sync.Mutex
	keys    map[string][]crypto.PublicKey // by kid; "" for keys with none
	fetched time.Time
}

// unknownKidRefetch bounds how often tokens naming unknown key ids can make
// the verifier fetch a JWKS URL.
const unknownKidRefetch = 10 * time.Second

// NewJWTVerifier loads the JWKS and returns a verifier.
func NewJWTVerifier(ctx context.Context, opts JWTOptions) (*JWTVerifier, error) {
	if opts.JWKS == "" || opts.Issuer == "" || opts.Audience == "" {
		return nil, errors.New("jwt: jwks, issuer and audience are required")
	}
	if opts.SubjectClaim == "" {
		opts.SubjectClaim = "sub"
	}
	if opts.OrgClaim == "" {
		opts.OrgClaim = "org"
	}
	if opts.Leeway == 0 {
		opts.Leeway = 30 * time.Second
	} else if opts.Leeway < 0 {
		opts.Leeway = 0
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 5 * time.Minute
	}
	v := &JWTVerifier{opts: opts}
	keys, err := v.load(ctx)
	if err != nil {
		return nil, err
	}
	v.keys, v.fetched = keys, time.Now()
	return v, nil
}

func (v *JWTVerifier) isURL() bool {
	return strings.HasPrefix(v.opts.JWKS, "https://") || strings.HasPrefix(v.opts.JWKS, "http://")
}

func (v *JWTVerifier) load(ctx context.Context) (map[string][]crypto.PublicKey, error) {
	var data []byte
	if v.isURL() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.opts.JWKS, nil)
		if err != nil {
			return nil, fmt.Errorf("jwks: %w", err)
		}
		resp, err := v.opts.Client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("jwks: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("jwks: %s answered %d", v.opts.JWKS, resp.StatusCode)
		}
		data, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return nil, fmt.Errorf("jwks: %w", err)
		}
	} else {
		var err error
		if data, err = os.ReadFile(v.opts.JWKS); err != nil {
			return nil, fmt.Errorf("jwks: %w", err)
		}
	}
	return parseJWKS(data)
}

// keysFor returns the keys that may have signed a token with kid, fetching
// a JWKS URL again when it is stale or does not know kid.
func (v *JWTVerifier) keysFor(ctx context.Context, kid string, now time.Time) []crypto.PublicKey {
	v.mu.Lock()
	keys := v.lookup(kid)
	age := now.Sub(v.fetched)
	v.mu.Unlock()
	if !v.isURL() || (age < v.opts.Refresh && (len(keys) > 0 || age < unknownKidRefetch)) {
		return keys
	}
	if !v.fetching.TryLock() {
		return keys
	}
	defer v.fetching.Unlock()
	fresh, err := v.load(ctx)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.fetched = now
	if err == nil {
		v.keys = fresh
	}
	return v.lookup(kid)
}

func (v *JWTVerifier) lookup(kid string) []crypto.PublicKey {
	if kid != "" {
		return v.keys[kid]
	}
	var all []crypto.PublicKey
	for _, ks := range v.keys {
		all = append(all, ks...)
	}
	return all
}

// Verify checks a compact JWS token's signature, issuer, audience, expiry
// and not-before at now, and returns the principal it names. Every
// refusal matches ErrInvalidToken.
func (v *JWTVerifier) Verify(ctx context.Context, token string, now time.Time) (Principal, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Principal{}, invalid("not a JWT")
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := decodeSegment(parts[0], &hdr); err != nil {
		return Principal{}, invalid("header: %v", err)
	}
	alg, ok := jwsAlgs[hdr.Alg]
	if !ok {
		return Principal{}, invalid("algorithm %q is not accepted", hdr.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return Principal{}, invalid("signature is not base64url")
	}
	signed := []byte(parts[0] + "." + parts[1])
	verified := false
	for _, k := range v.keysFor(ctx, hdr.Kid, now) {
		if alg.verify(k, signed, sig) {
			verified = true
			break
		}
	}
	if !verified {
		return Principal{}, invalid("signature does not verify")
	}
	var claims map[string]any
	if err := decodeSegment(parts[1], &claims); err != nil {
		return Principal{}, invalid("claims: %v", err)
	}
	if iss, _ := claims["iss"].(string); iss != v.opts.Issuer {
		return Principal{}, invalid("wrong issuer")
	}
	if !hasAudience(claims["aud"], v.opts.Audience) {
		return Principal{}, invalid("wrong audience")
	}
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return Principal{}, invalid("no exp")
	}
	if !now.Before(exp.Add(v.opts.Leeway)) {
		return Principal{}, invalid("expired")
	}
	if raw, present := claims["nbf"]; present {
		nbf, ok := numericDate(raw)
		if !ok {
			return Principal{}, invalid("nbf is not a number")
		}
		if now.Add(v.opts.Leeway).Before(nbf) {
			return Principal{}, invalid("not valid yet")
		}
	}
	sub := claimString(claims[v.opts.SubjectClaim])
	if sub == "" {
		return Principal{}, invalid("no %s claim", v.opts.SubjectClaim)
	}
	return Principal{Subject: sub, Org: claimString(claims[v.opts.OrgClaim])}, nil
}

func decodeSegment(seg string, v any) error {
	data, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return errors.New("not base64url")
	}
	d := json.NewDecoder(strings.NewReader(string(data)))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return errors.New("not a JSON object")
	}
	return nil
}

func hasAudience(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		for _, x := range a {
			if s, ok := x.(string); ok && s == want {
				return true
			}
		}
	}
	return false
}

func numericDate(v any) (time.Time, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil {
		return time.Time{}, false
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)), true
}

func claimString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}

// jwsAlg verifies one JWS algorithm.
type jwsAlg struct {
	hash crypto.Hash
	kind string // "RS", "PS" or "ES"
	size int    // ES: bytes of r and of s
}

var jwsAlgs = map[string]jwsAlg{
	"RS256": {crypto.SHA256, "RS", 0},
	"RS384": {crypto.SHA384, "RS", 0},
	"RS512": {crypto.SHA512, "RS", 0},
	"PS256": {crypto.SHA256, "PS", 0},
	"PS384": {crypto.SHA384, "PS", 0},
	"PS512": {crypto.SHA512, "PS", 0},
	"ES256": {crypto.SHA256, "ES", 32},
	"ES384": {crypto.SHA384, "ES", 48},
	"ES512": {crypto.SHA512, "ES", 66},
}

func (a jwsAlg) digest(data []byte) []byte {
	switch a.hash {
	case crypto.SHA384:
		h := sha512.Sum384(data)
		return h[:]
	case crypto.SHA512:
		h := sha512.Sum512(data)
		return h[:]
	}
	h := sha256.Sum256(data)
	return h[:]
}

func (a jwsAlg) verify(key crypto.PublicKey, data, sig []byte) bool {
	d := a.digest(data)
	switch k := key.(type) {
	case *rsa.PublicKey:
		switch a.kind {
		case "RS":
			return rsa.VerifyPKCS1v15(k, a.hash, d, sig) == nil
		case "PS":
			return rsa.VerifyPSS(k, a.hash, d, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
	case *ecdsa.PublicKey:
		if a.kind != "ES" || (k.Curve.Params().BitSize+7)/8 != a.size || len(sig) != 2*a.size {
			return false
		}
		r := new(big.Int).SetBytes(sig[:a.size])
		s := new(big.Int).SetBytes(sig[a.size:])
		return ecdsa.Verify(k, d, r, s)
	}
	return false
}

// parseJWKS reads the signature keys of a JWKS, by kid. Keys of other
// types or uses are skipped; a JWKS with no usable key is an error.
func parseJWKS(data []byte) (map[string][]crypto.PublicKey, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			Crv string `json:"crv"`
			N   string `json:"n"`
			E   string `json:"e"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, errors.New("jwks: not a JSON key set")
	}
	out := map[string][]crypto.PublicKey{}
	n := 0
	for i, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		var pub crypto.PublicKey
		switch k.Kty {
		case "RSA":
			nb, err1 := base64.RawURLEncoding.DecodeString(k.N)
			eb, err2 := base64.RawURLEncoding.DecodeString(k.E)
			if err1 != nil || err2 != nil || len(eb) == 0 || len(eb) > 4 {
				return nil, fmt.Errorf("jwks: key %d: bad RSA n or e", i)
			}
			e := 0
			for _, b := range eb {
				e = e<<8 | int(b)
			}
			pub = &rsa.PublicKey{N: new(big.Int).SetBytes(nb), E: e}
		case "EC":
			var curve elliptic.Curve
			switch k.Crv {
			case "P-256":
				curve = elliptic.P256()
			case "P-384":
				curve = elliptic.P384()
			case "P-521":
				curve = elliptic.P521()
			default:
				continue
			}
			xb, err1 := base64.RawURLEncoding.DecodeString(k.X)
			yb, err2 := base64.RawURLEncoding.DecodeString(k.Y)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("jwks: key %d: bad EC x or y", i)
			}
			size := (curve.Params().BitSize + 7) / 8
			if len(xb) != size || len(yb) != size {
				return nil, fmt.Errorf("jwks: key %d: EC x and y must be %d bytes", i, size)
			}
			// Uncompressed point form, which ecdsa.ParseUncompressedPublicKey
			// checks lies on the curve.
			point := append(append([]byte{4}, xb...), yb...)
			ek, err := ecdsa.ParseUncompressedPublicKey(curve, point)
			if err != nil {
				return nil, fmt.Errorf("jwks: key %d: %v", i, err)
			}
			pub = ek
		default:
			continue
		}
		out[k.Kid] = append(out[k.Kid], pub)
		n++
	}
	if n == 0 {
		return nil, errors.New("jwks: no RSA or EC signature key")
	}
	return out, nil
}

// bearerToken returns the token of an Authorization: Bearer header, or ""
// when there is none.
func bearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return ""
	}
	return strings.TrimSpace(h[7:])
}

// retryAfterHeader formats a wait as whole seconds, rounded up, at least 1.
func retryAfterHeader(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}
