// Package invoke makes the calls of an OpenAPI operation: it validates a model's
// arguments against the operation, builds the HTTP request (parameters and body in the
// operation's styles and media types, through package serialize, and upstream auth:
// API keys, bearer and basic credentials, OAuth2 client-credentials tokens, per
// principal when configured), and sends it under rate governance, handing back the
// answer as read from the wire (redacted) or a typed error.
//
//   - Client.Prepare validates and builds a Call, so that a bad call costs no budget;
//     Call.Do sends it once.
//   - Governed runs a call under the limiter: prepare (free), admit (charged), send,
//     learn from the answer's rate-limit headers, settle, and retry an idempotent call the
//     upstream refused when the wait fits the deadline; DoPages follows the next pages
//     package paging finds. What differs per call (pages, the cooldown keyed on the
//     arguments, a program's place in the queue, where the wait is bounded, progress)
//     travels with it as CallOptions; whose call it is, in its context (WithPrincipal).
//   - Caller is the whole call invoke and run_script make: from the result cache when an
//     identical call was answered within its TTL, or confirmed by the upstream's 304 to a
//     conditional request (ETag, Last-Modified), else governed, the answer stored in the answer store and cached
//     (package answer).
//
// What the model reads of an answer (previews, jq, fitting to a budget) is package
// answer's: invoke decodes a JSON body once, to find its next page or join pages,
// and hands the value on (answer.Answer.Decoded) so that no reader decodes it again.
package invoke

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/specgate/specgate/pkg/spec"
)

// Defaults for Options fields left zero.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 8 << 20
	// maxRedirects bounds redirects followed within the allowed hosts.
	maxRedirects = 5
)

// Options configure a Client. The zero value is useful: a 30s deadline per
// call, an 8 MiB response cap, no credentials, private networks allowed.
type Options struct {
	// HTTPClient sends requests. If nil, the Client uses its own transport,
	// which can refuse private networks (BlockPrivateNetworks). When set, its
	// Timeout is ignored (the per-call deadline applies), its CheckRedirect
	// is replaced by the Client's host policy, and blocking private networks
	// is left to its transport.
	HTTPClient *http.Client
	// Proxy picks the proxy of a request, as http.Transport.Proxy does:
	// cmd passes http.ProxyFromEnvironment (HTTPS_PROXY, HTTP_PROXY,
	// NO_PROXY), or ProxyTo the config's proxy. If nil, calls go direct. With
	// BlockPrivateNetworks, a call that goes through a proxy has its target
	// host resolved and checked before the request leaves, and the proxy is
	// given the checked address, not the name (it would resolve the name
	// again); the Host header and the TLS server name stay the name.
	Proxy func(*http.Request) (*url.URL, error)
	// Timeout bounds one call: connect, headers and body. If zero,
	// DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes caps the response body kept. If zero,
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// BlockPrivateNetworks refuses loopback, private, link-local and
	// unspecified addresses, checked on the resolved address at connect
	// time (so DNS rebinding cannot get around it). Default false. A spec's
	// SpecOptions.BlockPrivateNetworks overrides it.
	BlockPrivateNetworks bool
	// AllowedHosts are hosts ("host" or "host:port") every spec may be
	// redirected to besides its own base URL host. Default none.
	AllowedHosts []string
	// UploadsDir is the only directory multipart and octet-stream file
	// parts may be read from by path. Default "": reading files is off
	// (base64 values still work).
	UploadsDir string
	// AllowModelCredentialHeaders lets the model's headers set
	// Authorization, Cookie, Proxy-Authorization and the API-key headers of
	// the spec's schemes. Default false: they are refused.
	AllowModelCredentialHeaders bool
	// AllowModelOverrideHeaders lets the model's headers and header
	// parameters set the headers that override the method, path or client
	// (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override,
	// X-Original-Method, X-Original-HTTP-Method, X-Original-URL,
	// X-Rewrite-URL, X-Forwarded-For, X-Forwarded-Host, X-Forwarded-Proto,
	// X-Real-IP, Forwarded). Default false: they are refused, since they
	// change the method or path the upstream runs or the client it trusts.
	AllowModelOverrideHeaders bool
	// UserAgent is sent as User-Agent when neither the call's arguments
	// nor the spec's static headers set one: upstreams (GitHub) ask for a
	// name they can reach out to. If "", Go's default.
	UserAgent string
	// Specs holds per-spec settings by spec name.
	Specs map[string]SpecOptions
	// lookup resolves target names for a proxied call with private
	// networks blocked; tests stub it. If nil, net.DefaultResolver.
	lookup lookupFunc
}

