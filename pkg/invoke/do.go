package invoke

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// Result is an upstream answer as read from the wire, bounded in size and with the
// credentials the call sent redacted; package answer renders what the model reads of it.
type Result struct {
	StatusCode int `json:"statusCode"`
	// Headers are the useful response headers by lower-case name: the
	// content type, location and every rate-limit header.
	Headers map[string]string `json:"headers,omitempty"`
	// Truncated is true when the body was cut at the size or time bound;
	// TruncatedReason says which.
	Truncated       bool   `json:"truncated,omitempty"`
	TruncatedReason string `json:"truncatedReason,omitempty"`
	// Size is the body's full size in bytes when known; -1 when the body
	// was cut and the upstream did not say its length.
	Size int64 `json:"size"`
	// Latency is the time from sending to the end of reading.
	Latency time.Duration `json:"-"`
	// RawHeaders are all response headers, for the rate limiter.
	RawHeaders http.Header `json:"-"`
	// RawBody is the body bytes read (at most the cap): the answer the
	// store keeps, and what rate-limit detection reads. Credentials are
	// redacted from it.
	RawBody []byte `json:"-"`
	// decoded is RawBody decoded as JSON, when reading the next page did.
	decoded any
}

// errorExcerpt bounds the body carried by HTTP errors.
const errorExcerpt = 2048

// policyKey carries a call's redirect policy in the request context.
type policyKey struct{}

type redirectPolicy struct {
	ownHost, ownScheme string
	allowed            []string
	credHeaders        []string
}

// checkRedirect follows a redirect within the call's own host, and to
// allowed hosts with credentials dropped; any other redirect comes back
// to the caller as the 3xx answer.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return http.ErrUseLastResponse
	}
	pol, _ := req.Context().Value(policyKey{}).(*redirectPolicy)
	if pol == nil {
		return http.ErrUseLastResponse
	}
	host := strings.ToLower(req.URL.Host)
	scheme := req.URL.Scheme
	if host == pol.ownHost && (scheme == pol.ownScheme || scheme == "https") {
		return nil
	}
	if !hostAllowed(req.URL.Hostname(), host, pol.allowed[1:]) {
		return http.ErrUseLastResponse
	}
	for _, h := range append([]string{"Authorization", "Proxy-Authorization", "Cookie"}, pol.credHeaders...) {
		req.Header.Del(h)
	}
	return nil
}

// hostAllowed matches host:port against entries that are a bare host (any
// port) or host:port.
func hostAllowed(hostname, hostport string, allowed []string) bool {
	hostname = strings.ToLower(hostname)
	for _, a := range allowed {
		if a == hostport || a == hostname {
			return true
		}
	}
	return false
}

// Do sends the call once, with the call's deadline, and reads the answer
// within the size cap and the deadline. When a response arrived, the
// Result is non-nil even if an error is returned too: *HTTPError,
// *UpstreamRateLimitError or *AuthError. Without a response, the error is
// *UnreachableError, *TimeoutError, *AuthError (a token could not be
// fetched) or context.Canceled. An OAuth2 token refused with 401 is
// fetched anew and the call sent once more.
func (c *Call) Do(ctx context.Context) (*Result, error) {
	res, err := c.do(ctx)
	if c.auth.usesOAuth() && res != nil && res.StatusCode == http.StatusUnauthorized {
		c.forgetSentTokens()
		res, err = c.do(ctx)
	}
	return res, err
}

