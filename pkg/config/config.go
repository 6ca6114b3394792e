// Package config reads specgate's YAML configuration.
//
// The types mirror config.example.yaml key for key. Load and Parse decode a
// file strictly (an unknown key is an error naming its line), expand
// ${NAME} environment references in string values and read secrets from
// *_file keys. Default gives every default, Validate reports every problem at
// once without I/O, and the resolution helpers (ForEndpoint, ForSpec, Budget)
// answer what applies to one spec or endpoint after the endpoint -> spec ->
// global fallbacks.
//
// Credentials are Secrets: printing a Config in any way shows "[redacted]"
// in their place.
//
// Only cmd/specgate imports this package; it applies flags on top of a loaded
// Config, calls Validate, and turns the result into each package's options.
package config

import "time"

// Config is the whole configuration file. Zero values are not the defaults:
// start from Default (Load and Parse do) and override. A Config is plain
// data: treat it as read-only once validated and share it freely.
type Config struct {
	// RateLimitInterval is the per-endpoint cooldown: after a call to an
	// endpoint, another call to it within this interval is refused with
	// rate_limit. Default 10s. Overridable per spec and per endpoint.
	RateLimitInterval Duration `yaml:"rate_limit_interval" json:"rate_limit_interval"`
	// DisableRateLimiter turns the per-endpoint cooldown off; upstream
	// budgets still apply. Default false. Overridable per spec and endpoint.
	DisableRateLimiter bool `yaml:"disable_ratelimiter" json:"disable_ratelimiter"`
	// CacheTTL answers an identical idempotent call from the last successful
	// result for this long, costing no cooldown or budget. Default 0 (off).
	CacheTTL Duration `yaml:"cache_ttl" json:"cache_ttl"`
	// MaxRetries bounds retries after an upstream 429/5xx, for idempotent
	// calls only and only when the wait fits the call deadline. Default 2.
	MaxRetries int `yaml:"max_retries" json:"max_retries"`
	// MaxRetryWait caps the wait before one retry. Default 30s.
	MaxRetryWait Duration `yaml:"max_retry_wait" json:"max_retry_wait"`
	// CallTimeout is the deadline of one invoke: it bounds holds learned from
	// the upstream, retries and the HTTP exchange (not the budget queue,
	// which queue_timeout bounds). Default 30s. Overridable per spec and
	// endpoint.
	CallTimeout Duration `yaml:"call_timeout" json:"call_timeout"`
	// MaxResponseBytes caps the response body read from the wire and stored;
	// a longer body comes back cut with truncated: true. Default 8MiB.
	// Overridable per spec.
	MaxResponseBytes ByteSize `yaml:"max_response_bytes" json:"max_response_bytes"`
	// ResultBytes bounds the answer the model reads (the JSON text of one
	// tool result); a larger body comes back as a valid-JSON preview with a
	// responseId to read the rest. Default 16KiB; 1KiB to 1MiB.
	ResultBytes ByteSize `yaml:"result_bytes" json:"result_bytes"`
	// ResponseStoreBytes bounds all stored answers together (what the store
	// really holds, compressed); the least recently used answer of the
	// principal holding the most is evicted first. Default 64MiB.
	ResponseStoreBytes ByteSize `yaml:"response_store_bytes" json:"response_store_bytes"`
	// ResponseTTL is how long a stored answer is kept after it was last
	// read. Default 15m.
	ResponseTTL Duration `yaml:"response_ttl" json:"response_ttl"`
	// JQTimeout bounds one jq filter run. Default 1s.
	JQTimeout Duration `yaml:"jq_timeout" json:"jq_timeout"`
	// ReadOnly serves only GET, HEAD and OPTIONS endpoints: the others are
	// absent from search, and inspect and invoke answer not_found. Default
	// false. Overridable per spec.
	ReadOnly bool `yaml:"read_only" json:"read_only"`
	// AllowRuntimeTuning registers the set_rate_limit tool. Default false: a
	// model should not raise its own limits.
	AllowRuntimeTuning bool `yaml:"allow_runtime_tuning" json:"allow_runtime_tuning"`
	// AuditLog is a file that gets one JSON line per call (no argument
	// values, no secrets). Default "" (off). Load makes a relative path
	// relative to the config file.
	AuditLog string `yaml:"audit_log" json:"audit_log"`
	// OTLPEndpoint turns OpenTelemetry traces on: the OTLP/HTTP base URL
	// spans go to (to its /v1/traces), as OTEL_EXPORTER_OTLP_ENDPOINT
	// gives it; that variable, when set, wins. Default "" (traces off
	// unless the variable is set).
	OTLPEndpoint string `yaml:"otlp_endpoint" json:"otlp_endpoint"`
	// AllowedHosts are hosts (host or host:port) every spec may call besides
	// its own base URL host. Default none. Specs add their own.
	AllowedHosts []string `yaml:"allowed_hosts" json:"allowed_hosts"`
	// Proxy is the proxy every upstream call goes through: an http, https
	// or socks5 URL, or "none" to go direct whatever the environment says.
	// Default "": HTTPS_PROXY, HTTP_PROXY and NO_PROXY from the environment.
	// Either way loopback (a spec's mock) is never proxied.
	Proxy string `yaml:"proxy" json:"proxy"`
	// BlockPrivateNetworks refuses private, loopback and link-local targets,
	// checked on the resolved address at connect time. Unset (nil, the
	// default): on for specs loaded from URLs, off for specs from files.
	// Overridable per spec.
	BlockPrivateNetworks *bool `yaml:"block_private_networks" json:"block_private_networks"`
	// AllowCredentialHeaders lets the model set Authorization, Cookie and the
	// configured API-key headers in invoke. Default false. Overridable per
	// spec.
	AllowCredentialHeaders bool `yaml:"allow_credential_headers" json:"allow_credential_headers"`
	// AllowOverrideHeaders lets the model send X-HTTP-Method-Override,
	// X-HTTP-Method, X-Method-Override, X-Original-Method,
	// X-Original-HTTP-Method, X-Original-URL, X-Rewrite-URL,
	// X-Forwarded-For, X-Forwarded-Host, X-Forwarded-Proto, X-Real-IP and
	// Forwarded. Default false: they could turn a GET into a DELETE, change
	// the path, or forge a client's address, host or scheme. Overridable per
	// spec.
	AllowOverrideHeaders bool `yaml:"allow_override_headers" json:"allow_override_headers"`
	// UploadsDir is the only directory multipart file parts may be read from
	// by path. Default "" (by-path uploads off; base64 values still work).
	// Load makes a relative path relative to the config file.
	UploadsDir string `yaml:"uploads_dir" json:"uploads_dir"`
	// AllowExternalRefs lets specs resolve $refs to other documents. Default
	// false. Overridable per spec.
	AllowExternalRefs bool `yaml:"allow_external_refs" json:"allow_external_refs"`
	// SpecFetchTimeout bounds fetching one spec from a URL. Default 30s.
	SpecFetchTimeout Duration `yaml:"spec_fetch_timeout" json:"spec_fetch_timeout"`
	// MaxSpecBytes caps the size of one spec, from a file or a URL. Default
	// 64MiB (the full GitHub description is 13 MB).
	MaxSpecBytes ByteSize `yaml:"max_spec_bytes" json:"max_spec_bytes"`

	// Specs are the API descriptions to serve.
	Specs []Spec `yaml:"specs" json:"specs"`
	// Upstreams are budgets shared by every call to one upstream.
	Upstreams []Upstream `yaml:"upstreams" json:"upstreams"`
	// HTTP configures `specgate serve --http`.
	HTTP HTTP `yaml:"http" json:"http"`
	// Store says where limiter state lives.
	Store Store `yaml:"store" json:"store"`
	// Search tunes endpoint search.
	Search Search `yaml:"search" json:"search"`
	// Scripts bound run_script.
	Scripts Scripts `yaml:"scripts" json:"scripts"`

	// Approving writes (see approve.go).
	//
	// ApproveWrites asks the user (MCP elicitation, or an input_required
	// round trip on MCP 2026-07-28) before a call of an operation other than
	// GET, HEAD and OPTIONS is sent. Default false. Overridable per spec and
	// per endpoint.
	ApproveWrites bool `yaml:"approve_writes" json:"approve_writes"`
	// Approvals tunes how an approval is bound to its call.
	Approvals Approvals `yaml:"approvals" json:"approvals"`

	// Source is the path Load read, for messages. Not a key in the file.
	Source string `yaml:"-" json:"-"`
	// MissingEnv lists every ${NAME} reference whose variable was unset at
	// load, by the key that held it. Warn about each; not a key in the file.
	MissingEnv []EnvRef `yaml:"-" json:"-"`
}

