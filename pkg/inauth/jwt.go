package inauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// jwtAlgs are the only algorithms a JWT may name: asymmetric ones, so a
// public key can never be used as an HMAC secret, and never "none".
var jwtAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}

// maxIssuerDocument bounds a discovery document or JWKS.
const maxIssuerDocument = 1 << 20

// JWTOptions configure a JWTVerifier.
type JWTOptions struct {
	// Issuer is the required iss, compared exactly. Required.
	Issuer string
	// JWKS is the JWKS URL. If empty, it is discovered from the issuer's
	// metadata: <issuer>/.well-known/oauth-authorization-server, then
	// /.well-known/openid-configuration (RFC 8414 path insertion when the
	// issuer has a path); the document's issuer must equal Issuer.
	JWKS string
	// Audience must be one of the token's aud entries: this server's
	// resource URL. Required.
	Audience string
	// SubjectClaim names the principal's subject. If empty, "sub".
	SubjectClaim string
	// OrgClaim names the principal's organisation; a token without it has
	// org "". If empty, "org".
	OrgClaim string
	// Leeway tolerates clock skew on exp and nbf. If zero, 30s; negative:
	// none.
	Leeway time.Duration
	// Client fetches the discovery document and the JWKS; its answers are
	// cut at 1 MiB whatever the client. If nil, http.DefaultTransport.
	Client *http.Client
	// FetchTimeout bounds one discovery or JWKS fetch. If zero, 5s.
	FetchTimeout time.Duration
	// Refresh is how often the JWKS is fetched again in the background; a
	// failed fetch keeps the keys at hand. If zero, 5m.
	Refresh time.Duration
	// UnknownKIDInterval is the least time between fetches caused by tokens
	// naming a key id the verifier does not know (and between discovery
	// attempts while the issuer is unreachable). A token arriving while that
	// gate is shut is refused at once, never held waiting. If zero, 10s.
	UnknownKIDInterval time.Duration
	// Logger receives background refresh failures. If nil, slog.Default().
	Logger *slog.Logger
}

// JWTVerifier verifies bearer JWTs with golang-jwt against keys from a JWKS
// held by keyfunc, fetched lazily on the first token (or by Provision). It
// is safe for concurrent use; Close stops its background refresh.
type JWTVerifier struct {
	opts   JWTOptions
	client *http.Client
	ctx    context.Context // ends at Close: the background refresh
	cancel context.CancelFunc

	provisioning sync.Mutex // held by the one discovery in progress

	mu       sync.Mutex
	src      *keySource // nil until provisioned
	gateOpen time.Time  // the next unknown-kid fetch may start at or after this
}

// keySource is a provisioned JWKS.
type keySource struct {
	kf   keyfunc.Keyfunc
	stop context.CancelFunc // ends its refresh; Close ends it too
}

