package invoke

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/specgate/specgate/pkg/spec"
)

// Args are the model's arguments to one call.
type Args struct {
	// Parameters holds path, query, header and cookie values by parameter
	// name. When two parameters share a name, "query.id" (location, dot,
	// name) picks one.
	Parameters map[string]any
	// RequestBody is the body as a JSON value; how it is encoded follows
	// ContentType.
	RequestBody any
	// Headers are extra request headers. A header the operation declares
	// as a parameter counts as that parameter.
	Headers map[string]string
	// ContentType picks among the operation's body types; empty means the
	// first the spec lists.
	ContentType string
}

// Call is a validated request, ready to send. Do may be called more than
// once (a retry sends the same request again); a Call is safe for
// concurrent use.
type Call struct {
	c        *Client
	endpoint *spec.Endpoint

	method      string
	url         *url.URL
	header      http.Header
	body        []byte
	hasBody     bool
	validated   bool
	auth        authPlan
	timeout     time.Duration
	maxBytes    int64
	blockPriv   bool
	ownHost     string
	ownScheme   string
	allowed     []string
	credHeaders []string // header names carrying credentials or static headers
}

// Endpoint returns the endpoint the call goes to.
func (c *Call) Endpoint() *spec.Endpoint { return c.endpoint }

// Method returns the HTTP method.
func (c *Call) Method() string { return c.method }

// URL returns the request URL without credentials (query API keys are
// added when sending). The caller must not modify it.
func (c *Call) URL() *url.URL { return c.url }

// RequestSize returns the bytes of the request body.
func (c *Call) RequestSize() int { return len(c.body) }

// Timeout returns the call's deadline.
func (c *Call) Timeout() time.Duration { return c.timeout }

// Validated reports whether the arguments were checked against the
// operation's schemas (false when the operation could not be rebuilt).
func (c *Call) Validated() bool { return c.validated }

// hopHeaders may never be set by the model: they belong to the transport.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Transfer-Encoding": true,
	"Te": true, "Trailer": true, "Upgrade": true, "Host": true, "Content-Length": true,
	"Proxy-Authenticate": true, "Expect": true,
}

// credentialHeaders may be set by the model only when allowed.
var credentialHeaders = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true,
}