func (c *Call) do(parent context.Context) (*Result, error) {
	if err := parent.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(parent, c.timeout)
	defer cancel()
	hc := c.c.open
	if c.blockPriv {
		hc = c.c.blockedFor(c.endpoint.Spec)
	}
	pol := &redirectPolicy{ownHost: c.ownHost, ownScheme: c.ownScheme, allowed: c.allowed, credHeaders: c.credHeaders}
	u := *c.url
	req, err := http.NewRequestWithContext(context.WithValue(ctx, policyKey{}, pol), c.method, u.String(), nil)
	if err != nil {
		return nil, &UnreachableError{Host: c.url.Host, Reason: "the request could not be built"}
	}
	req.URL = &u
	req.Header = c.header.Clone()
	if ua := c.c.opts.UserAgent; ua != "" && req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", ua) // static headers, applied below, still win
	}
	if c.hasBody {
		data := c.body
		req.Body = io.NopCloser(bytes.NewReader(data))
		req.ContentLength = int64(len(data))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		if len(data) == 0 {
			req.Body = http.NoBody
		}
	}
	if err := c.applyAuth(ctx, req, hc); err != nil {
		return nil, c.classify(parent, ctx, err)
	}

	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return nil, c.classify(parent, ctx, err)
	}
	defer resp.Body.Close()

	data, readErr := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	res := &Result{
		StatusCode: resp.StatusCode,
		RawHeaders: resp.Header,
		Latency:    time.Since(start),
		Size:       int64(len(data)),
	}
	switch {
	case int64(len(data)) > c.maxBytes:
		data = data[:c.maxBytes]
		res.Truncated = true
		res.Size = resp.ContentLength
		if res.Size >= 0 {
			res.TruncatedReason = "cut at the " + strconv.FormatInt(c.maxBytes, 10) + " byte limit of " + strconv.FormatInt(res.Size, 10) + " bytes"
		} else {
			res.Size = -1
			res.TruncatedReason = "cut at the " + strconv.FormatInt(c.maxBytes, 10) + " byte limit; full size unknown"
		}
	case readErr != nil:
		res.Truncated = true
		res.Size = resp.ContentLength
		if res.Size < 0 {
			res.Size = -1
		}
		if errors.Is(parent.Err(), context.Canceled) {
			return nil, context.Canceled
		}
		if ctx.Err() != nil {
			res.TruncatedReason = "the body did not finish within the " + c.timeout.String() + " call deadline; cut after " + strconv.Itoa(len(data)) + " bytes"
		} else {
			res.TruncatedReason = "the connection broke after " + strconv.Itoa(len(data)) + " bytes"
		}
	}
	secrets := c.secrets()
	data = redactBytes(data, secrets)
	if res.Truncated {
		data = cutSecretHead(data, secrets)
	}
	res.RawBody = data
	res.RawHeaders = redactHeader(resp.Header, secrets)
	res.Headers = usefulHeaders(resp.Header, secrets)
	return res, c.statusError(res, data, time.Now())
}

// classify turns a transport error into a typed error. Messages never
// carry the URL: a query API key would be in it.
func (c *Call) classify(parent, ctx context.Context, err error) error {
	var ae *AuthError
	if errors.As(err, &ae) {
		return ae
	}
	if parent.Err() != nil {
		if errors.Is(parent.Err(), context.Canceled) {
			return context.Canceled
		}
		return &TimeoutError{Timeout: c.timeout}
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return &TimeoutError{Timeout: c.timeout}
	}
	host := c.url.Host
	if errors.Is(err, errPrivateAddress) {
		return &UnreachableError{Host: host, Reason: "refused: the address is private, loopback or link-local (block_private_networks)", Fix: privateFix(c.endpoint.Spec)}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return &UnreachableError{Host: host, Reason: "DNS: no such host"}
		}
		return &UnreachableError{Host: host, Reason: "DNS lookup failed"}
	}
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recErr tls.RecordHeaderError
	switch {
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &invalid):
		return &UnreachableError{Host: host, Reason: "TLS: the certificate is not trusted for this host"}
	case errors.As(err, &recErr):
		return &UnreachableError{Host: host, Reason: "TLS: the server did not speak TLS"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &UnreachableError{Host: host, Reason: "connection refused"}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &UnreachableError{Host: host, Reason: "the connection was closed before an answer"}
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return &UnreachableError{Host: host, Reason: "no route to host"}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return &UnreachableError{Host: host, Reason: opErr.Op + " failed"}
	}
	msg := err.Error()
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		msg = urlErr.Err.Error() // never the URL: a query API key may be in it
	}
	switch {
	case strings.Contains(msg, "HTTP response to HTTPS client"):
		return &UnreachableError{Host: host, Reason: "TLS: the server answered plain HTTP"}
	case strings.Contains(msg, "tls:"):
		return &UnreachableError{Host: host, Reason: "TLS handshake failed"}
	}
	return &UnreachableError{Host: host, Reason: redactString(shorten(msg), c.secrets())}
}