// NewJWTVerifier checks opts and returns a verifier. It does no I/O: keys
// are fetched by Provision, or by the first token.
func NewJWTVerifier(opts JWTOptions) (*JWTVerifier, error) {
	if opts.Issuer == "" || opts.Audience == "" {
		return nil, errors.New("jwt: issuer and audience are required")
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
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = 5 * time.Second
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 5 * time.Minute
	}
	if opts.UnknownKIDInterval <= 0 {
		opts.UnknownKIDInterval = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &http.Client{}
	if opts.Client != nil {
		*c = *opts.Client
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = cappedTransport{rt: rt, max: maxIssuerDocument}
	ctx, cancel := context.WithCancel(context.Background())
	return &JWTVerifier{opts: opts, client: c, ctx: ctx, cancel: cancel}, nil
}

// Close stops the background JWKS refresh.
func (v *JWTVerifier) Close() { v.cancel() }

// Provision discovers the JWKS (unless configured) and fetches it. Verify
// provisions on demand, so a failure here is not fatal: tokens are refused
// until the issuer answers.
func (v *JWTVerifier) Provision(ctx context.Context) error {
	v.provisioning.Lock()
	defer v.provisioning.Unlock()
	_, err := v.provision(ctx)
	return err
}

// provision runs with v.provisioning held.
func (v *JWTVerifier) provision(ctx context.Context) (*keySource, error) {
	v.mu.Lock()
	src := v.src
	v.mu.Unlock()
	if src != nil {
		return src, nil
	}
	jwksURL := v.opts.JWKS
	if jwksURL == "" {
		var err error
		if jwksURL, err = v.discover(ctx); err != nil {
			return nil, err
		}
	}
	// The refresh goroutine starts before the first fetch; a failed first
	// fetch must stop it.
	sctx, stop := context.WithCancel(v.ctx)
	store, err := jwkset.NewStorageFromHTTP(jwksURL, jwkset.HTTPClientStorageOptions{
		Client:          v.client,
		Ctx:             sctx,
		HTTPTimeout:     v.opts.FetchTimeout,
		RefreshInterval: v.opts.Refresh,
		RefreshErrorHandler: func(_ context.Context, err error) {
			v.opts.Logger.Warn("jwks refresh failed; keeping the keys at hand", "err", err)
		},
	})
	if err != nil {
		stop()
		return nil, fmt.Errorf("jwks: %w", err)
	}
	// keyfunc's own unknown-kid limiter waits for its next token; ours
	// refuses at once (gatedStorage), so keyfunc's never waits.
	refetch, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{jwksURL: store},
		RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1),
	})
	if err != nil {
		stop()
		return nil, fmt.Errorf("jwks: %w", err)
	}
	kf, err := keyfunc.New(keyfunc.Options{
		Storage:      &gatedStorage{Storage: store, refetch: refetch, v: v},
		UseWhitelist: []jwkset.USE{jwkset.UseSig, ""},
	})
	if err != nil {
		stop()
		return nil, fmt.Errorf("jwks: %w", err)
	}
	src = &keySource{kf: kf, stop: stop}
	v.mu.Lock()
	v.src = src
	v.mu.Unlock()
	return src, nil
}

// discover finds the issuer's jwks_uri through its metadata.
func (v *JWTVerifier) discover(ctx context.Context) (string, error) {
	var last error
	for _, u := range issuerMetadataURLs(v.opts.Issuer) {
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		found, err := v.getJSON(ctx, u, &doc)
		if err != nil {
			last = err
			continue
		}
		if !found {
			continue
		}
		if doc.Issuer != v.opts.Issuer {
			// RFC 8414 §3.3: another issuer's document must not be used.
			return "", fmt.Errorf("jwt: %s names issuer %q, not %q", u, doc.Issuer, v.opts.Issuer)
		}
		ju, err := url.Parse(doc.JWKSURI)
		if err != nil || (ju.Scheme != "https" && ju.Scheme != "http") || ju.Host == "" {
			return "", fmt.Errorf("jwt: %s has no http(s) jwks_uri", u)
		}
		return doc.JWKSURI, nil
	}
	if last != nil {
		return "", last
	}
	return "", fmt.Errorf("jwt: issuer %s serves no authorization server or OpenID metadata", v.opts.Issuer)
}

// getJSON fetches u into out; found is false on a 404.
func (v *JWTVerifier) getJSON(ctx context.Context, u string, out any) (found bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, v.opts.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, fmt.Errorf("jwt: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("jwt: issuer metadata: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("jwt: %s answered %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return false, fmt.Errorf("jwt: %s is not a JSON document", u)
	}
	return true, nil
}

// issuerMetadataURLs lists where an issuer's metadata may be: RFC 8414
// first, then OpenID Connect Discovery.
func issuerMetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil
	}
	root := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{root + "/.well-known/oauth-authorization-server", root + "/.well-known/openid-configuration"}
	}
	return []string{
		root + "/.well-known/oauth-authorization-server" + path,
		root + "/.well-known/openid-configuration" + path,
		root + path + "/.well-known/openid-configuration",
	}
}

// source returns the provisioned keys, provisioning them when the gate is
// open and no other discovery runs; otherwise it refuses at once.
func (v *JWTVerifier) source(ctx context.Context, now time.Time) (*keySource, error) {
	v.mu.Lock()
	src := v.src
	v.mu.Unlock()
	if src != nil {
		return src, nil
	}
	if !v.provisioning.TryLock() {
		return nil, errors.New("jwks: being fetched")
	}
	defer v.provisioning.Unlock()
	if !v.takeGate(now) {
		return nil, errors.New("jwks: the issuer failed recently")
	}
	return v.provision(ctx)
}