// Prepare validates args against e's operation and builds the request.
// Nothing is sent. It returns *ArgError when the arguments do not fit
// (every problem listed) and *AuthError when a credential the call needs
// refers to an unset environment variable. When e's operation cannot be
// rebuilt, the request is built from e.Params with default styles and
// schema validation is skipped.
func (c *Client) Prepare(ctx context.Context, e *spec.Endpoint, args Args) (*Call, error) {
	if e == nil {
		return nil, &ArgError{Problems: []string{"no endpoint"}}
	}
	op, opErr := e.Operation(ctx)
	if opErr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		op = nil
	}
	var params []param
	if op != nil {
		params = paramsFromOperation(op)
	} else {
		params = paramsFromEndpoint(e)
	}

	var problems []string
	values, declaredProblems := matchParams(params, args)
	problems = append(problems, declaredProblems...)
	aerr := &ArgError{Endpoint: e.ID}
	if len(declaredProblems) > 0 {
		for _, p := range params {
			aerr.Declared = append(aerr.Declared, p.Name+" ("+p.In+")")
		}
		if len(aerr.Declared) == 0 {
			aerr.Declared = []string{"none"}
		}
	}

	// Credentials are chosen now, applied only when sending: a declared
	// parameter they fill (an Authorization or API-key header, a key in the
	// query or a cookie) needs no value from the model, and any value it
	// gave is dropped so the configured credential alone is sent. Any other
	// route to a name the config fills (an exploded object's keys, a Cookie
	// header, an extra header) is refused: servers mostly read the first of
	// two values, which would be the model's.
	plan, authErr := c.planAuth(ctx, e)
	reserved := c.reservedFor(e, plan)

	// Extra headers from the model.
	extra, hdrProblems := c.checkHeaders(e, params, args.Headers, values, reserved)
	problems = append(problems, hdrProblems...)

	fromConfig := c.configSupplied(e, params, plan)
	for k := range fromConfig {
		delete(values, k)
	}

	// Missing required parameters.
	for _, p := range params {
		key := p.In + "\x00" + p.Name
		if v, ok := values[key]; p.Required && !fromConfig[key] && (!ok || v == nil) {
			problems = append(problems, paramLabel(p.Name, p.In)+": is required")
		}
	}

	// Base URL.
	base, err := baseURL(e)
	if err != nil {
		return nil, err
	}

	// Path.
	rawPath, pathParams, pathProblems := buildPath(e.Path, params, values)
	problems = append(problems, pathProblems...)

	// Query, headers, cookies.
	var query []string
	if base.RawQuery != "" {
		query = append(query, base.RawQuery)
	}
	header := http.Header{}
	var cookies []string
	allowOverride := c.allowOverrideHeadersFor(e)
	for _, p := range params {
		v, ok := values[p.In+"\x00"+p.Name]
		if !ok || v == nil {
			continue
		}
		if p.JSONContent {
			v = jsonText(v)
		}
		switch p.In {
		case "query":
			esc := escapeQuery
			if p.AllowReserved {
				esc = escapeQueryReserved
			}
			for _, kv := range serializeForm(p.Name, p.Style, p.Explode, v, esc) {
				if name, ok := reserved.queryKey(kv.k); ok {
					problems = append(problems, paramLabel(p.Name, p.In)+": would set the query key "+strconv.Quote(name)+", which the config fills; leave it out")
					continue
				}
				query = append(query, kv.k+"="+kv.v)
			}
		case "header":
			s := serializeSimple(p.Name, "simple", p.Explode, v, identity)
			if bad := badHeaderValue(s); bad != "" {
				problems = append(problems, paramLabel(p.Name, p.In)+": "+bad)
				continue
			}
			if !validHeaderName(p.Name) {
				problems = append(problems, paramLabel(p.Name, p.In)+": the spec's header name is not valid")
				continue
			}
			if bad := reserved.header(p.Name, s, allowOverride); bad != "" {
				problems = append(problems, paramLabel(p.Name, p.In)+": "+bad)
				continue
			}
			header.Set(p.Name, s)
		case "cookie":
			if !validHeaderName(p.Name) {
				problems = append(problems, paramLabel(p.Name, p.In)+": the spec's cookie name is not valid")
				continue
			}
			for _, kv := range serializeForm(p.Name, "form", p.Explode, v, escapeCookie) {
				if name, ok := reserved.cookiePair(kv.k + "=" + kv.v); ok {
					problems = append(problems, paramLabel(p.Name, p.In)+": would set the cookie "+strconv.Quote(name)+", which the config fills; leave it out")
					continue
				}
				cookies = append(cookies, kv.k+"="+kv.v)
			}
		}
	}
	for _, h := range extra {
		header.Set(h.k, h.v)
	}
	if len(cookies) > 0 {
		header.Set("Cookie", strings.Join(cookies, "; "))
	}

	// Body.
	var body *encodedBody
	var media *openapi3.MediaType
	if len(e.BodyTypes) == 0 {
		if args.RequestBody != nil {
			problems = append(problems, "requestBody: this operation takes no request body")
		}
		if args.ContentType != "" {
			problems = append(problems, "contentType: this operation takes no request body")
		}
	} else {
		ct, ok := chooseContentType(e.BodyTypes, args.ContentType)
		if !ok {
			problems = append(problems, "contentType: "+strconv.Quote(args.ContentType)+" is not accepted; use one of: "+strings.Join(e.BodyTypes, ", "))
		} else {
			if op != nil && op.Op.RequestBody != nil && op.Op.RequestBody.Value != nil {
				media = lookupMedia(op.Op.RequestBody.Value.Content, ct)
			}
			switch {
			case args.RequestBody == nil && e.BodyRequired:
				problems = append(problems, "requestBody: is required ("+ct+")")
			case args.RequestBody != nil:
				b, bodyProblems := encodeBody(bodyInput{contentType: ct, media: media, value: args.RequestBody, uploadsDir: c.opts.UploadsDir})
				problems = append(problems, bodyProblems...)
				if b != nil {
					body = b
				}
			}
		}
	}

	// The URL, checked to stay on the base URL's host and under its path.
	target := base.Scheme + "://" + base.Host + joinBase(base, rawPath)
	if len(query) > 0 {
		target += "?" + strings.Join(query, "&")
	}
	u, perr := url.Parse(target)
	if perr != nil || !sameOrigin(u, base) || !strings.HasPrefix(u.EscapedPath(), strings.TrimRight(base.EscapedPath(), "/")) {
		if len(pathProblems) == 0 {
			problems = append(problems, "parameters: the values do not form a URL on the endpoint's host")
		}
		u = nil
	}

	if body != nil {
		header.Set("Content-Type", body.contentType)
	}
	if header.Get("Accept") == "" {
		header.Set("Accept", "application/json, */*;q=0.8")
	}

	// Structural problems stop the request from being built; still say
	// what is wrong with the values given, so one answer lists everything.
	if op != nil && len(problems) > 0 {
		for _, p := range params {
			val, ok := values[p.In+"\x00"+p.Name]
			if !ok || val == nil || p.Schema == nil {
				continue
			}
			problems = append(problems, checkValue(paramLabel(p.Name, p.In), p.Schema, coerce(val, p.Schema), op.Doc, false)...)
		}
		if args.RequestBody != nil && media != nil && media.Schema != nil && media.Schema.Value != nil {
			problems = append(problems, checkValue("requestBody", media.Schema.Value, args.RequestBody, op.Doc, true)...)
		}
		problems = dedupe(problems)
	}

	// Schema validation, when the operation could be rebuilt and nothing
	// structural is already wrong.
	validated := false
	if op != nil && u != nil && len(problems) == 0 {
		req, _ := http.NewRequestWithContext(ctx, e.Method, u.String(), nil)
		req.Header = header.Clone()
		if body != nil {
			data := body.data
			req.Body = io.NopCloser(bytes.NewReader(data))
			req.ContentLength = int64(len(data))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		}
		v := validation{
			op: op, req: req, pathParams: pathParams, params: params, values: values, fromConfig: fromConfig,
			jsonBody: body != nil && !body.hasCheck && isJSONType(body.contentType),
			check:    nil,
		}
		if body != nil && body.hasCheck && media != nil && media.Schema != nil {
			v.check, v.hasCheck, v.bodySchema = body.check, true, media.Schema.Value
		}
		if v.jsonBody && media != nil && media.Schema != nil {
			v.jsonValue, v.bodySchema = body.value, media.Schema.Value
		}
		problems = append(problems, validate(ctx, v)...)
		validated = true
	}
	if len(problems) > 0 {
		aerr.Problems = problems
		return nil, aerr
	}

	if authErr != nil {
		return nil, authErr
	}

	call := &Call{
		c:         c,
		endpoint:  e,
		method:    e.Method,
		url:       u,
		header:    header,
		validated: validated,
		auth:      plan,
		timeout:   c.timeoutFor(e),
		maxBytes:  c.maxBytesFor(e),
		blockPriv: c.blockPrivateFor(e),
		ownHost:   strings.ToLower(u.Host),
		ownScheme: u.Scheme,
	}
	call.allowed = c.allowedHostsFor(u.Host, e)
	if body != nil {
		call.body, call.hasBody = body.data, true
	}
	call.credHeaders = append(call.credHeaders, plan.headerNames()...)
	for name := range c.specOptions(e.Spec).Headers {
		call.credHeaders = append(call.credHeaders, http.CanonicalHeaderKey(name))
	}
	return call, nil
}