// EnvRef is one ${NAME} reference: the config key that holds it (for
// example "specs[petstore].auth.api_key.value") and the variable name. It
// never holds a value.
type EnvRef struct {
	Key string
	Var string
}

// Spec is one API description to serve. Override fields are pointers: nil
// means "not set here, use the global value".
type Spec struct {
	// Name starts every endpoint id of the spec (<name>.<operationId>).
	// Letters, digits, '-' and '_'. Default: the file name without extension.
	Name string `yaml:"name" json:"name"`
	// Location is a file path or an http(s) URL. Required. Load makes a
	// relative file path relative to the config file.
	Location string `yaml:"location" json:"location"`
	// Required makes a failure to load this spec stop specgate; otherwise
	// the rest are served and the failure is reported. Default false.
	Required bool `yaml:"required" json:"required"`
	// BaseURL overrides the spec's servers. Default: from the spec.
	BaseURL string `yaml:"base_url" json:"base_url"`
	// Upstream joins a named budget group shared with other specs instead of
	// the base URL's host:port. Default "" (the host).
	Upstream string `yaml:"upstream" json:"upstream"`

	// ReadOnly overrides the global read_only for this spec; nil inherits.
	ReadOnly *bool `yaml:"read_only" json:"read_only,omitempty"`
	// Include, when not empty, serves only the endpoints one of its patterns
	// selects: an operationId glob ("get*"), "tag:NAME", "METHOD /path/glob"
	// or "/path/glob" (any method), where '*' is one path segment and '**'
	// any number. Applied after read_only. Default [] (everything). At
	// most MaxPatterns patterns of MaxPatternBytes each, in each list.
	Include []string `yaml:"include" json:"include,omitempty"`
	// Exclude then drops the endpoints one of its patterns selects (same
	// syntax). Default [].
	Exclude []string `yaml:"exclude" json:"exclude,omitempty"`

	// Overrides of the global keys of the same names for this spec; nil
	// means unset (use the global value). Endpoints can override further.
	RateLimitInterval  *Duration `yaml:"rate_limit_interval" json:"rate_limit_interval,omitempty"`
	DisableRateLimiter *bool     `yaml:"disable_ratelimiter" json:"disable_ratelimiter,omitempty"`
	CacheTTL           *Duration `yaml:"cache_ttl" json:"cache_ttl,omitempty"`
	CallTimeout        *Duration `yaml:"call_timeout" json:"call_timeout,omitempty"`
	MaxResponseBytes   *ByteSize `yaml:"max_response_bytes" json:"max_response_bytes,omitempty"`

	// AllowedHosts are added to the global allowed_hosts for this spec.
	AllowedHosts           []string `yaml:"allowed_hosts" json:"allowed_hosts,omitempty"`
	BlockPrivateNetworks   *bool    `yaml:"block_private_networks" json:"block_private_networks,omitempty"`
	AllowExternalRefs      *bool    `yaml:"allow_external_refs" json:"allow_external_refs,omitempty"`
	AllowCredentialHeaders *bool    `yaml:"allow_credential_headers" json:"allow_credential_headers,omitempty"`
	AllowOverrideHeaders   *bool    `yaml:"allow_override_headers" json:"allow_override_headers,omitempty"`

	// Headers are static extra headers sent on every call to this spec's
	// own host. Values are Secrets because they often carry keys.
	Headers map[string]Secret `yaml:"headers" json:"headers,omitzero"`
	// Auth holds credentials keyed by the spec's securitySchemes names; the
	// scheme's type (and where an API key goes) comes from the spec.
	Auth map[string]Credential `yaml:"auth" json:"auth,omitempty"`
	// Endpoints override settings per endpoint, keyed by operationId or by
	// full endpoint id ("getPetById" or "petstore.getPetById").
	Endpoints map[string]Endpoint `yaml:"endpoints" json:"endpoints,omitempty"`
	// ApproveWrites overrides the global approve_writes; nil inherits.
	ApproveWrites *bool `yaml:"approve_writes" json:"approve_writes,omitempty"`
	// Approve lists endpoints (include's pattern syntax) that ask the user
	// before every call, whatever their method. Default [].
	Approve []string `yaml:"approve" json:"approve,omitempty"`

	// Mock serves the spec from a mock of its upstream, started in-process
	// on a loopback port; base_url is then ignored. Written `mock: true`, or
	// as a mapping to give the mock a quota. Default off.
	Mock Mock `yaml:"mock" json:"mock,omitzero"`
}