// SpecOptions are one spec's settings. Zero fields fall back to Options.
type SpecOptions struct {
	// Timeout overrides Options.Timeout for this spec.
	Timeout time.Duration
	// EndpointTimeouts override the timeout per endpoint, keyed by endpoint
	// id or operationId.
	EndpointTimeouts map[string]time.Duration
	// MaxResponseBytes overrides Options.MaxResponseBytes for this spec.
	MaxResponseBytes int64
	// BlockPrivateNetworks overrides Options.BlockPrivateNetworks when set.
	BlockPrivateNetworks *bool
	// AllowModelCredentialHeaders overrides the global setting when set.
	AllowModelCredentialHeaders *bool
	// AllowModelOverrideHeaders overrides the global setting when set.
	AllowModelOverrideHeaders *bool
	// AllowedHosts are added to Options.AllowedHosts for this spec.
	AllowedHosts []string
	// OperatorHosts are addresses ("host:port", the port always written)
	// the operator gave for this spec: its base URL, the loopback address
	// its spec was read from. With private networks blocked, a call to one
	// of them connects whatever it resolves to: a local API is the
	// operator's choice. Addresses that come from a remote spec's servers
	// or from a redirect are still checked. Default none.
	OperatorHosts []string
	// Headers are static headers sent on every call to the spec's own host.
	// Their values are treated as secrets: never shown.
	Headers map[string]string
	// Auth holds credentials by security scheme name (as the spec's
	// securitySchemes name them).
	Auth map[string]Credential
}

// Credential is what one security scheme needs. Which fields apply depends
// on the scheme's type in the spec: apiKey uses Value; http bearer Token;
// http basic Username and Password; oauth2 ClientID and ClientSecret (client
// credentials flow) with an optional TokenURL (default: the spec's) and
// Scopes. Values are never printed.
type Credential struct {
	Value        string
	Token        string
	Username     string
	Password     string
	ClientID     string
	ClientSecret string
	TokenURL     string
	Scopes       []string
	// MissingEnv names environment variables the config referred to that
	// were unset; a call that needs this credential gets an AuthError
	// naming them.
	MissingEnv []string
	// ByPrincipal holds credentials per principal (see WithPrincipal); the
	// fields above are then the default for every other principal, and a
	// principal with neither gets an AuthError naming
	// specs[NAME].auth.SCHEME.by_principal.
	ByPrincipal []PrincipalCredential
}

// Client prepares and sends calls. It is safe for concurrent use; the zero
// value is not usable, build one with New.
type Client struct {
	opts Options

	open    *http.Client // private networks allowed
	blocked *http.Client // private networks refused at connect time
	// operator holds, by spec name, the blocked client of each spec with
	// OperatorHosts: its own transport, so that a connection its
	// allowance opened is never handed to another spec's call.
	operator map[string]*http.Client

	tokens tokenCache
}

// New returns a Client with opts.
func New(opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	c := &Client{opts: opts}
	if opts.HTTPClient != nil {
		hc := *opts.HTTPClient
		hc.Timeout = 0
		hc.CheckRedirect = checkRedirect
		c.open, c.blocked = &hc, &hc
	} else {
		c.open = &http.Client{Transport: newTransport(false, opts.Proxy, nil, nil), CheckRedirect: checkRedirect}
		c.blocked = &http.Client{Transport: newTransport(true, opts.Proxy, opts.lookup, nil), CheckRedirect: checkRedirect}
		for name, so := range opts.Specs {
			if len(so.OperatorHosts) == 0 {
				continue
			}
			allow := make(map[string]bool, len(so.OperatorHosts))
			for _, h := range so.OperatorHosts {
				allow[strings.ToLower(h)] = true
			}
			if c.operator == nil {
				c.operator = make(map[string]*http.Client)
			}
			c.operator[name] = &http.Client{Transport: newTransport(true, opts.Proxy, opts.lookup, allow), CheckRedirect: checkRedirect}
		}
	}
	return c
}

// Close releases idle connections.
func (c *Client) Close() {
	c.open.CloseIdleConnections()
	c.blocked.CloseIdleConnections()
	for _, hc := range c.operator {
		hc.CloseIdleConnections()
	}
}