// matchParams maps the model's parameter names onto declared parameters.
// Keys are "in\x00name". Undeclared names are problems.
func matchParams(params []param, args Args) (map[string]any, []string) {
	values := make(map[string]any, len(args.Parameters))
	var problems []string
	keys := make([]string, 0, len(args.Parameters))
	for k := range args.Parameters {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var unknown []string
	for _, k := range keys {
		v := args.Parameters[k]
		p := lookupParam(params, k)
		if p == nil {
			unknown = append(unknown, strconv.Quote(k))
			continue
		}
		values[p.In+"\x00"+p.Name] = v
	}
	if len(unknown) > 0 {
		word := "parameter"
		if len(unknown) > 1 {
			word = "parameters"
		}
		problems = append(problems, "unknown "+word+" "+strings.Join(unknown, ", ")+": not declared by this operation")
	}
	return values, problems
}

// lookupParam finds a parameter by name, by "in.name", or for headers by
// name in any case.
func lookupParam(params []param, key string) *param {
	for i := range params {
		if params[i].Name == key {
			return &params[i]
		}
	}
	if in, name, ok := strings.Cut(key, "."); ok {
		for i := range params {
			if params[i].In == in && params[i].Name == name {
				return &params[i]
			}
		}
	}
	for i := range params {
		if params[i].In == "header" && strings.EqualFold(params[i].Name, key) {
			return &params[i]
		}
	}
	return nil
}

// checkHeaders sorts the model's extra headers: declared header
// parameters become parameter values; the rest are checked and returned.
func (c *Client) checkHeaders(e *spec.Endpoint, params []param, hs map[string]string, values map[string]any, reserved reservedNames) ([]pair, []string) {
	if len(hs) == 0 {
		return nil, nil
	}
	allowCred := c.allowCredHeadersFor(e)
	allowOverride := c.allowOverrideHeadersFor(e)
	keyHeaders := map[string]bool{}
	if s := e.Owner(); s != nil {
		for _, sch := range s.Schemes {
			if sch.Type == "apiKey" && sch.In == "header" && sch.Name != "" {
				keyHeaders[http.CanonicalHeaderKey(sch.Name)] = true
			}
		}
	}
	for name := range c.specOptions(e.Spec).Headers {
		keyHeaders[http.CanonicalHeaderKey(name)] = true
	}
	names := make([]string, 0, len(hs))
	for k := range hs {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []pair
	var problems []string
	for _, name := range names {
		v := hs[name]
		label := "header " + strconv.Quote(name)
		if !validHeaderName(name) {
			problems = append(problems, label+": not a valid header name")
			continue
		}
		if p := findHeaderParam(params, name); p != nil {
			if _, set := values[p.In+"\x00"+p.Name]; !set {
				values[p.In+"\x00"+p.Name] = v
			}
			continue
		}
		canon := http.CanonicalHeaderKey(name)
		if bad := badHeaderValue(v); bad != "" {
			problems = append(problems, label+": "+bad)
			continue
		}
		switch {
		case hopHeaders[canon]:
			problems = append(problems, label+": set by specgate, not by the caller")
			continue
		case canon == "Content-Type":
			problems = append(problems, label+": use the contentType argument instead")
			continue
		case reserved.headers[canon]:
			problems = append(problems, label+": set from the config; leave it out")
			continue
		case (credentialHeaders[canon] || keyHeaders[canon]) && !allowCred:
			problems = append(problems, label+": credentials come from the config, not from arguments")
			continue
		}
		if bad := reserved.header(canon, v, allowOverride); bad != "" {
			problems = append(problems, label+": "+bad)
			continue
		}
		out = append(out, pair{canon, v})
	}
	return out, problems
}

// overrideHeaders change how the upstream, or a proxy in front of it,
// reads the request: its method, or the client address it trusts. The
// model may set them only when the config allows it.
var overrideHeaders = map[string]bool{
	"X-Http-Method-Override": true, "X-Http-Method": true, "X-Method-Override": true,
	"X-Forwarded-For": true, "Forwarded": true,
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
		switch {
		case st.kind == "apiKey" && st.in == "query":
			r.query = append(r.query, st.name)
		case st.kind == "apiKey" && st.in == "cookie":
			r.cookies = append(r.cookies, st.name)
		case st.kind == "apiKey":
			r.headers[http.CanonicalHeaderKey(st.name)] = true
		default:
			r.headers["Authorization"] = true
		}
	}
	for name := range c.specOptions(e.Spec).Headers {
		r.headers[http.CanonicalHeaderKey(name)] = true
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

// cookiePair reports whether one name=value cookie pair sets a cookie the
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
	canon := http.CanonicalHeaderKey(name)
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
		switch {
		case st.kind == "apiKey":
			mark(st.in, st.name)
		default:
			mark("header", "Authorization")
		}
	}
	for name := range c.specOptions(e.Spec).Headers {
		mark("header", name)
	}
	return out
}

func findHeaderParam(params []param, name string) *param {
	for i := range params {
		if params[i].In == "header" && strings.EqualFold(params[i].Name, name) {
			return &params[i]
		}
	}
	return nil
}

// validHeaderName reports an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) && c != '.' || c == '.' {
			continue
		}
		if strings.IndexByte("!#$%&'*+^`|", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// badHeaderValue explains why a header value cannot be sent, or "".
func badHeaderValue(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\r' || c == '\n':
			return "must not contain line breaks (CR or LF)"
		case c < 0x20 && c != '\t', c == 0x7f:
			return "must not contain control characters"
		}
	}
	return ""
}