// Mock is a spec's in-process mock upstream. Unset fields are nil: no such
// quota.
type Mock struct {
	// On reports that the spec is served from its mock: `mock: true` or a
	// mapping. Not a key of its own.
	On bool `yaml:"-" json:"on"`
	// RequestsPerWindow admits at most this many requests in any sliding
	// Window; more get 429 with Retry-After. Positive; requires Window.
	RequestsPerWindow *int `yaml:"requests_per_window" json:"requests_per_window,omitempty"`
	// Window is the sliding window of RequestsPerWindow.
	Window *Duration `yaml:"window" json:"window,omitempty"`
	// Cooldown is the least time between two requests to one operation.
	Cooldown *Duration `yaml:"cooldown" json:"cooldown,omitempty"`
}

// UnmarshalYAML accepts true or false, or a mapping of the quota keys
// (which turns the mock on).
func (m *Mock) UnmarshalYAML(unmarshal func(any) error) error {
	var on bool
	if err := unmarshal(&on); err == nil {
		*m = Mock{On: on}
		return nil
	}
	type mockFields Mock // no methods: no recursion
	var f mockFields
	// The callback form, unlike yaml.Node.Decode, keeps KnownFields.
	if err := unmarshal(&f); err != nil {
		return err
	}
	*m = Mock(f)
	m.On = true
	return nil
}

