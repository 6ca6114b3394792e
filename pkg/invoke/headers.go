package invoke

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/specgate/specgate/pkg/serialize"
	"github.com/specgate/specgate/pkg/spec"
)

// The names a call's configuration fills (credentials, static headers) and
// the model's extra headers: which the model may set, and how.

// checkHeaders sorts the model's extra headers: declared header
// parameters become parameter values; the rest are checked and returned.
func (c *Client) checkHeaders(e *spec.Endpoint, params []param, hs map[string]string, values map[string]any, reserved reservedNames) ([]serialize.Pair, []string) {
	if len(hs) == 0 {
		return nil, nil
	}
	allowCred := c.allowCredHeadersFor(e)
	allowOverride := c.allowOverrideHeadersFor(e)
	keyHeaders := map[string]bool{}
	if s := e.Owner(); s != nil {
		for _, sch := range s.Schemes {
			if sch.Kind() == spec.SchemeAPIKey && sch.In == "header" && sch.Name != "" {
				keyHeaders[guardName(sch.Name)] = true
			}
		}
	}
	for name := range c.specOptions(e.Spec).Headers {
		keyHeaders[guardName(name)] = true
	}
	names := make([]string, 0, len(hs))
	for k := range hs {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []serialize.Pair
	var problems []string
	seen := make(map[string]string, len(names)) // a header as the upstream reads it: the name that gave it
	for _, name := range names {
		v := hs[name]
		label := "header " + quoteName(name)
		if !serialize.ValidHeaderName(name) {
			problems = append(problems, label+": not a valid header name")
			continue
		}
		if first, twice := seen[guardName(name)]; twice {
			// "X-Foo" beside "x-foo" or "X_Foo": the upstream would read
			// both values as one header
			problems = append(problems, label+": the same header as "+quoteName(first)+"; give it once")
			continue
		}
		seen[guardName(name)] = name
		if p := findHeaderParam(params, name); p != nil {
			if _, set := values[p.In+"\x00"+p.Name]; !set {
				values[p.In+"\x00"+p.Name] = v
			}
			continue
		}
		canon := http.CanonicalHeaderKey(name)
		// The checks below read the name as a CGI, WSGI or Rack server
		// reads it: "X_HTTP_METHOD_OVERRIDE" and "X-HTTP-Method-Override"
		// are both HTTP_X_HTTP_METHOD_OVERRIDE there.
		as := guardName(name)
		if bad := serialize.BadHeaderValue(v); bad != "" {
			problems = append(problems, label+": "+bad)
			continue
		}
		switch {
		case hopHeaders[as]:
			problems = append(problems, label+": set by specgate, not by the caller")
			continue
		case as == "Content-Type":
			problems = append(problems, label+": use the contentType argument instead")
			continue
		case reserved.headers[as]:
			problems = append(problems, label+": set from the config; leave it out")
			continue
		case (credentialHeaders[as] || keyHeaders[as]) && !allowCred:
			problems = append(problems, label+": credentials come from the config, not from arguments")
			continue
		}
		if bad := reserved.header(canon, v, allowOverride); bad != "" {
			problems = append(problems, label+": "+bad)
			continue
		}
		out = append(out, serialize.Pair{K: canon, V: v})
	}
	return out, problems
}

// overrideHeaders change how the upstream, or a proxy in front of it,
// reads the request: its method, its path, or the client address, host
// and scheme it trusts (frameworks and reverse proxies honour each of
// these somewhere). The model may set them only when the config allows
// it. Keys are canonical: names compare without case.
var overrideHeaders = map[string]bool{
	"X-Http-Method-Override": true, "X-Http-Method": true, "X-Method-Override": true,
	"X-Original-Method": true, "X-Original-Http-Method": true,
	"X-Original-Url": true, "X-Rewrite-Url": true,
	"X-Forwarded-For": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true,
	"X-Real-Ip": true, "Forwarded": true,
}

// guardName is the canonical form a header name is checked under: with
// "_" read as "-", as servers that put headers in an environment
// (CGI, WSGI, Rack, PHP) read it, so that "X_Forwarded_For" is refused
// as "X-Forwarded-For" is. The name sent is unchanged.
func guardName(name string) string {
	return http.CanonicalHeaderKey(strings.ReplaceAll(name, "_", "-"))
}

// reservedNames are the names the config fills on a call (the chosen
// credentials and the spec's static headers): the model may set none of
// them, by any route.
type reservedNames struct {
	query   []string        // apiKey query keys
	cookies []string        // apiKey cookie names
	headers map[string]bool // canonical header names
}

func (c *Client) reservedFor(e *spec.Endpoint, plan authPlan) reservedNames {
	r := reservedNames{headers: map[string]bool{}}
	for _, st := range plan.steps {
		switch query, cookie, header := st.carries(); {
		case query != "":
			r.query = append(r.query, query)
		case cookie != "":
			r.cookies = append(r.cookies, cookie)
		default:
			r.headers[guardName(header)] = true
		}
	}
	for name := range c.specOptions(e.Spec).Headers {
		r.headers[guardName(name)] = true
	}
	return r
}

// queryKey reports whether the escaped query key k, read as a server
// decodes it, is one the config fills, and which. Names compare without
// case: some frameworks read query keys so.
func (r reservedNames) queryKey(k string) (string, bool) {
	if len(r.query) == 0 {
		return "", false
	}
	if d, err := url.QueryUnescape(k); err == nil {
		k = d
	}
	for _, q := range r.query {
		if strings.EqualFold(k, q) {
			return q, true
		}
	}
	return "", false
}

// cookiePair reports whether one name=value cookie serialize.Pair sets a cookie the
// config fills: the name is what precedes the first "=", as a server
// reads it.
func (r reservedNames) cookiePair(kv string) (string, bool) {
	name, _, _ := strings.Cut(kv, "=")
	name = strings.TrimSpace(name)
	if d, err := url.PathUnescape(name); err == nil {
		name = d
	}
	for _, c := range r.cookies {
		if strings.EqualFold(name, c) {
			return c, true
		}
	}
	return "", false
}

// header explains why the model may not send header name with value v,
// or "": a Cookie header naming a cookie the config fills, or an override
// header unless allowed.
func (r reservedNames) header(name, v string, allowOverride bool) string {
	canon := guardName(name)
	if overrideHeaders[canon] && !allowOverride {
		return "changes how the upstream reads the request; only the config can allow it (allow_override_headers)"
	}
	if canon == "Cookie" {
		for _, kv := range strings.Split(v, ";") {
			if c, ok := r.cookiePair(kv); ok {
				return "would set the cookie " + strconv.Quote(c) + ", which the config fills; leave it out"
			}
		}
	}
	return ""
}

// configSupplied returns the keys (in+"\x00"+name) of the declared
// parameters the config fills when the call is sent: those the chosen
// security alternative's credentials set (Authorization for http, basic
// and OAuth2 schemes; an apiKey scheme's header, query parameter or
// cookie) and the spec's static headers. Nil when no credential applies:
// then the model gives such parameters itself, as any other.
func (c *Client) configSupplied(e *spec.Endpoint, params []param, plan authPlan) map[string]bool {
	var out map[string]bool
	mark := func(in, name string) {
		for _, p := range params {
			if p.In != in {
				continue
			}
			if p.Name == name || in == "header" && strings.EqualFold(p.Name, name) {
				if out == nil {
					out = map[string]bool{}
				}
				out[p.In+"\x00"+p.Name] = true
			}
		}
	}
	for _, st := range plan.steps {
		switch st.kind {
		case sendAPIKey:
			mark(st.in, st.name)
		case sendBasic:
			mark("header", "Authorization")
		default:
			mark("header", "Authorization")
			// Slack declares its OAuth token again as a required "token"
			// header on every method: the bearer token sent in
			// Authorization is that token, and the model has none to give.
			for _, name := range tokenParamNames {
				mark("header", name)
			}
		}
	}
	for name := range c.specOptions(e.Spec).Headers {
		mark("header", name)
	}
	return out
}

// tokenParamNames are header parameters that declare the bearer token a
// scheme already sends in Authorization.
var tokenParamNames = []string{"token", "access_token", "access-token"}

// ConfigFilled returns the declared parameters of e (in+"\x00"+name) that
// the config's credentials and static headers fill for the principal in
// ctx, which the model is therefore not asked for: inspect leaves them
// out. Nil when none.
func (c *Client) ConfigFilled(ctx context.Context, e *spec.Endpoint) map[string]bool {
	plan, err := c.planAuth(ctx, e)
	if err != nil {
		return nil
	}
	return c.configSupplied(e, paramsFromEndpoint(e), plan)
}

func findHeaderParam(params []param, name string) *param {
	for i := range params {
		if params[i].In == "header" && strings.EqualFold(params[i].Name, name) {
			return &params[i]
		}
	}
	return nil
}