// takeGate opens the fetch gate for one caller at most once per
// UnknownKIDInterval.
func (v *JWTVerifier) takeGate(now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if now.Before(v.gateOpen) {
		return false
	}
	v.gateOpen = now.Add(v.opts.UnknownKIDInterval)
	return true
}

// nowKey carries Verify's time to gatedStorage.
type nowKey struct{}

// errGateShut refuses a token whose unknown kid arrives while the fetch
// gate is shut.
var errGateShut = errors.New("unknown key id; the JWKS was fetched too recently to fetch again")

// gatedStorage reads keys from the fetched JWKS and fetches it again for an
// unknown kid only when the verifier's gate is open.
type gatedStorage struct {
	jwkset.Storage                // the JWKS at hand; reads never fetch
	refetch        jwkset.Storage // reads fetch on an unknown kid
	v              *JWTVerifier
}

func (g *gatedStorage) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	k, err := g.Storage.KeyRead(ctx, kid)
	if !errors.Is(err, jwkset.ErrKeyNotFound) {
		return k, err
	}
	now, ok := ctx.Value(nowKey{}).(time.Time)
	if !ok || !g.v.takeGate(now) {
		return jwkset.JWK{}, errGateShut
	}
	ctx, cancel := context.WithTimeout(ctx, g.v.opts.FetchTimeout)
	defer cancel()
	return g.refetch.KeyRead(ctx, kid)
}

// Verify checks a compact JWS token's signature, algorithm, issuer,
// audience, expiry and not-before at now, and returns the principal it
// names with its scopes (`scope`, space-separated, or `scp`). Every
// refusal matches ErrInvalidToken.
func (v *JWTVerifier) Verify(ctx context.Context, token string, now time.Time) (Principal, error) {
	if len(token) > MaxAuthorization || strings.Count(token, ".") != 2 {
		return Principal{}, invalid("not a JWT")
	}
	src, err := v.source(ctx, now)
	if err != nil {
		return Principal{}, invalid("keys unavailable: %v", err)
	}
	p := jwt.NewParser(
		jwt.WithValidMethods(jwtAlgs),
		jwt.WithIssuer(v.opts.Issuer),
		jwt.WithAudience(v.opts.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(v.opts.Leeway),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	keys := src.kf.KeyfuncCtx(context.WithValue(ctx, nowKey{}, now))
	claims := jwt.MapClaims{}
	if _, err := p.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		// RFC 7515 §4.1.11: a token whose crit names an extension the
		// recipient does not understand is invalid. golang-jwt ignores
		// crit, and specgate understands no extension.
		if _, ok := t.Header["crit"]; ok {
			return nil, errors.New("crit header: no extension is supported")
		}
		return keys(t)
	}); err != nil {
		return Principal{}, invalid("%v", err)
	}
	sub := claimString(claims[v.opts.SubjectClaim])
	if sub == "" {
		return Principal{}, invalid("no %s claim", v.opts.SubjectClaim)
	}
	return Principal{Subject: sub, Org: claimString(claims[v.opts.OrgClaim]), Scopes: claimScopes(claims)}, nil
}

func claimString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return fmt.Sprint(x)
	case json.Number:
		return x.String()
	}
	return ""
}

// claimScopes reads `scope` (RFC 8693: space-separated) or `scp` (a
// string or a list, as some issuers send).
func claimScopes(c jwt.MapClaims) []string {
	if s, ok := c["scope"].(string); ok {
		return strings.Fields(s)
	}
	switch x := c["scp"].(type) {
	case string:
		return strings.Fields(x)
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// cappedTransport cuts every answer body at max bytes, so an issuer cannot
// make specgate read or decode an unbounded document.
type cappedTransport struct {
	rt  http.RoundTripper
	max int64
}

func (t cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &cappedBody{rc: resp.Body, left: t.max}
	return resp, nil
}

// errTooLarge ends a body past the cap.
var errTooLarge = errors.New("answer is larger than 1 MiB")

type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte past the cap tells a too-long body
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errTooLarge
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