// Endpoint overrides settings for one endpoint; nil fields fall back to the
// spec, then to the global value.
type Endpoint struct {
	RateLimitInterval  *Duration `yaml:"rate_limit_interval" json:"rate_limit_interval,omitempty"`
	DisableRateLimiter *bool     `yaml:"disable_ratelimiter" json:"disable_ratelimiter,omitempty"`
	CacheTTL           *Duration `yaml:"cache_ttl" json:"cache_ttl,omitempty"`
	CallTimeout        *Duration `yaml:"call_timeout" json:"call_timeout,omitempty"`
	// Cost is how many units of its upstream's requests_per_window each call
	// charges (1..1000), for an API that charges some endpoints more.
	// Default: the operation's x-ratelimit-cost, else 1.
	Cost *int `yaml:"cost" json:"cost,omitempty"`
	// ApproveWrites overrides the spec's approve_writes; nil inherits.
	ApproveWrites *bool `yaml:"approve_writes" json:"approve_writes,omitempty"`
}

// Credential is what one security scheme needs. Which fields apply depends
// on the scheme's type in the spec: apiKey uses Value; http bearer Token;
// http basic Username and Password; oauth2 client credentials ClientID,
// ClientSecret and optionally TokenURL and Scopes, or Token, an access
// token issued beforehand (sent as a bearer token). A secret field with a
// *_file sibling may come from that file instead (read at load, trimmed;
// a relative path is relative to the config file); setting both is an error.
type Credential struct {
	Value            Secret   `yaml:"value" json:"value,omitzero"`
	ValueFile        string   `yaml:"value_file" json:"value_file,omitempty"`
	Token            Secret   `yaml:"token" json:"token,omitzero"`
	TokenFile        string   `yaml:"token_file" json:"token_file,omitempty"`
	Username         Secret   `yaml:"username" json:"username,omitzero"`
	Password         Secret   `yaml:"password" json:"password,omitzero"`
	PasswordFile     string   `yaml:"password_file" json:"password_file,omitempty"`
	ClientID         Secret   `yaml:"client_id" json:"client_id,omitzero"`
	ClientSecret     Secret   `yaml:"client_secret" json:"client_secret,omitzero"`
	ClientSecretFile string   `yaml:"client_secret_file" json:"client_secret_file,omitempty"`
	TokenURL         string   `yaml:"token_url" json:"token_url,omitempty"`
	Scopes           []string `yaml:"scopes" json:"scopes,omitempty"`
	// ByPrincipal holds credentials per inbound principal; the fields above
	// are then the default for everyone else. Default none.
	ByPrincipal []PrincipalCredential `yaml:"by_principal" json:"by_principal,omitempty"`
}

// PrincipalCredential is one principal's credential for a scheme. It
// matches a principal whose subject and org are both equal (an entry
// without org matches principals without one).
type PrincipalCredential struct {
	Subject      string `yaml:"subject" json:"subject"`
	Org          string `yaml:"org" json:"org,omitempty"`
	Value        Secret `yaml:"value" json:"value,omitzero"`
	Token        Secret `yaml:"token" json:"token,omitzero"`
	Username     Secret `yaml:"username" json:"username,omitzero"`
	Password     Secret `yaml:"password" json:"password,omitzero"`
	ClientID     Secret `yaml:"client_id" json:"client_id,omitzero"`
	ClientSecret Secret `yaml:"client_secret" json:"client_secret,omitzero"`
}

// Secrets returns the entry's secret fields, set or not.
func (c PrincipalCredential) Secrets() []Secret {
	return []Secret{c.Value, c.Token, c.Username, c.Password, c.ClientID, c.ClientSecret}
}

// Secrets returns the credential's secret fields, set or not.
func (c Credential) Secrets() []Secret {
	return []Secret{c.Value, c.Token, c.Username, c.Password, c.ClientID, c.ClientSecret}
}

