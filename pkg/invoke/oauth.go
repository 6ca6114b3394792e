package invoke

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// tokenCache holds OAuth2 client-credentials access tokens, one per spec,
// scheme and client credential (client id and secret, token URL, scopes),
// so principals with their own client ids never share a token. It is safe
// for concurrent use; the zero value is ready.
//
// Of N simultaneous calls that need the same missing or expired token,
// exactly one fetches it; the others wait for that fetch (or their own
// context) and share its answer. A token is reused until shortly before
// its expires_in runs out (a tenth of its lifetime early, at most a
// minute), or, without expires_in, until an upstream refuses it.
type tokenCache struct {
	// now is the clock expiry is judged by. If nil, time.Now.
	now func() time.Time
	// onWait, if set, runs when a caller starts waiting for another's
	// fetch (tests use it to know every caller is waiting).
	onWait func()

	mu      sync.Mutex
	entries map[string]*tokenEntry
}

// tokenEntry is one client credential's token and its fetch in flight.
type tokenEntry struct {
	spec string
	// conf lives as long as the entry so the auth style x/oauth2 detects
	// on the first fetch (basic header, else form body) is remembered.
	conf *clientcredentials.Config
	// secrets are the credential's forms redacted from token endpoint
	// errors.
	secrets []string

	value   string    // "" when none is held
	expires time.Time // zero: until refused
	fetch   *tokenFetch
}

// tokenFetch is one token request that any number of callers wait for.
type tokenFetch struct {
	done  chan struct{} // closed when value or err is set
	value string
	err   error
}

// sentTokens records the access tokens one call sent, so a 401 forgets
// exactly the token that was refused (not one a concurrent call already
// fetched anew), and the call's answer is redacted of them even after they
// left the cache.
type sentTokens struct {
	mu     sync.Mutex
	tokens []sentToken
}

type sentToken struct{ key, value string }

func (s *sentTokens) add(key, value string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.tokens = append(s.tokens, sentToken{key, value})
	s.mu.Unlock()
}

func (s *sentTokens) list() []sentToken {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sentToken(nil), s.tokens...)
}

func (t *tokenCache) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// get returns a valid access token for st and the cache key it is held
// under, fetching one through hc when none is held or it is about to
// expire. hc is the call's own guarded client: the token request gets the
// same private-network blocking, and the call's deadline through ctx. It
// follows no redirect (ctx carries no redirect policy), so the client
// secret goes to the configured token URL only.
func (t *tokenCache) get(ctx context.Context, hc *http.Client, specName string, st authStep, baseURL string) (key, value string, err error) {
	tokenURL, err := resolveTokenURL(st.tokenURL, baseURL)
	if err != nil {
		return "", "", tokenAuthError(specName, st, err.Error())
	}
	key = tokenKey(specName, st, tokenURL)
	for {
		t.mu.Lock()
		e := t.entry(key, specName, st, tokenURL)
		if e.value != "" && (e.expires.IsZero() || t.clock().Before(e.expires)) {
			v := e.value
			t.mu.Unlock()
			return key, v, nil
		}
		if f := e.fetch; f != nil {
			t.mu.Unlock()
			if t.onWait != nil {
				t.onWait()
			}
			select {
			case <-f.done:
			case <-ctx.Done():
				return "", "", ctx.Err()
			}
			if f.err == nil {
				return key, f.value, nil
			}
			if isContextError(f.err) && ctx.Err() == nil {
				continue // the fetching call gave up; fetch with this one's deadline
			}
			return "", "", f.err
		}
		f := &tokenFetch{done: make(chan struct{})}
		e.fetch = f
		conf, secrets := e.conf, e.secrets
		t.mu.Unlock()

		start := t.clock()
		tok, err := conf.Token(context.WithValue(ctx, oauth2.HTTPClient, hc))
		if err != nil {
			f.err = tokenFetchError(ctx, specName, st, tokenURL, secrets, err)
		} else {
			f.value = tok.AccessToken
		}

		t.mu.Lock()
		e.fetch = nil
		if f.err == nil {
			e.value, e.expires = f.value, expiryOf(start, tok)
		}
		close(f.done)
		t.mu.Unlock()
		return key, f.value, f.err
	}
}

// entry returns key's entry, creating it. t.mu must be held.
func (t *tokenCache) entry(key, specName string, st authStep, tokenURL string) *tokenEntry {
	if e, ok := t.entries[key]; ok {
		return e
	}
	if t.entries == nil {
		t.entries = map[string]*tokenEntry{}
	}
	var raw []string
	if len(st.cred.ClientSecret) >= 4 {
		raw = append(raw, st.cred.ClientSecret)
	}
	raw = append(raw, url.QueryEscape(st.cred.ClientID)+":"+url.QueryEscape(st.cred.ClientSecret))
	e := &tokenEntry{
		spec: specName,
		conf: &clientcredentials.Config{
			ClientID:     st.cred.ClientID,
			ClientSecret: st.cred.ClientSecret,
			TokenURL:     tokenURL,
			Scopes:       st.cred.Scopes,
			// Auto-detect: HTTP basic first (client_secret_basic, what
			// RFC 6749 requires servers to accept), then the form body
			// (client_secret_post) when that is refused; the style that
			// worked is kept for this credential.
			AuthStyle: oauth2.AuthStyleAutoDetect,
		},
		secrets: secretForms(raw),
	}
	t.entries[key] = e
	return e
}

