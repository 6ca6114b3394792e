package config

import (
	"net/url"
	"strings"
)

// matchFromURL turns a URL written as an upstreams match
// ("https://petstore3.swagger.io/api/v3", the natural way to write it) into
// the host it names, with its port when the URL writes one: budgets key on
// host and port, and a URL as written matched no call at all. Anything
// else is returned as it is.
func matchFromURL(m string) string {
	if !strings.Contains(m, "://") {
		return m
	}
	u, err := url.Parse(strings.TrimSpace(m))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return m // Validate says why
	}
	return strings.ToLower(u.Host)
}