// Upstream is a budget for every call to one upstream. Each dimension is
// off while zero. Entries decoded from YAML start from the defaults noted.
type Upstream struct {
	// Match names the upstream: a group name that specs join with
	// `upstream:`, a host:port, or a bare host (all its ports). An http(s)
	// URL is read as its host (with its port when written). A match no
	// spec's upstream uses is an error once the specs load. Required.
	Match string `yaml:"match" json:"match"`
	// RequestsPerWindow admits at most this many calls in any rolling Window.
	RequestsPerWindow int `yaml:"requests_per_window" json:"requests_per_window"`
	// Window is the rolling window of RequestsPerWindow and TokensPerWindow.
	// Required when either is set.
	Window Duration `yaml:"window" json:"window"`
	// WindowPad widens the window against network jitter. Default 250ms.
	WindowPad Duration `yaml:"window_pad" json:"window_pad"`
	// TokensPerWindow bounds request plus response size, in tokens.
	TokensPerWindow int `yaml:"tokens_per_window" json:"tokens_per_window"`
	// MinInterval paces calls to the upstream.
	MinInterval Duration `yaml:"min_interval" json:"min_interval"`
	// MaxConcurrent bounds calls in flight: a number, "auto" (adaptive, AIMD)
	// or {min, max} (adaptive within bounds).
	MaxConcurrent Concurrency `yaml:"max_concurrent" json:"max_concurrent"`
	// OnLimit is wait (queue the call) or reject (answer rate_limit at once).
	// Default wait.
	OnLimit OnLimit `yaml:"on_limit" json:"on_limit"`
	// QueueDepth bounds calls waiting; more are refused with queue_full.
	// Default 16; must be positive with on_limit wait.
	QueueDepth int `yaml:"queue_depth" json:"queue_depth"`
	// QueueTimeout bounds one call's wait; past it, queue_timeout. Default
	// 20s, inside http.shutdown_timeout's default.
	QueueTimeout Duration `yaml:"queue_timeout" json:"queue_timeout"`
	// Weights weighs principals (by subject) in the wait queue, which serves
	// the principals waiting in turn: one of weight 2 is served twice for each
	// call of one of weight 1. Unnamed principals weigh 1.
	Weights map[string]float64 `yaml:"weights" json:"weights,omitempty"`
	// Enforce false makes the budget a shadow: requests_per_window,
	// min_interval and max_concurrent are counted and the calls they would
	// have held are reported (rate_limit_status, /metrics), refusing nothing.
	// Default true.
	Enforce *bool `yaml:"enforce" json:"enforce,omitempty"`
	// Classes are sub-budgets for the calls their match selects (the
	// curation syntax: "POST /**", "GET /search/**", "tag:NAME", or an
	// operationId glob): a call pays the upstream's budget and every class
	// it matches, so writes can be paced apart from reads.
	Classes []Class `yaml:"classes" json:"classes,omitempty"`
	// CountNotModified false gives back the request a 304 Not Modified
	// answered, for an upstream that does not count those against its
	// limit (GitHub). Default true. With a shared store a 304 still counts.
	CountNotModified *bool `yaml:"count_not_modified" json:"count_not_modified,omitempty"`
	// PerPrincipal bounds what any one principal (token or JWT subject) takes
	// of the budget: at most requests_per_window calls in the upstream's
	// window, shared across replicas through the store. Default off.
	PerPrincipal PerPrincipal `yaml:"per_principal" json:"per_principal,omitzero"`
}

// PerPrincipal is one principal's share of an upstream's budget.
type PerPrincipal struct {
	RequestsPerWindow int `yaml:"requests_per_window" json:"requests_per_window"`
}

// Class is a sub-budget of an upstream. Its queue is the upstream's
// queue_depth and queue_timeout; on_limit defaults to the upstream's.
type Class struct {
	Match             string      `yaml:"match" json:"match"`
	RequestsPerWindow int         `yaml:"requests_per_window" json:"requests_per_window,omitempty"`
	Window            Duration    `yaml:"window" json:"window,omitempty"`
	MinInterval       Duration    `yaml:"min_interval" json:"min_interval,omitempty"`
	MaxConcurrent     Concurrency `yaml:"max_concurrent" json:"max_concurrent,omitzero"`
	OnLimit           OnLimit     `yaml:"on_limit" json:"on_limit,omitempty"`
}

// Enforced reports whether the budget refuses and queues calls (enforce,
// default true), rather than only counting them as a shadow.
func (u *Upstream) Enforced() bool { return u.Enforce == nil || *u.Enforce }

// UnmarshalYAML starts each budget from its defaults, so omitted keys get
// them and a key written as 0 stays 0 (and Validate can call it out).
func (u *Upstream) UnmarshalYAML(unmarshal func(any) error) error {
	type upstreamFields Upstream // no methods: no recursion
	p := upstreamFields(defaultUpstream())
	// The callback form, unlike yaml.Node.Decode, keeps KnownFields.
	if err := unmarshal(&p); err != nil {
		return err
	}
	*u = Upstream(p)
	return nil
}

