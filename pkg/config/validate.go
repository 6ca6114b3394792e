package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Validate reports every problem in c at once as an *Error, or returns nil.
// It does no I/O: files and URLs are checked when they are used. Call it
// after applying command-line flags.
func (c *Config) Validate() error {
	v := &validator{}
	v.nonNegative("rate_limit_interval", c.RateLimitInterval)
	v.nonNegative("cache_ttl", c.CacheTTL)
	if c.MaxRetries < 0 {
		v.addf("max_retries", "must not be negative (got %d)", c.MaxRetries)
	}
	v.nonNegative("max_retry_wait", c.MaxRetryWait)
	if c.Proxy != "" && c.Proxy != "none" {
		if _, err := ProxyURL(c.Proxy); err != nil {
			v.add("proxy", err.Error())
		}
	}
	if c.OTLPEndpoint != "" {
		if u, err := url.Parse(c.OTLPEndpoint); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			v.add("otlp_endpoint", `must be an http:// or https:// URL with a host (like "http://127.0.0.1:4318"), the OTLP/HTTP receiver's base`)
		}
	}
	v.positive("call_timeout", c.CallTimeout)
	v.positiveSize("max_response_bytes", c.MaxResponseBytes)
	if c.ResultBytes < 1<<10 || c.ResultBytes > 1<<20 {
		v.add("result_bytes", "must be from 1KiB to 1MiB")
	}
	v.positiveSize("response_store_bytes", c.ResponseStoreBytes)
	v.positive("response_ttl", c.ResponseTTL)
	v.positive("jq_timeout", c.JQTimeout)
	v.positive("scripts.timeout", c.Scripts.Timeout)
	if c.Scripts.Timeout > Duration(3600*1e9) {
		v.add("scripts.timeout", "may be at most 1h")
	}
	if c.Scripts.AnswerWithin < 0 || c.Scripts.AnswerWithin > Duration(60*1e9) {
		v.add("scripts.answer_within", "must be from 0s (answer at the end) to 1m: MCP clients give a tool call about 60s")
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"scripts.max_calls", c.Scripts.MaxCalls}, {"scripts.max_concurrent", c.Scripts.MaxConcurrent}, {"scripts.per_principal", c.Scripts.PerPrincipal}} {
		if n.v < 1 || n.v > maxCount {
			v.addf(n.key, "must be from 1 to %d (got %d)", maxCount, n.v)
		}
	}
	if c.Scripts.MaxMemory < 8<<20 {
		v.add("scripts.max_memory", "must be at least 8MiB")
	}
	v.approvals(c.Approvals)
	v.positive("spec_fetch_timeout", c.SpecFetchTimeout)
	v.positiveSize("max_spec_bytes", c.MaxSpecBytes)
	v.hosts("allowed_hosts", c.AllowedHosts)

	names := map[string]string{}
	for i := range c.Specs {
		v.spec(specKey(i, &c.Specs[i]), &c.Specs[i], names)
	}

	matches := map[string]string{}
	for i := range c.Upstreams {
		u := &c.Upstreams[i]
		key := fmt.Sprintf("upstreams[%d]", i)
		if u.Match == "" {
			v.add(key+".match", "is required: a host, host:port or group name")
		} else {
			key = "upstreams[" + u.Match + "]"
			if strings.ContainsAny(u.Match, "/?#") {
				v.add(key+".match", "is not a host, host:port or group name (an http(s) URL is taken as its host)")
			}
			if prev, dup := matches[strings.ToLower(u.Match)]; dup {
				v.addf(key+".match", "%q is already matched by %s", u.Match, prev)
			}
			matches[strings.ToLower(u.Match)] = key
		}
		v.upstream(key, u)
	}

	v.http(&c.HTTP)
	v.store(&c.Store)
	v.embeddings(c.Search.Embeddings)

	if len(v.problems) == 0 {
		return nil
	}
	return &Error{File: c.Source, Problems: v.problems}
}

type validator struct{ problems []string }

func (v *validator) add(key, msg string) { v.problems = append(v.problems, key+": "+msg) }

func (v *validator) addf(key, format string, args ...any) { v.add(key, fmt.Sprintf(format, args...)) }

func (v *validator) nonNegative(key string, d Duration) {
	if d < 0 {
		v.addf(key, "must not be negative (got %s)", d)
	}
}

func (v *validator) positive(key string, d Duration) {
	if d <= 0 {
		v.addf(key, "must be positive (got %s)", d)
	}
}

