package config

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// EndpointSettings is what applies to one endpoint after falling back from
// the endpoint's override to the spec's, then to the global value.
type EndpointSettings struct {
	RateLimitInterval  time.Duration
	DisableRateLimiter bool
	CacheTTL           time.Duration
	CallTimeout        time.Duration
}

// SpecSettings is what applies to every call to one spec after falling back
// from the spec's override to the global value.
type SpecSettings struct {
	// EndpointSettings are the spec-level values, for endpoints without an
	// override of their own.
	EndpointSettings
	MaxResponseBytes int64
	// AllowedHosts are the global allowed_hosts followed by the spec's own.
	AllowedHosts           []string
	BlockPrivateNetworks   bool
	AllowExternalRefs      bool
	AllowCredentialHeaders bool
	AllowOverrideHeaders   bool
	// ReadOnly serves only GET, HEAD and OPTIONS endpoints of the spec.
	ReadOnly bool
}

// ForSpec resolves the settings of spec s; a nil s gives the global values
// (for a spec given on the command line without a config entry, say).
func (c *Config) ForSpec(s *Spec) SpecSettings {
	out := SpecSettings{
		EndpointSettings: EndpointSettings{
			RateLimitInterval:  time.Duration(c.RateLimitInterval),
			DisableRateLimiter: c.DisableRateLimiter,
			CacheTTL:           time.Duration(c.CacheTTL),
			CallTimeout:        time.Duration(c.CallTimeout),
		},
		MaxResponseBytes:       int64(c.MaxResponseBytes),
		AllowedHosts:           slices.Clone(c.AllowedHosts),
		AllowExternalRefs:      c.AllowExternalRefs,
		AllowCredentialHeaders: c.AllowCredentialHeaders,
		AllowOverrideHeaders:   c.AllowOverrideHeaders,
		ReadOnly:               c.ReadOnly,
	}
	if c.BlockPrivateNetworks != nil {
		out.BlockPrivateNetworks = *c.BlockPrivateNetworks
	}
	if s == nil {
		return out
	}
	if c.BlockPrivateNetworks == nil {
		out.BlockPrivateNetworks = s.IsURL()
	}
	out.EndpointSettings = out.EndpointSettings.apply(s.RateLimitInterval, s.DisableRateLimiter, s.CacheTTL, s.CallTimeout)
	if s.MaxResponseBytes != nil {
		out.MaxResponseBytes = int64(*s.MaxResponseBytes)
	}
	out.AllowedHosts = append(out.AllowedHosts, s.AllowedHosts...)
	setBool(&out.BlockPrivateNetworks, s.BlockPrivateNetworks)
	setBool(&out.AllowExternalRefs, s.AllowExternalRefs)
	setBool(&out.AllowCredentialHeaders, s.AllowCredentialHeaders)
	setBool(&out.AllowOverrideHeaders, s.AllowOverrideHeaders)
	setBool(&out.ReadOnly, s.ReadOnly)
	return out
}

// ForEndpoint resolves the settings of one endpoint of spec s (nil for no
// config entry), given its full endpoint id ("petstore.getPetById") and its
// operationId ("" when the operation has none). See Spec.Override for how
// the endpoints map is matched.
func (c *Config) ForEndpoint(s *Spec, endpointID, operationID string) EndpointSettings {
	out := c.ForSpec(s).EndpointSettings
	if s == nil {
		return out
	}
	if _, e, ok := s.Override(endpointID, operationID); ok {
		out = out.apply(e.RateLimitInterval, e.DisableRateLimiter, e.CacheTTL, e.CallTimeout)
	}
	return out
}

func (es EndpointSettings) apply(interval *Duration, disable *bool, ttl, timeout *Duration) EndpointSettings {
	if interval != nil {
		es.RateLimitInterval = time.Duration(*interval)
	}
	setBool(&es.DisableRateLimiter, disable)
	if ttl != nil {
		es.CacheTTL = time.Duration(*ttl)
	}
	if timeout != nil {
		es.CallTimeout = time.Duration(*timeout)
	}
	return es
}