// baseURL parses e's base URL; it must be absolute http(s).
func baseURL(e *spec.Endpoint) (*url.URL, error) {
	if e.BaseURL == "" {
		return nil, &UnreachableError{Host: "(none)", Reason: "spec " + e.Spec + " names no server; set base_url for it in the config"}
	}
	u, err := url.Parse(e.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, &UnreachableError{Host: "(invalid)", Reason: "spec " + e.Spec + " has no usable absolute http(s) base URL; set base_url for it in the config"}
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

func sameOrigin(u, base *url.URL) bool {
	return u.Scheme == base.Scheme && strings.EqualFold(u.Host, base.Host) && u.User == nil
}

// buildPath expands the path template. Values are escaped so they stay in
// their own segment; a segment that would be "." or ".." is refused.
// It also returns the path values as openapi3filter reads them (style
// delimiters, values unescaped).
func buildPath(template string, params []param, values map[string]any) (string, map[string]string, []string) {
	var b strings.Builder
	pathParams := map[string]string{}
	var problems []string
	rest := template
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(escapeKeep(rest, "/:@!$&'()*+,;=%"))
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			b.WriteString(escapeKeep(rest, "/:@!$&'()*+,;=%"))
			break
		}
		b.WriteString(escapeKeep(rest[:i], "/:@!$&'()*+,;=%"))
		name := rest[i+1 : i+j]
		rest = rest[i+j+1:]
		p := findParam(params, "path", name)
		if p == nil {
			problems = append(problems, "path template names {"+name+"}, which the spec does not declare")
			continue
		}
		v, ok := values["path\x00"+name]
		if !ok || v == nil {
			continue // reported as missing
		}
		if p.JSONContent {
			v = jsonText(v)
		}
		plain := serializeSimple(p.Name, p.Style, p.Explode, v, identity)
		pathParams[name] = plain
		wire := serializeSimple(p.Name, p.Style, p.Explode, v, escapePath)
		if wire == "" {
			problems = append(problems, paramLabel(name, "path")+": must not be empty")
			continue
		}
		b.WriteString(wire)
	}
	path := b.String()
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if len(problems) == 0 {
		for _, seg := range strings.Split(path, "/") {
			if seg == "." || seg == ".." {
				problems = append(problems, "path parameters: a value must not make a \".\" or \"..\" path segment")
				break
			}
		}
	}
	return path, pathParams, problems
}