func (v *validator) positiveSize(key string, b ByteSize) {
	if b <= 0 {
		v.addf(key, "must be positive (got %d)", int64(b))
	}
}

// maxCount is the largest count per window the limiter keeps (it keeps one
// timestamp per admission to hold the window exactly).
const maxCount = 1 << 20

func (v *validator) count(key string, n int) {
	if n < 0 {
		v.addf(key, "must not be negative (got %d); 0 turns it off", n)
	}
	if n > maxCount {
		v.addf(key, "must be at most %d (got %d)", maxCount, n)
	}
}

var specName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func specKey(i int, s *Spec) string {
	if s.Name != "" {
		return "specs[" + s.Name + "]"
	}
	return fmt.Sprintf("specs[%d]", i)
}

func (v *validator) spec(key string, s *Spec, names map[string]string) {
	if s.Name != "" {
		if !specName.MatchString(s.Name) {
			v.addf(key+".name", "%q: use letters, digits, '-' and '_' (it starts every endpoint id, before a '.')", s.Name)
		}
		if prev, dup := names[s.Name]; dup {
			v.addf(key+".name", "%q is already used by %s", s.Name, prev)
		}
		names[s.Name] = key
	}
	if s.Location == "" {
		v.add(key+".location", "is required: a file path or an http(s) URL")
	}
	if s.BaseURL != "" {
		v.httpURL(key+".base_url", s.BaseURL)
	}
	if s.RateLimitInterval != nil {
		v.nonNegative(key+".rate_limit_interval", *s.RateLimitInterval)
	}
	if s.CacheTTL != nil {
		v.nonNegative(key+".cache_ttl", *s.CacheTTL)
	}
	if s.CallTimeout != nil {
		v.positive(key+".call_timeout", *s.CallTimeout)
	}
	if s.MaxResponseBytes != nil {
		v.positiveSize(key+".max_response_bytes", *s.MaxResponseBytes)
	}
	v.hosts(key+".allowed_hosts", s.AllowedHosts)
	// The pattern syntax is checked where patterns compile (spec.NewFilter);
	// an empty one is plainly a mistake.
	for j, patterns := range [][]string{s.Include, s.Exclude} {
		list := [...]string{"include", "exclude"}[j]
		if len(patterns) > MaxPatterns {
			v.addf(key+"."+list, "has %d patterns; at most %d are allowed (select by tag: or a path glob instead)", len(patterns), MaxPatterns)
			continue
		}
		for i, p := range patterns {
			if len(p) > MaxPatternBytes {
				v.addf(fmt.Sprintf("%s.%s[%d]", key, list, i), "is %d bytes long; a pattern may have at most %d", len(p), MaxPatternBytes)
				continue
			}
			if strings.TrimSpace(p) == "" {
				v.addf(fmt.Sprintf("%s.%s[%d]", key, list, i), "is empty: write an operationId glob, tag:NAME, \"METHOD /path/glob\" or \"/path/glob\"")
			}
		}
	}
	for _, name := range sortedKeys(s.Headers) {
		h := s.Headers[name]
		hk := joinKey(key+".headers", name)
		if !validHeaderName(name) {
			v.add(hk, "is not a valid header name")
		}
		// Never echo the value: it may be a key.
		if strings.ContainsAny(h.Reveal(), "\r\n") {
			v.add(hk, "value contains a line break")
		}
	}
	for _, name := range sortedKeys(s.Auth) {
		cred := s.Auth[name]
		ak := joinKey(key+".auth", name)
		v.secretPair(ak, "value", cred.Value, cred.ValueFile)
		v.secretPair(ak, "token", cred.Token, cred.TokenFile)
		v.secretPair(ak, "password", cred.Password, cred.PasswordFile)
		v.secretPair(ak, "client_secret", cred.ClientSecret, cred.ClientSecretFile)
		seen := map[[2]string]int{}
		for i, e := range cred.ByPrincipal {
			ek := fmt.Sprintf("%s.by_principal[%d]", ak, i)
			if e.Subject == "" {
				v.add(ek+".subject", "is required")
				continue
			}
			// The first entry would win: a second one for the same principal
			// is a mistake, not an alternative.
			if j, dup := seen[[2]string{e.Subject, e.Org}]; dup {
				v.addf(ek, "is for the same subject and org as by_principal[%d]", j)
			}
			seen[[2]string{e.Subject, e.Org}] = i
		}
		if cred.TokenURL != "" {
			v.httpURL(ak+".token_url", cred.TokenURL)
		}
	}
	v.mock(key+".mock", &s.Mock)
	for _, id := range sortedKeys(s.Endpoints) {
		e := s.Endpoints[id]
		ek := joinKey(key+".endpoints", id)
		if e.RateLimitInterval != nil {
			v.nonNegative(ek+".rate_limit_interval", *e.RateLimitInterval)
		}
		if e.CacheTTL != nil {
			v.nonNegative(ek+".cache_ttl", *e.CacheTTL)
		}
		if e.CallTimeout != nil {
			v.positive(ek+".call_timeout", *e.CallTimeout)
		}
		if e.Cost != nil && (*e.Cost < 1 || *e.Cost > 1000) {
			v.addf(ek+".cost", "must be 1..1000 units of the upstream's requests_per_window (got %d)", *e.Cost)
		}
	}
}