// forget drops the token held under key if it is still value, so the next
// call fetches a new one. A token that a concurrent call already replaced
// stays: N calls refused with the same old token cause one new fetch.
func (t *tokenCache) forget(key, value string) {
	t.mu.Lock()
	if e, ok := t.entries[key]; ok && e.value == value {
		e.value, e.expires = "", time.Time{}
	}
	t.mu.Unlock()
}

// values returns the access tokens held for specName.
func (t *tokenCache) values(specName string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, e := range t.entries {
		if e.spec == specName && e.value != "" {
			out = append(out, e.value)
		}
	}
	return out
}

// forgetSentTokens forgets every access token the call sent, after the
// upstream refused it with 401.
func (c *Call) forgetSentTokens() {
	for _, s := range c.auth.sent.list() {
		c.c.tokens.forget(s.key, s.value)
	}
}

// tokenKey identifies one client credential's token without holding its
// secret in clear.
func tokenKey(specName string, st authStep, tokenURL string) string {
	h := sha256.New()
	for _, s := range []string{specName, st.scheme, st.cred.ClientID, st.cred.ClientSecret, tokenURL, strings.Join(st.cred.Scopes, " ")} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// resolveTokenURL resolves a token URL the spec gives relative to the
// spec's base URL. The error's text is safe to show.
func resolveTokenURL(raw, baseURL string) (string, error) {
	tu, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("the token URL is not valid")
	}
	if !tu.IsAbs() {
		b, err := url.Parse(baseURL)
		if err != nil {
			return "", errors.New("the token URL is not valid")
		}
		tu = b.ResolveReference(tu)
	}
	if tu.Scheme != "https" && tu.Scheme != "http" {
		return "", errors.New("the token URL must be http(s)")
	}
	if tu.Host == "" {
		return "", errors.New("the token URL has no host")
	}
	return tu.String(), nil
}

// expiryOf returns when tok should be fetched anew, on the cache's clock
// (start is when the fetch began on it). x/oauth2 sets Expiry from the
// wall clock when the answer arrived; the lifetime left is what carries
// over. Zero when the server gave no (or no positive) expires_in.
func expiryOf(start time.Time, tok *oauth2.Token) time.Time {
	if tok.Expiry.IsZero() {
		return time.Time{}
	}
	life := time.Until(tok.Expiry)
	if life <= 0 {
		return time.Time{}
	}
	// Refresh shortly before expiry: a tenth of the lifetime, at most 60s.
	return start.Add(life - min(life/10, time.Minute))
}

// maxTokenErrorText bounds the token endpoint's words quoted in an error.
const maxTokenErrorText = 200

// tokenFetchError turns an x/oauth2 error into an *AuthError that names
// the config key and quotes at most a bounded, redacted part of what the
// token endpoint said; x/oauth2's own messages carry the whole body. A
// context error is returned as is, for the call to classify as a timeout
// or cancellation.
func tokenFetchError(ctx context.Context, specName string, st authStep, tokenURL string, secrets []string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	host := tokenURL
	if u, perr := url.Parse(tokenURL); perr == nil {
		host = u.Host
	}
	var re *oauth2.RetrieveError
	var ue *url.Error
	switch {
	case errors.As(err, &re):
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		reason := "the token endpoint answered " + strconv.Itoa(status)
		said := re.ErrorCode
		if re.ErrorDescription != "" {
			said = strings.TrimSpace(said + " " + re.ErrorDescription)
		}
		if said == "" {
			said = string(re.Body)
		}
		if said = oneLine(redactString(said, secrets), maxTokenErrorText); said != "" {
			reason += ": " + said
		}
		return tokenAuthError(specName, st, reason)
	case errors.Is(err, errPrivateAddress):
		return tokenAuthError(specName, st, "the token endpoint "+host+" is refused: the address is private, loopback or link-local (block_private_networks)")
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return tokenAuthError(specName, st, "the token endpoint "+host+" did not answer in time")
	case errors.As(err, &ue):
		return tokenAuthError(specName, st, "the token endpoint "+host+" could not be reached")
	case strings.Contains(err.Error(), "missing access_token"):
		return tokenAuthError(specName, st, "the token endpoint "+host+" answered without an access_token")
	}
	return tokenAuthError(specName, st, "the token endpoint "+host+" gave an answer that is not a token")
}

// tokenAuthError is a token that could not be had. StatusCode stays 0:
// nothing reached the upstream; the token endpoint's status is in Reason.
func tokenAuthError(specName string, st authStep, reason string) *AuthError {
	return &AuthError{Spec: specName, Scheme: st.scheme, Key: "specs[" + specName + "].auth." + st.scheme + ".client_id",
		Refused: true, Reason: reason}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