// joinBase puts the base URL's path in front of the expanded path.
func joinBase(base *url.URL, path string) string {
	return strings.TrimRight(base.EscapedPath(), "/") + path
}

// chooseContentType picks the body type: the requested one when declared
// (media parameters and case ignored; a declared wildcard accepts a
// concrete request), else the first declared.
func chooseContentType(types []string, want string) (string, bool) {
	if want == "" {
		return types[0], true
	}
	if strings.ContainsAny(want, "\r\n") {
		return "", false
	}
	wb := mediaBase(want)
	for _, t := range types {
		if mediaBase(t) == wb {
			return t, true
		}
	}
	for _, t := range types {
		tb := mediaBase(t)
		if tb == "*/*" {
			return want, true
		}
		if prefix, ok := strings.CutSuffix(tb, "/*"); ok && strings.HasPrefix(wb, prefix+"/") {
			return want, true
		}
	}
	return "", false
}

func lookupMedia(content openapi3.Content, ct string) *openapi3.MediaType {
	if mt, ok := content[ct]; ok {
		return mt
	}
	b := mediaBase(ct)
	for k, mt := range content {
		if mediaBase(k) == b {
			return mt
		}
	}
	return content.Get(ct)
}

// jsonText renders a value as JSON text, for parameters described by
// JSON content.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return scalarString(jsonValue(v))
}