// mock checks a spec's mock quota: each dimension is off while left out, so
// a written 0 is a mistake rather than "off".
func (v *validator) mock(key string, m *Mock) {
	if !m.On {
		return
	}
	if n := m.RequestsPerWindow; n != nil {
		if *n <= 0 {
			v.addf(key+".requests_per_window", "must be positive (got %d); leave it out for no request quota", *n)
		} else if *n > maxCount {
			v.addf(key+".requests_per_window", "must be at most %d (got %d)", maxCount, *n)
		}
		if m.Window == nil {
			v.add(key+".window", `is required with requests_per_window (the sliding window, e.g. "10s")`)
		}
	}
	if w := m.Window; w != nil {
		if *w <= 0 {
			v.addf(key+".window", "must be positive (got %s)", *w)
		}
		if m.RequestsPerWindow == nil {
			v.add(key+".window", "needs requests_per_window (how many requests each window admits)")
		}
	}
	if c := m.Cooldown; c != nil && *c <= 0 {
		v.addf(key+".cooldown", "must be positive (got %s); leave it out for no cooldown", *c)
	}
}

// secretPair checks that a secret is given at most one way. A value read
// from the file itself does not count as given in the file.
func (v *validator) secretPair(key, name string, s Secret, file string) {
	if s.raw != "" && file != "" {
		v.addf(key, "set %s or %s_file, not both", name, name)
	}
}

func (v *validator) httpURL(key, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.addf(key, "%q is not an absolute http(s) URL", s)
	}
}

func (v *validator) hosts(key string, hosts []string) {
	for i, h := range hosts {
		if h == "" || strings.ContainsAny(h, "/ ") || strings.Contains(h, "://") {
			v.addf(fmt.Sprintf("%s[%d]", key, i), "%q: write a host or host:port, not a URL", h)
		}
	}
}