func setBool(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}

// Override finds the endpoints entry for one endpoint of s and the key it
// was found under. Keys are tried in this order: the full endpoint id
// ("petstore.getPetById"), the operationId ("getPetById"), then the id
// without its "<spec>." prefix (which is how an operation without an
// operationId is named: "get_api_v3_ticker_price"). Spec names hold no dots,
// so the prefix ends at the first one.
func (s *Spec) Override(endpointID, operationID string) (key string, e Endpoint, ok bool) {
	if s == nil || len(s.Endpoints) == 0 {
		return "", Endpoint{}, false
	}
	candidates := []string{endpointID, operationID}
	if _, local, found := strings.Cut(endpointID, "."); found {
		candidates = append(candidates, local)
	}
	for _, k := range candidates {
		if k == "" {
			continue
		}
		if e, ok := s.Endpoints[k]; ok {
			return k, e, true
		}
	}
	return "", Endpoint{}, false
}

// EndpointName identifies one endpoint of a loaded spec, for
// UnknownEndpointKeys.
type EndpointName struct {
	ID          string // full endpoint id, "petstore.getPetById"
	OperationID string // "" when the operation has none
}

// UnknownEndpointKeys returns, sorted, the keys of s.Endpoints that match
// none of the given endpoints: misspelt overrides that would otherwise be
// silently ignored. Call it once the spec is loaded and warn about each.
func (s *Spec) UnknownEndpointKeys(endpoints []EndpointName) []string {
	used := map[string]bool{}
	for _, ep := range endpoints {
		if k, _, ok := s.Override(ep.ID, ep.OperationID); ok {
			used[k] = true
		}
	}
	var out []string
	for k := range s.Endpoints {
		if !used[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// IsURL reports whether the spec is fetched over http(s) rather than read
// from a file.
func (s *Spec) IsURL() bool { return isURL(s.Location) }

// UpstreamKey is the key s's calls are budgeted under: the named group the
// spec joins, else hostport, the request URL's host:port (with the default
// port filled in, "api.github.com:443").
func (s *Spec) UpstreamKey(hostport string) string {
	if s != nil && s.Upstream != "" {
		return s.Upstream
	}
	return hostport
}

// SpecByName returns the spec entry with that name, or nil.
func (c *Config) SpecByName(name string) *Spec {
	for i := range c.Specs {
		if c.Specs[i].Name == name {
			return &c.Specs[i]
		}
	}
	return nil
}

// Budget returns the upstreams entry for an upstream key (see
// Spec.UpstreamKey), or nil when none applies. An entry matching the key
// exactly (a group name or a host:port) wins over one naming the bare host,
// which covers all its ports. Hosts match case-insensitively.
func (c *Config) Budget(key string) *Upstream {
	for i := range c.Upstreams {
		if strings.EqualFold(c.Upstreams[i].Match, key) {
			return &c.Upstreams[i]
		}
	}
	host, _, err := net.SplitHostPort(key)
	if err != nil {
		return nil
	}
	for i := range c.Upstreams {
		if strings.EqualFold(c.Upstreams[i].Match, host) {
			return &c.Upstreams[i]
		}
	}
	return nil
}

// AuthEnabled reports whether inbound requests must authenticate: some
// static token or a JWT verifier is configured.
func (h *HTTP) AuthEnabled() bool {
	return len(h.Auth.Tokens) > 0 || h.Auth.JWT.JWKS != "" || h.Auth.JWT.Issuer != ""
}

// TrustedProxyPrefixes parses TrustedProxies; a single IP becomes a one-
// address prefix. Entries that do not parse are skipped (Validate reports
// them).
func (h *HTTP) TrustedProxyPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range h.TrustedProxies {
		if p, ok := parsePrefix(s); ok {
			out = append(out, p)
		}
	}
	return out
}

func parsePrefix(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}