func defaultUpstream() Upstream {
	return Upstream{
		WindowPad:    Duration(250 * time.Millisecond),
		OnLimit:      OnLimitWait,
		QueueDepth:   16,
		QueueTimeout: Duration(20 * time.Second),
	}
}

// HTTP configures serving MCP over streamable HTTP.
type HTTP struct {
	// Listen is the address `serve --http` binds when the flag gives none.
	// Default 127.0.0.1:8080. Not loopback requires http.auth.
	Listen string `yaml:"listen" json:"listen"`
	// TrustedProxies are CIDRs (or single IPs) whose X-Forwarded-For is
	// believed when finding the client IP. Default none.
	TrustedProxies []string `yaml:"trusted_proxies" json:"trusted_proxies"`
	// AllowedOrigins are Origin values accepted besides loopback origins,
	// against DNS rebinding; "*" turns the check off. Default none.
	AllowedOrigins []string `yaml:"allowed_origins" json:"allowed_origins"`
	// MaxBodyBytes caps one inbound request body. Default 4MiB.
	MaxBodyBytes ByteSize `yaml:"max_body_bytes" json:"max_body_bytes"`
	// ShutdownTimeout bounds finishing in-flight calls on SIGTERM. Default
	// 25s, inside Kubernetes' default 30s grace period.
	ShutdownTimeout Duration `yaml:"shutdown_timeout" json:"shutdown_timeout"`
	// BodyTimeout bounds reading one request body, so a client that
	// trickles its body cannot hold a connection open. Default 30s.
	BodyTimeout Duration `yaml:"body_timeout" json:"body_timeout"`
	// IdleTimeout closes a kept-alive connection idle this long. Default 2m.
	IdleTimeout Duration `yaml:"idle_timeout" json:"idle_timeout"`
	// MaxConnsPerIP caps the open connections from one client address
	// (trusted proxies excepted); more are closed at once. Default 64; 0: no cap.
	MaxConnsPerIP int `yaml:"max_conns_per_ip" json:"max_conns_per_ip"`
	// Sessions serves 2025-era clients (the initialize handshake) in
	// sessions, so approve_writes can ask them by elicitation over HTTP. A
	// session lives in one replica: several need sticky routing on
	// Mcp-Session-Id. Default false: stateless, any replica answers any
	// request.
	Sessions bool `yaml:"sessions" json:"sessions"`
	// Auth is inbound authentication; with neither tokens nor JWT, none.
	Auth HTTPAuth `yaml:"auth" json:"auth"`
	// MetricsToken, when set, is the bearer token /metrics requires.
	// Default "" (/metrics open, as /healthz is).
	MetricsToken Secret `yaml:"metrics_token" json:"metrics_token,omitzero"`
	// Inbound are per-principal limits.
	Inbound Inbound `yaml:"inbound" json:"inbound"`
}

// HTTPAuth is inbound authentication. A request passes with any configured
// static token or a valid JWT.
type HTTPAuth struct {
	// Resource is this server's canonical /mcp URL: the RFC 9728
	// `resource` of its metadata and the audience JWTs must carry. Default
	// "": taken from each request's Host (fine on loopback; set it behind
	// a proxy or with JWTs).
	Resource string `yaml:"resource" json:"resource"`
	// AuthorizationServers are the issuers the metadata names. Default:
	// [jwt.issuer] when JWTs are on.
	AuthorizationServers []string `yaml:"authorization_servers" json:"authorization_servers"`
	// Scopes names the scopes that gate tools; off while all are empty.
	Scopes Scopes `yaml:"scopes" json:"scopes"`
	// Tokens are static bearer tokens, each mapped to a principal.
	Tokens []Token `yaml:"tokens" json:"tokens"`
	// JWT verifies bearer JWTs; off while issuer and jwks are empty.
	JWT JWT `yaml:"jwt" json:"jwt"`
}

// Scopes are the names of the three scopes specgate checks. Read covers
// search, inspect, status, stored answers, tasks and GET/HEAD invokes;
// Invoke covers those and every other invoke; Admin covers set_rate_limit.
type Scopes struct {
	Read   string `yaml:"read" json:"read"`
	Invoke string `yaml:"invoke" json:"invoke"`
	Admin  string `yaml:"admin" json:"admin"`
}

// Enabled reports whether any scope is named.
func (s Scopes) Enabled() bool { return s.Read != "" || s.Invoke != "" || s.Admin != "" }