// statusError maps a 4xx or 5xx answer to a typed error.
func (c *Call) statusError(res *Result, data []byte, now time.Time) error {
	code := res.StatusCode
	if code < 400 {
		return nil
	}
	excerpt := textExcerpt(data, errorExcerpt)
	if e, ok := upstreamRateLimit(code, res.RawHeaders, data, now); ok {
		e.Body = excerpt
		return e
	}
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		if len(c.auth.steps) > 0 {
			st := c.auth.steps[0]
			sch := c.endpoint.Owner().Schemes[st.scheme]
			return &AuthError{Spec: c.endpoint.Spec, Scheme: st.scheme, Key: configKey(c.endpoint.Spec, st.scheme, sch),
				StatusCode: code, Refused: true, Reason: oneLine(excerpt, 200)}
		}
		if c.auth.needed != "" {
			return &AuthError{Spec: c.endpoint.Spec, Scheme: c.auth.needed, Key: c.auth.neededKey, StatusCode: code, Reason: oneLine(excerpt, 200)}
		}
	}
	return &HTTPError{StatusCode: code, Body: excerpt}
}

// upstreamRateLimit recognises an answer that refuses the call for rate (a
// 429, a GitHub-style 403) and reads how long to wait, with the rate
// limiter's parser of every header family: Retry-After, retry-after-ms,
// X-RateLimit-*, the IETF RateLimit fields.
func upstreamRateLimit(code int, h http.Header, body []byte, now time.Time) (*UpstreamRateLimitError, bool) {
	sig := ratelimit.ParseHeaders(code, h, body, now)
	if !sig.RateLimited {
		return nil, false
	}
	e := &UpstreamRateLimitError{StatusCode: code}
	at := sig.RetryAt
	for _, q := range []ratelimit.Quota{sig.Requests, sig.Tokens} {
		if at.IsZero() && (!q.HasRemaining || q.Remaining == 0) && q.Reset.After(now) {
			at = q.Reset
		}
	}
	if !at.IsZero() {
		e.RetryAfter, e.RetryAt = max(at.Sub(now), 0), at
	} else if strings.TrimSpace(h.Get("Retry-After")) != "" {
		e.Unreadable = true
	}
	return e, true
}

// usefulHeaders keeps the headers a model can use.
func usefulHeaders(h http.Header, secrets []string) map[string]string {
	out := map[string]string{}
	for k, vs := range h {
		lk := strings.ToLower(k)
		switch {
		case lk == "content-type", lk == "location", lk == "retry-after", lk == "content-length",
			strings.HasPrefix(lk, "x-ratelimit"), strings.HasPrefix(lk, "ratelimit"),
			strings.HasPrefix(lk, "x-rate-limit"), strings.HasPrefix(lk, "anthropic-ratelimit"):
			out[lk] = redactString(strings.Join(vs, ", "), secrets)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// textExcerpt returns at most n bytes of data as text.
func textExcerpt(data []byte, n int) string {
	if len(data) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(data[cut]) {
			cut--
		}
		return answer.Text(data[:cut]) + "…"
	}
	return answer.Text(data)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

const redactedText = "[redacted]"

func redactBytes(data []byte, secrets []string) []byte {
	for _, s := range secrets {
		if bytes.Contains(data, []byte(s)) {
			data = bytes.ReplaceAll(data, []byte(s), []byte(redactedText))
		}
	}
	return data
}

// cutSecretHead drops the end of a body cut short when it is the start of a
// secret: the rest of the secret was past the cut, so no replacement saw it.
func cutSecretHead(data []byte, secrets []string) []byte {
	for _, s := range secrets {
		for k := min(len(s)-1, len(data)); k > 0; k-- {
			if bytes.HasSuffix(data, []byte(s[:k])) {
				data = data[:len(data)-k]
				break
			}
		}
	}
	return data
}

func redactString(v string, secrets []string) string {
	for _, s := range secrets {
		v = strings.ReplaceAll(v, s, redactedText)
	}
	return v
}

// errPrivateAddress is returned by the dialer for refused targets.
var errPrivateAddress = errors.New("private address refused")

// refusePrivate is a net.Dialer Control: it runs on the resolved address
// of every connection, so DNS rebinding cannot slip a private address past
// a check made earlier on the name.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return errPrivateAddress
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return errPrivateAddress
	}
	if isPrivate(ip) {
		return errPrivateAddress
	}
	return nil
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")
var thisNet = netip.MustParsePrefix("0.0.0.0/8")

func isPrivate(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() ||
		cgnat.Contains(ip) || thisNet.Contains(ip) || ip.Zone() != ""
}

// IsPrivate reports whether block_private_networks refuses ip.
func IsPrivate(ip netip.Addr) bool { return isPrivate(ip) }