func (v *validator) upstream(key string, u *Upstream) {
	v.count(key+".requests_per_window", u.RequestsPerWindow)
	v.count(key+".tokens_per_window", u.TokensPerWindow)
	v.count(key+".max_concurrent", u.MaxConcurrent.Limit)
	v.count(key+".max_concurrent.min", u.MaxConcurrent.Min)
	if mc := u.MaxConcurrent; mc.Auto && mc.Limit > 0 && mc.Min > mc.Limit {
		v.addf(key+".max_concurrent", "min %d is above max %d", mc.Min, mc.Limit)
	}
	v.nonNegative(key+".window", u.Window)
	v.nonNegative(key+".window_pad", u.WindowPad)
	v.nonNegative(key+".min_interval", u.MinInterval)
	if (u.RequestsPerWindow > 0 || u.TokensPerWindow > 0) && u.Window <= 0 {
		v.add(key+".window", "must be positive when requests_per_window or tokens_per_window is set")
	}
	v.count(key+".per_principal.requests_per_window", u.PerPrincipal.RequestsPerWindow)
	if u.PerPrincipal.RequestsPerWindow > 0 && u.Window <= 0 {
		v.add(key+".window", "must be positive when per_principal is set (it counts in the upstream's window)")
	}
	for i := range u.Classes {
		c := &u.Classes[i]
		ck := fmt.Sprintf("%s.classes[%d]", key, i)
		if strings.TrimSpace(c.Match) == "" {
			v.add(ck+".match", `is required: "POST /**", "GET /search/**", "tag:NAME" or an operationId glob`)
		}
		v.count(ck+".requests_per_window", c.RequestsPerWindow)
		v.count(ck+".max_concurrent", c.MaxConcurrent.Limit)
		v.nonNegative(ck+".window", c.Window)
		v.nonNegative(ck+".min_interval", c.MinInterval)
		if c.RequestsPerWindow > 0 && c.Window <= 0 {
			v.add(ck+".window", "must be positive when requests_per_window is set")
		}
		if c.OnLimit != "" && c.OnLimit != OnLimitWait && c.OnLimit != OnLimitReject {
			v.addf(ck+".on_limit", "%q is not one of wait, reject", c.OnLimit)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(u.Weights)) {
		if w := u.Weights[p]; !(w > 0 && w <= 1000) {
			v.addf(key+".weights."+p, "must be a number above 0 and at most 1000 (got %v)", w)
		}
	}
	switch u.OnLimit {
	case OnLimitWait:
		if u.QueueDepth <= 0 {
			v.addf(key+".queue_depth", "must be positive with on_limit: wait (got %d); use on_limit: reject for no queue", u.QueueDepth)
		}
		v.positive(key+".queue_timeout", u.QueueTimeout)
	case OnLimitReject:
		v.count(key+".queue_depth", u.QueueDepth)
		v.nonNegative(key+".queue_timeout", u.QueueTimeout)
	default:
		v.addf(key+".on_limit", "%q is not one of wait, reject", u.OnLimit)
	}
}

func (v *validator) http(h *HTTP) {
	host, _, err := net.SplitHostPort(h.Listen)
	if err != nil {
		v.addf("http.listen", "%q is not host:port", h.Listen)
	} else if !isLoopback(host) && !h.AuthEnabled() {
		v.addf("http.listen", "%q is not a loopback address and http.auth has no tokens or jwt: configure auth or listen on 127.0.0.1", h.Listen)
	}
	for i, p := range h.TrustedProxies {
		if _, ok := parsePrefix(p); !ok {
			v.addf(fmt.Sprintf("http.trusted_proxies[%d]", i), "%q is not a CIDR or IP address", p)
		}
	}
	for i, o := range h.AllowedOrigins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			v.addf(fmt.Sprintf("http.allowed_origins[%d]", i), `%q is not an origin such as "https://app.example.com" (or "*")`, o)
		}
	}
	v.positiveSize("http.max_body_bytes", h.MaxBodyBytes)
	v.nonNegative("http.shutdown_timeout", h.ShutdownTimeout)
	v.positive("http.body_timeout", h.BodyTimeout)
	v.positive("http.idle_timeout", h.IdleTimeout)
	if h.MaxConnsPerIP < 0 {
		v.add("http.max_conns_per_ip", "must be 0 (no cap) or more")
	}

	tokens := map[string]int{}
	for i, t := range h.Auth.Tokens {
		key := fmt.Sprintf("http.auth.tokens[%d]", i)
		if val := t.Token.Reveal(); val != "" {
			if j, dup := tokens[val]; dup {
				v.addf(key+".token", "is the same as http.auth.tokens[%d].token", j)
			}
			tokens[val] = i
		}
		if t.Subject == "" {
			v.add(key+".subject", "is required: it names the principal budgets key on")
		}
		v.secretPair(key, "token", t.Token, t.TokenFile)
		if !t.Token.IsConfigured() && t.TokenFile == "" {
			v.add(key+".token", "is required (or token_file)")
		}
	}
	a := h.Auth
	if a.Resource != "" {
		if u, err := url.Parse(a.Resource); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
			v.addf("http.auth.resource", "%q is not this server's absolute http(s) /mcp URL", a.Resource)
		}
	}
	if sc := a.Scopes; sc.Enabled() && (sc.Read == "" || sc.Invoke == "" || sc.Admin == "") {
		// A scope left unnamed would leave its tools open to every token.
		v.add("http.auth.scopes", "name all of read, invoke and admin, or none")
	}
	for i, s := range a.AuthorizationServers {
		v.httpURL(fmt.Sprintf("http.auth.authorization_servers[%d]", i), s)
	}
	if j := a.JWT; j.JWKS != "" || j.Issuer != "" {
		if j.Issuer == "" {
			v.add("http.auth.jwt.issuer", "is required with jwks")
		} else {
			v.httpURL("http.auth.jwt.issuer", j.Issuer)
		}
		if j.JWKS != "" {
			v.httpURL("http.auth.jwt.jwks", j.JWKS)
		}
		if j.Audience == "" && a.Resource == "" {
			v.add("http.auth.resource", "is required with jwt (it is the audience tokens must carry), or set http.auth.jwt.audience")
		}
		if j.SubjectClaim == "" {
			v.add("http.auth.jwt.subject_claim", "must not be empty")
		}
	}

	in := h.Inbound
	v.count("http.inbound.requests_per_window", in.RequestsPerWindow)
	v.count("http.inbound.tool_calls_per_window", in.ToolCallsPerWindow)
	v.count("http.inbound.failed_auth_per_window", in.FailedAuthPerWindow)
	if in.RequestsPerWindow > 0 || in.ToolCallsPerWindow > 0 || in.FailedAuthPerWindow > 0 {
		v.positive("http.inbound.window", in.Window)
	} else {
		v.nonNegative("http.inbound.window", in.Window)
	}
	if in.MaxTracked <= 0 {
		v.addf("http.inbound.max_tracked", "must be positive (got %d)", in.MaxTracked)
	}
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

