package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/mcpserver"
)

// configFix rewords a call refused for want of a base URL so that it
// names the one place to fix on this command line: --base-url when there
// is no config file, the variable when the spec's base_url refers to an
// unset one. The tool's own words name both the flag and the key, for a
// model that cannot tell which the operator used. It reports whether it
// changed e.
func (c *common) configFix(e *mcpserver.ErrorObject, endpointID string) bool {
	if e.Code != codes.Unreachable || e.Retryable || c.cfg == nil || c.noServer == nil || !c.noServer(endpointID) {
		return false
	}
	i, sc := c.specOf(endpointID)
	if sc == nil {
		return false
	}
	name := specName(*sc)
	for _, m := range c.cfg.MissingEnv {
		if m.Key == "specs["+name+"].base_url" || m.Key == "specs["+strconv.Itoa(i)+"].base_url" {
			e.Message = fmt.Sprintf("spec %s has no server to call: ${%s} is unset, and %s refers to it", name, m.Var, m.Key)
			e.Hint = fmt.Sprintf("Set %s to the API's address (export %s=https://...), or write the address in %s.", m.Var, m.Var, m.Key)
			return true
		}
	}
	if c.configPath == "" {
		e.Message = fmt.Sprintf("spec %s names no server an absolute http(s) URL reaches", name)
		e.Hint = "Give the API's address with --base-url, such as --base-url http://127.0.0.1:8000."
		return true
	}
	return false
}

// specOf is the configured spec whose endpoint id is id, and its index.
func (c *common) specOf(id string) (int, *config.Spec) {
	best, at := -1, 0
	for i := range c.cfg.Specs {
		n := specName(c.cfg.Specs[i])
		// the longest name that prefixes the id: specs a and a.b may both exist
		if strings.HasPrefix(id, n+".") && len(n) > at {
			best, at = i, len(n)
		}
	}
	if best < 0 {
		return -1, nil
	}
	return best, &c.cfg.Specs[best]
}

// withError is a tool's error text with e in place of its error object,
// the other members kept in their order.
func withError(text string, e *mcpserver.ErrorObject) string {
	env, ok := parseObject([]byte(text))
	if !ok {
		return text
	}
	inner, ok := parseObject(env.get("error"))
	if !ok {
		return text
	}
	for key, v := range map[string]string{"message": e.Message, "hint": e.Hint} {
		data, _ := json.Marshal(v)
		inner.set(key, data)
	}
	env.set("error", inner.marshal())
	return string(env.marshal())
}