// blockedFor returns the client of spec's calls with private networks
// blocked.
func (c *Client) blockedFor(spec string) *http.Client {
	if hc, ok := c.operator[spec]; ok {
		return hc
	}
	return c.blocked
}

// HostPort returns u's "host:port" as the dialer is given it: the host in
// lower case, the scheme's default port filled in.
func HostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// newTransport builds a transport; with blockPrivate, its dialer refuses
// private addresses except those of the hosts in allow ("host:port").
func newTransport(blockPrivate bool, proxy func(*http.Request) (*url.URL, error), lookup lookupFunc, allow map[string]bool) http.RoundTripper {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 proxy,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Decompression stays on: the cap applies to decoded bytes.
	}
	if !blockPrivate {
		return t
	}
	// The dialer checks every address it connects to: DNS rebinding cannot
	// slip a private address past a check made earlier on the name.
	checked := &net.Dialer{Timeout: d.Timeout, KeepAlive: d.KeepAlive, Control: refusePrivate}
	direct := t.Clone()
	direct.Proxy = nil
	direct.DialContext = checked.DialContext
	if len(allow) > 0 {
		// The transport dials the URL's host:port (the name, not yet
		// resolved): an address the operator wrote connects to whatever
		// it names, every other one is checked as it connects.
		direct.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if allow[strings.ToLower(addr)] {
				return d.DialContext(ctx, network, addr)
			}
			return checked.DialContext(ctx, network, addr)
		}
	}
	if proxy == nil {
		return direct
	}
	// Through a proxy the dialer sees only the proxy's address, which the
	// operator chose: pinnedProxy checks the target and hands the proxy the
	// checked address.
	if lookup == nil {
		lookup = net.DefaultResolver.LookupNetIP
	}
	return &pinnedProxy{proxy: proxy, lookup: lookup, direct: direct, base: t, allow: allow}
}

// ProxyTo sends every request through the proxy at u except those to a
// loopback target (localhost, 127.0.0.0/8, ::1), which go direct, as
// http.ProxyFromEnvironment leaves them: a spec's mock listens on loopback,
// and an egress proxy cannot reach this machine's loopback.
func ProxyTo(u *url.URL) func(*http.Request) (*url.URL, error) {
	return func(r *http.Request) (*url.URL, error) {
		host := r.URL.Hostname()
		if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
			return nil, nil
		}
		if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
			return nil, nil
		}
		return u, nil
	}
}

func (c *Client) specOptions(name string) SpecOptions { return c.opts.Specs[name] }

func (c *Client) timeoutFor(e *spec.Endpoint) time.Duration {
	so := c.specOptions(e.Spec)
	if d, ok := so.EndpointTimeouts[e.ID]; ok && d > 0 {
		return d
	}
	if e.OperationID != "" {
		if d, ok := so.EndpointTimeouts[e.OperationID]; ok && d > 0 {
			return d
		}
	}
	if so.Timeout > 0 {
		return so.Timeout
	}
	return c.opts.Timeout
}

func (c *Client) maxBytesFor(e *spec.Endpoint) int64 {
	if n := c.specOptions(e.Spec).MaxResponseBytes; n > 0 {
		return n
	}
	return c.opts.MaxResponseBytes
}

func (c *Client) blockPrivateFor(e *spec.Endpoint) bool {
	if b := c.specOptions(e.Spec).BlockPrivateNetworks; b != nil {
		return *b
	}
	return c.opts.BlockPrivateNetworks
}

func (c *Client) allowCredHeadersFor(e *spec.Endpoint) bool {
	if b := c.specOptions(e.Spec).AllowModelCredentialHeaders; b != nil {
		return *b
	}
	return c.opts.AllowModelCredentialHeaders
}

func (c *Client) allowOverrideHeadersFor(e *spec.Endpoint) bool {
	if b := c.specOptions(e.Spec).AllowModelOverrideHeaders; b != nil {
		return *b
	}
	return c.opts.AllowModelOverrideHeaders
}

// allowedHostsFor returns the lower-case hosts (host or host:port) a call
// to e may be redirected to, its own host first.
func (c *Client) allowedHostsFor(own string, e *spec.Endpoint) []string {
	hosts := []string{strings.ToLower(own)}
	for _, h := range c.opts.AllowedHosts {
		hosts = append(hosts, strings.ToLower(h))
	}
	for _, h := range c.specOptions(e.Spec).AllowedHosts {
		hosts = append(hosts, strings.ToLower(h))
	}
	return hosts
}