// Token is one static inbound bearer token and the principal it stands for.
// An entry whose token expanded to empty (an unset variable) never matches.
type Token struct {
	Token     Secret `yaml:"token" json:"token"`
	TokenFile string `yaml:"token_file" json:"token_file,omitempty"`
	// Subject names the principal; budgets key on subject and org, not on
	// the token, so a rotated token keeps its budget. Required.
	Subject string `yaml:"subject" json:"subject"`
	// Org is the principal's organisation. Default "".
	Org string `yaml:"org" json:"org"`
	// Scopes the token carries, checked when http.auth.scopes is set.
	// Default none.
	Scopes []string `yaml:"scopes" json:"scopes"`
}

// JWT configures verification of inbound JWTs (signature, issuer, audience,
// expiry).
type JWT struct {
	// Issuer is the required iss, exactly. Setting it turns JWTs on; the
	// JWKS is then found through the issuer's metadata
	// (/.well-known/oauth-authorization-server, then openid-configuration).
	// Default "" (JWT off).
	Issuer string `yaml:"issuer" json:"issuer"`
	// JWKS is the JWKS https URL, skipping discovery. Default "".
	JWKS string `yaml:"jwks" json:"jwks"`
	// Audience must be one of the token's aud. Default: http.auth.resource.
	Audience string `yaml:"audience" json:"audience"`
	// SubjectClaim names the principal. Default "sub".
	SubjectClaim string `yaml:"subject_claim" json:"subject_claim"`
	// OrgClaim names the principal's organisation. Default "org".
	OrgClaim string `yaml:"org_claim" json:"org_claim"`
}

// Inbound are per-principal limits for HTTP serving; a count of 0 turns that
// limit off.
type Inbound struct {
	// RequestsPerWindow counts every MCP request; over it, HTTP 429.
	// Default 600.
	RequestsPerWindow int `yaml:"requests_per_window" json:"requests_per_window"`
	// ToolCallsPerWindow counts tools/call; over it, a rate_limit tool
	// error the model can read. Default 300.
	ToolCallsPerWindow int `yaml:"tool_calls_per_window" json:"tool_calls_per_window"`
	// Window is the rolling window of the counts above. Default 1m.
	Window Duration `yaml:"window" json:"window"`
	// FailedAuthPerWindow counts failed verifications per client IP (IPv6
	// by /64); past it, that IP's failing attempts get 429. Default 10.
	FailedAuthPerWindow int `yaml:"failed_auth_per_window" json:"failed_auth_per_window"`
	// MaxTracked bounds the principals and client IPs tracked at once; when
	// full, new ones are refused rather than evicting active ones.
	// Default 10000.
	MaxTracked int `yaml:"max_tracked" json:"max_tracked"`
}

// Search tunes endpoint search.
type Search struct {
	// Embeddings, when set, adds a vector ranking from an embeddings model
	// to the lexical one. Off (nil) by default.
	Embeddings *Embeddings `yaml:"embeddings" json:"embeddings,omitempty"`
}

// Defaults of search.embeddings, applied when the section is present.
const (
	DefaultEmbeddingsBatch   = 64
	DefaultEmbeddingsTimeout = 2 * time.Second
)

// Embeddings names an OpenAI-compatible embeddings endpoint: a POST of
// {model, input: [...]} answered with {data: [{index, embedding}]}. Only
// spec text and search queries are sent to it.
type Embeddings struct {
	// URL is the endpoint, e.g. http://127.0.0.1:11434/v1/embeddings.
	// Required.
	URL string `yaml:"url" json:"url"`
	// Model is the model name sent with every request. Required.
	Model string `yaml:"model" json:"model"`
	// APIKey is sent as a bearer token when set.
	APIKey Secret `yaml:"api_key" json:"api_key,omitzero"`
	// APIKeyFile reads APIKey from a file.
	APIKeyFile string `yaml:"api_key_file" json:"api_key_file,omitempty"`
	// BatchSize is how many endpoint texts one request embeds. Default 64;
	// 1 to 2048.
	BatchSize int `yaml:"batch_size" json:"batch_size"`
	// Timeout bounds one request; a query whose vector does not come within
	// it is answered lexically. Default 2s.
	Timeout Duration `yaml:"timeout" json:"timeout"`
	// Weight is the vector side's share in the fused score, against the
	// lexical side's 1 (both scaled to [0, 1] over the candidates), halved
	// per query where its words name the best lexical hits and rising to 2
	// where they name nothing; 0 keeps the vectors and ranks lexically.
	// Default 0.25; 0 to 10.
	Weight *float64 `yaml:"weight" json:"weight,omitempty"`
}