func (v *validator) store(s *Store) {
	switch s.Backend {
	case BackendMemory:
	case BackendRedis, BackendRedisCluster:
		u := s.RedisURL.Reveal()
		switch {
		case u == "" && len(s.RedisURL.MissingEnv()) > 0:
			v.addf("store.redis_url", "is empty: set %s", strings.Join(s.RedisURL.MissingEnv(), ", "))
		case u == "":
			v.addf("store.redis_url", "is required with backend: %s", s.Backend)
		case s.Backend == BackendRedisCluster:
			// Not echoed: the URL may carry a password.
			if !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
				v.add("store.redis_url", "must start with redis:// or rediss:// with backend: redis_cluster")
			} else if !clusterSeeds(u) {
				v.add("store.redis_url", "names no seed node: want redis://host1:port?addr=host2:port&addr=host3:port")
			}
		case !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") && !strings.HasPrefix(u, "unix://"):
			// Not echoed: the URL may carry a password.
			v.add("store.redis_url", "must start with redis://, rediss:// or unix://")
		}
	default:
		v.addf("store.backend", "%q is not one of memory, redis, redis_cluster", s.Backend)
	}
	if math.IsNaN(s.FallbackShare) || s.FallbackShare <= 0 || s.FallbackShare > 1 {
		v.addf("store.fallback_share", "must be in (0, 1] (got %v)", s.FallbackShare)
	}
	v.positive("store.timeout", s.Timeout)
	if s.Timeout > MaxStoreTimeout {
		// the connection's own read and write bound (redisstore.DefaultSocketTimeout)
		v.addf("store.timeout", "may be at most %s (got %s)", MaxStoreTimeout, s.Timeout)
	}
}

// MaxStoreTimeout bounds store.timeout: every admission may wait that long for Redis.
const MaxStoreTimeout = Duration(3 * time.Second)

func (v *validator) embeddings(e *Embeddings) {
	if e == nil {
		return
	}
	const key = "search.embeddings"
	if e.URL == "" {
		v.add(key+".url", "is required: an OpenAI-compatible /v1/embeddings endpoint")
	} else if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(key+".url", "must be an http:// or https:// URL")
	}
	if strings.TrimSpace(e.Model) == "" {
		v.add(key+".model", "is required: the embeddings model name, e.g. nomic-embed-text")
	}
	if e.BatchSize < 1 || e.BatchSize > 2048 {
		v.addf(key+".batch_size", "must be from 1 to 2048 (got %d)", e.BatchSize)
	}
	v.positive(key+".timeout", e.Timeout)
	if e.Weight != nil && (math.IsNaN(*e.Weight) || *e.Weight < 0 || *e.Weight > 10) {
		v.addf(key+".weight", "must be from 0 to 10 (got %v)", *e.Weight)
	}
	if e.APIKey.IsConfigured() && e.APIKeyFile != "" {
		v.add(key+".api_key", "and api_key_file are both set: keep one")
	}
}

// validHeaderName reports whether name is an HTTP token (RFC 9110).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// clusterSeeds reports whether a redis_cluster URL names a host in every seed: its own
// and each addr= parameter.
func clusterSeeds(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return false
	}
	for _, a := range u.Query()["addr"] {
		if h, _, err := net.SplitHostPort(a); err != nil || h == "" {
			return false
		}
	}
	return true
}

// ProxyURL parses the proxy key: an http, https or socks5 URL with a host.
func ProxyURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") {
		return nil, errors.New(`must be an http://, https:// or socks5:// URL with a host (like "http://proxy.corp:3128"), or "none"`)
	}
	return u, nil
}