// Store says where cooldowns, budgets and learned limits live.
type Store struct {
	// Backend is memory (this process), redis (shared by replicas) or
	// redis_cluster (shared through a Redis Cluster). Default memory.
	Backend Backend `yaml:"backend" json:"backend"`
	// RedisURL is the Redis to use with backend redis; a Secret because it
	// may carry a password. Default redis://127.0.0.1:6379/0. With
	// redis_cluster, go-redis's cluster form naming seed nodes:
	// redis://host1:port?addr=host2:port&addr=host3:port.
	RedisURL Secret `yaml:"redis_url" json:"redis_url"`
	// KeyPrefix starts every Redis key. Default "specgate:".
	KeyPrefix string `yaml:"key_prefix" json:"key_prefix"`
	// FallbackShare is the share of each budget one replica uses while Redis
	// is unreachable (cooldowns stretch by its inverse). In (0, 1]. Default
	// 0.34, so three replicas stay within a budget.
	FallbackShare float64 `yaml:"fallback_share" json:"fallback_share"`
	// Timeout bounds one call to Redis. Past it, Redis is pinged with a
	// longer deadline: while it answers the call is held (slow, not down),
	// and only when it does not does the replica run on the fallback share
	// until a probe answers. Default 250ms, at most 3s.
	Timeout Duration `yaml:"timeout" json:"timeout"`
}

// Scripts bound run_script programs.
type Scripts struct {
	// AllowWrites lets scripts call operations other than GET, HEAD and
	// OPTIONS. Default false.
	AllowWrites bool `yaml:"allow_writes" json:"allow_writes"`
	// Timeout is a run's whole deadline, the background included, and the
	// most a caller's timeoutSeconds may ask. Default 10m, at most 1h.
	Timeout Duration `yaml:"timeout" json:"timeout"`
	// AnswerWithin is how long run_script waits for a run to end before it
	// answers {runId, status: running, progress} and the run goes on, to
	// be collected with script_result. 0: answer at the end, however long.
	// Default 20s.
	AnswerWithin Duration `yaml:"answer_within" json:"answer_within"`
	// MaxCalls bounds api calls per run. Default 200.
	MaxCalls int `yaml:"max_calls" json:"max_calls"`
	// MaxConcurrent bounds a run's calls in flight. Default 4.
	MaxConcurrent int `yaml:"max_concurrent" json:"max_concurrent"`
	// PerPrincipal bounds runs at once per principal. Default 2.
	PerPrincipal int `yaml:"per_principal" json:"per_principal"`
	// MaxMemory bounds a run's memory. Default 64MiB.
	MaxMemory ByteSize `yaml:"max_memory" json:"max_memory"`
}

// Default returns a Config holding every default and no specs.
func Default() *Config {
	return &Config{
		RateLimitInterval:  Duration(10 * time.Second),
		MaxRetries:         2,
		MaxRetryWait:       Duration(30 * time.Second),
		CallTimeout:        Duration(30 * time.Second),
		MaxResponseBytes:   8 << 20,
		ResultBytes:        16 << 10,
		ResponseStoreBytes: 64 << 20,
		ResponseTTL:        Duration(15 * time.Minute),
		JQTimeout:          Duration(time.Second),
		Scripts: Scripts{Timeout: Duration(10 * time.Minute), AnswerWithin: Duration(20 * time.Second), MaxCalls: 200, MaxConcurrent: 4, PerPrincipal: 2,
			MaxMemory: 64 << 20},
		Approvals:        Approvals{TTL: Duration(DefaultApprovalTTL), Channel: ChannelAuto},
		SpecFetchTimeout: Duration(30 * time.Second),
		MaxSpecBytes:     64 << 20,
		HTTP: HTTP{
			Listen:          "127.0.0.1:8080",
			MaxBodyBytes:    4 << 20,
			ShutdownTimeout: Duration(25 * time.Second),
			BodyTimeout:     Duration(30 * time.Second),
			IdleTimeout:     Duration(2 * time.Minute),
			MaxConnsPerIP:   64,
			Auth: HTTPAuth{JWT: JWT{
				SubjectClaim: "sub",
				OrgClaim:     "org",
			}},
			Inbound: Inbound{
				RequestsPerWindow:   600,
				ToolCallsPerWindow:  300,
				Window:              Duration(time.Minute),
				FailedAuthPerWindow: 10,
				MaxTracked:          10000,
			},
		},
		Store: Store{
			Backend:       BackendMemory,
			RedisURL:      NewSecret("redis://127.0.0.1:6379/0"),
			KeyPrefix:     "specgate:",
			FallbackShare: 0.34,
			Timeout:       Duration(250 * time.Millisecond),
		},
	}
}

// Bounds of a spec's include and exclude lists: every endpoint is matched
// against every pattern, and a real list names a few dozen.
const (
	MaxPatterns     = 1000
	MaxPatternBytes = 512
)
