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

	"github.com/specgate/specgate/internal/closest"
	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/serialize"
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
	argsKey     string   // see ArgsKey
}

// ArgsKey identifies what the call's declared arguments send: each declared
// parameter's value by location and name (however the model named it, as a
// parameter or a header), the body and its content type; a digest, so a
// limiter keyed on it holds no argument values. Extra headers the operation
// does not declare are not in it: an argument-keyed cooldown
// (Governed.CooldownByArgs) is not reset by a header varied for the purpose.
func (c *Call) ArgsKey() string { return c.argsKey }

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
	p := &preparer{c: c, e: e, args: args}
	if err := p.operation(ctx); err != nil {
		return nil, err
	}
	p.declared()
	authErr := p.credentials(ctx)
	p.required()
	base, err := BaseURL(e)
	if err != nil {
		return nil, err
	}
	p.base = base
	p.path()
	p.parameters()
	p.body()
	p.buildURL()
	p.checkValues()
	p.validate(ctx)
	if len(p.problems) > 0 {
		return nil, &ArgError{Endpoint: e.ID, Declared: p.declaredNames, Closest: p.closest, Problems: p.problems}
	}
	if authErr != nil {
		return nil, authErr
	}
	return p.call(), nil
}

// preparer builds one Call, stage by stage, collecting every problem with
// the arguments so that one answer lists them all. Its methods run in the
// order Prepare calls them; each stage reads what the earlier ones built.
type preparer struct {
	c    *Client
	e    *spec.Endpoint
	args Args

	op     *spec.Operation // nil when the operation could not be rebuilt
	params []param
	// values are the model's values by parameter key ("in\x00name").
	values map[string]any
	// declaredNames lists the declared parameters when the model used an
	// undeclared one; closest pairs each undeclared name that looks like a
	// misspelling with the declared name it is closest to.
	declaredNames []string
	closest       [][2]string
	plan          authPlan
	reserved      reservedNames
	extra         []serialize.Pair // the model's extra headers
	fromConfig    map[string]bool  // parameter keys the credentials fill

	base         *url.URL
	rawPath      string
	pathParams   map[string]string
	pathProblems bool
	query        []string
	header       http.Header
	encoded      *serialize.Body
	ct           string // the body's content type, as chosen; "" when none
	media        *openapi3.MediaType
	u            *url.URL // nil when the values do not form a URL on the base
	validated    bool

	problems []string
}

func (p *preparer) problem(s ...string) { p.problems = append(p.problems, s...) }

// operation rebuilds e's operation and reads its parameters, falling back
// to e.Params when it cannot be rebuilt.
func (p *preparer) operation(ctx context.Context) error {
	op, err := p.e.Operation(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		op = nil
	}
	p.op = op
	if op != nil {
		p.params = paramsFromOperation(op)
	} else {
		p.params = paramsFromEndpoint(p.e)
	}
	return nil
}

// declared matches the model's parameter names onto the declared ones.
func (p *preparer) declared() {
	values, unknown, problems := matchParams(p.params, p.args)
	p.values = values
	p.problem(problems...)
	if len(unknown) == 0 {
		return
	}
	names := make([]string, 0, len(p.params))
	for _, pm := range p.params {
		p.declaredNames = append(p.declaredNames, pm.Name+" ("+pm.In+")")
		names = append(names, pm.Name)
	}
	if len(p.declaredNames) == 0 {
		p.declaredNames = []string{"none"}
	}
	// Only the names the problem shows get a suggestion, and a name too
	// long to be a misspelling gets none: the hint stays short.
	for _, k := range unknown[:min(len(unknown), maxNamesShown)] {
		if len(k) > 128 {
			continue
		}
		if c := closestName(k, names); c != "" {
			p.closest = append(p.closest, [2]string{k, c})
		}
	}
}

// credentials chooses the credentials and checks the model's extra headers
// against them. The returned *AuthError only counts once the arguments
// are found good.
//
// Credentials are chosen now, applied only when sending: a declared
// parameter they fill (an Authorization or API-key header, a key in the
// query or a cookie) needs no value from the model, and any value it gave
// is dropped so the configured credential alone is sent. Any other route
// to a name the config fills (an exploded object's keys, a Cookie header,
// an extra header) is refused: servers mostly read the first of two
// values, which would be the model's.
func (p *preparer) credentials(ctx context.Context) error {
	plan, authErr := p.c.planAuth(ctx, p.e)
	p.plan = plan
	p.reserved = p.c.reservedFor(p.e, plan)
	extra, problems := p.c.checkHeaders(p.e, p.params, p.args.Headers, p.values, p.reserved)
	p.extra = extra
	p.problem(problems...)
	p.fromConfig = p.c.configSupplied(p.e, p.params, plan)
	for k := range p.fromConfig {
		delete(p.values, k)
	}
	return authErr
}

// required reports required parameters the model left out.
func (p *preparer) required() {
	for _, pm := range p.params {
		key := pm.In + "\x00" + pm.Name
		if v, ok := p.values[key]; pm.Required && !p.fromConfig[key] && (!ok || v == nil) {
			p.problem(paramLabel(pm.Name, pm.In) + ": is required")
		}
	}
}

// path fills the path template.
func (p *preparer) path() {
	template, literal := splitPathQuery(p.e.Path)
	if literal != "" {
		p.query = append(p.query, literal)
	}
	rawPath, pathParams, problems := buildPath(template, p.params, p.values)
	p.rawPath, p.pathParams, p.pathProblems = rawPath, pathParams, len(problems) > 0
	p.problem(problems...)
}

// parameters serializes the query, header and cookie parameters, then
// adds the model's extra headers and the Cookie header.
func (p *preparer) parameters() {
	if p.base.RawQuery != "" {
		p.query = append(p.query, p.base.RawQuery)
	}
	p.header = http.Header{}
	var cookies []string
	allowOverride := p.c.allowOverrideHeadersFor(p.e)
	for _, pm := range p.params {
		v, ok := p.values[pm.In+"\x00"+pm.Name]
		if !ok || v == nil {
			continue
		}
		if pm.JSONContent {
			v = jsonText(v)
		}
		switch pm.In {
		case "query":
			p.queryParam(pm, v)
		case "header":
			p.headerParam(pm, v, allowOverride)
		case "cookie":
			cookies = p.cookieParam(pm, v, cookies)
		}
	}
	for _, h := range p.extra {
		p.header.Set(h.K, h.V)
	}
	if len(cookies) > 0 {
		p.header.Set("Cookie", strings.Join(cookies, "; "))
	}
}

func (p *preparer) queryParam(pm param, v any) {
	esc := serialize.EscapeQuery
	if pm.AllowReserved {
		esc = serialize.EscapeQueryReserved
	}
	for _, kv := range serialize.Form(pm.Name, pm.Style, pm.Explode, v, esc) {
		if name, ok := p.reserved.queryKey(kv.K); ok {
			p.problem(paramLabel(pm.Name, pm.In) + ": would set the query key " + strconv.Quote(name) + ", which the config fills; leave it out")
			continue
		}
		p.query = append(p.query, kv.K+"="+kv.V)
	}
}

func (p *preparer) headerParam(pm param, v any, allowOverride bool) {
	s := serialize.Simple(pm.Name, "simple", pm.Explode, v, serialize.Identity)
	if bad := serialize.BadHeaderValue(s); bad != "" {
		p.problem(paramLabel(pm.Name, pm.In) + ": " + bad)
		return
	}
	if !serialize.ValidHeaderName(pm.Name) {
		p.problem(paramLabel(pm.Name, pm.In) + ": the spec's header name is not valid")
		return
	}
	if bad := p.reserved.header(pm.Name, s, allowOverride); bad != "" {
		p.problem(paramLabel(pm.Name, pm.In) + ": " + bad)
		return
	}
	p.header.Set(pm.Name, s)
}

// cookieParam returns cookies with pm's pairs added.
func (p *preparer) cookieParam(pm param, v any, cookies []string) []string {
	if !serialize.ValidHeaderName(pm.Name) {
		p.problem(paramLabel(pm.Name, pm.In) + ": the spec's cookie name is not valid")
		return cookies
	}
	for _, kv := range serialize.Form(pm.Name, "form", pm.Explode, v, serialize.EscapeCookie) {
		if name, ok := p.reserved.cookiePair(kv.K + "=" + kv.V); ok {
			p.problem(paramLabel(pm.Name, pm.In) + ": would set the cookie " + strconv.Quote(name) + ", which the config fills; leave it out")
			continue
		}
		cookies = append(cookies, kv.K+"="+kv.V)
	}
	return cookies
}

// body picks the content type and encodes the request body.
func (p *preparer) body() {
	e, args := p.e, p.args
	if len(e.BodyTypes) == 0 {
		if args.RequestBody != nil {
			p.problem("requestBody: this operation takes no request body")
		}
		if args.ContentType != "" {
			p.problem("contentType: this operation takes no request body")
		}
		return
	}
	ct, ok := chooseContentType(e.BodyTypes, args.ContentType)
	if !ok {
		p.problem("contentType: " + quoteName(args.ContentType) + " is not accepted; use one of: " + strings.Join(e.BodyTypes, ", "))
		return
	}
	p.ct = ct
	if p.op != nil && p.op.Op.RequestBody != nil && p.op.Op.RequestBody.Value != nil {
		p.media = lookupMedia(p.op.Op.RequestBody.Value.Content, ct)
	}
	switch {
	case args.RequestBody == nil && e.BodyRequired:
		p.problem("requestBody: is required (" + ct + ")")
	case args.RequestBody != nil:
		b, problems := serialize.EncodeBody(serialize.BodyInput{ContentType: ct, Media: p.media, Value: args.RequestBody, UploadsDir: p.c.opts.UploadsDir})
		p.problem(problems...)
		if b != nil {
			p.encoded = b
		}
	}
}

// buildURL builds the URL, checked to stay on the base URL's host and under its
// path, and sets the Content-Type and default Accept headers.
func (p *preparer) buildURL() {
	base := p.base
	target := base.Scheme + "://" + base.Host + joinBase(base, p.rawPath)
	if len(p.query) > 0 {
		target += "?" + strings.Join(p.query, "&")
	}
	u, err := url.Parse(target)
	if err != nil || !sameOrigin(u, base) || !strings.HasPrefix(u.EscapedPath(), strings.TrimRight(base.EscapedPath(), "/")) {
		if !p.pathProblems {
			p.problem("parameters: the values do not form a URL on the endpoint's host")
		}
		u = nil
	}
	p.u = u

	if p.encoded != nil {
		p.header.Set("Content-Type", p.encoded.ContentType)
	}
	if p.header.Get("Accept") == "" {
		p.header.Set("Accept", "application/json, */*;q=0.8")
	}
}

// checkValues says what is wrong with the values given when structural
// problems already stop the request from being built, so one answer lists
// everything.
func (p *preparer) checkValues() {
	op := p.op
	if op == nil || len(p.problems) == 0 {
		return
	}
	for _, pm := range p.params {
		val, ok := p.values[pm.In+"\x00"+pm.Name]
		if !ok || val == nil || pm.Schema == nil {
			continue
		}
		p.problem(checkValue(paramLabel(pm.Name, pm.In), pm.Schema, coerce(val, pm.Schema), op.Doc, false)...)
	}
	if media := p.media; p.args.RequestBody != nil && media != nil && media.Schema != nil && media.Schema.Value != nil {
		p.problem(checkValue("requestBody", media.Schema.Value, p.args.RequestBody, op.Doc, true)...)
	}
	p.problems = dedupe(p.problems)
}

// validate checks the built request against the operation's schemas, when
// the operation could be rebuilt and nothing structural is already wrong.
func (p *preparer) validate(ctx context.Context) {
	if p.op == nil || p.u == nil || len(p.problems) > 0 {
		return
	}
	body, media := p.encoded, p.media
	req, _ := http.NewRequestWithContext(ctx, p.e.Method, p.u.String(), nil)
	req.Header = p.header.Clone()
	if body != nil {
		data := body.Data
		req.Body = io.NopCloser(bytes.NewReader(data))
		req.ContentLength = int64(len(data))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	}
	v := validation{
		op: p.op, req: req, pathParams: p.pathParams, params: p.params, values: p.values, fromConfig: p.fromConfig,
		jsonBody: body != nil && !body.HasCheck && answer.IsJSONType(body.ContentType),
		check:    nil,
	}
	if body != nil && body.HasCheck && media != nil && media.Schema != nil {
		v.check, v.hasCheck, v.bodySchema = body.Check, true, media.Schema.Value
	}
	if v.jsonBody && media != nil && media.Schema != nil {
		v.jsonValue, v.bodySchema = body.Value, media.Schema.Value
	}
	p.problem(validate(ctx, v)...)
	p.validated = true
}

// call returns the built Call; the arguments must have been found good.
func (p *preparer) call() *Call {
	c, e, u := p.c, p.e, p.u
	call := &Call{
		c:         c,
		endpoint:  e,
		method:    e.Method,
		url:       u,
		header:    p.header,
		validated: p.validated,
		auth:      p.plan,
		timeout:   c.timeoutFor(e),
		maxBytes:  c.maxBytesFor(e),
		blockPriv: c.blockPrivateFor(e),
		ownHost:   strings.ToLower(u.Host),
		ownScheme: u.Scheme,
	}
	call.allowed = c.allowedHostsFor(u.Host, e)
	call.argsKey = declaredArgsKey(p.values, p.args.RequestBody, p.ct)
	if p.encoded != nil {
		call.body, call.hasBody = p.encoded.Data, true
	}
	call.credHeaders = append(call.credHeaders, p.plan.headerNames()...)
	for name := range c.specOptions(e.Spec).Headers {
		call.credHeaders = append(call.credHeaders, http.CanonicalHeaderKey(name))
	}
	return call
}

// matchParams maps the model's parameter names onto declared parameters.
// Keys are "in\x00name". Undeclared names are problems.
func matchParams(params []param, args Args) (values map[string]any, unknown, problems []string) {
	values = make(map[string]any, len(args.Parameters))
	keys := make([]string, 0, len(args.Parameters))
	for k := range args.Parameters {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	named := make(map[string]string, len(keys)) // a parameter's key: the name that gave it
	for _, k := range keys {
		v := args.Parameters[k]
		p := lookupParam(params, k)
		if p == nil {
			unknown = append(unknown, k)
			continue
		}
		key := p.In + "\x00" + p.Name
		if first, twice := named[key]; twice {
			// "id" beside "path.id", or a header in two cases: one would
			// silently win, so neither is sent
			problems = append(problems, "parameter "+quoteName(p.Name)+" is given twice, as "+quoteName(first)+" and "+quoteName(k)+": give it once")
			continue
		}
		named[key] = k
		values[key] = v
	}
	if len(unknown) > 0 {
		word := "parameter"
		if len(unknown) > 1 {
			word = "parameters"
		}
		problems = append(problems, "unknown "+word+" "+nameFew(unknown)+": not declared by this operation")
	}
	return values, unknown, problems
}

// closestName returns the declared name that name most likely misspells:
// one equal to it but for case, "_", "-" and "." (order_id for orderId),
// else the closest by closest.Name, without case; "" when none is that
// close.
func closestName(name string, declared []string) string {
	fold := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(s))
	}
	for _, d := range declared {
		if fold(d) == fold(name) {
			return d
		}
	}
	lower := make([]string, len(declared))
	for i, d := range declared {
		lower[i] = strings.ToLower(d)
	}
	if c := closest.Name(strings.ToLower(name), lower); c != "" {
		return declared[slices.Index(lower, c)]
	}
	return ""
}

// maxNamesShown bounds the names one problem repeats.
const maxNamesShown = 10

// nameFew quotes the first few names, each cut short, and counts the rest:
// the model may send ten thousand names, or one of 100 KB, and the error
// must stay short.
func nameFew(names []string) string {
	n := min(len(names), maxNamesShown)
	quoted := make([]string, n)
	for i, name := range names[:n] {
		quoted[i] = quoteName(name)
	}
	s := strings.Join(quoted, ", ")
	if rest := len(names) - n; rest > 0 {
		s += " and " + strconv.Itoa(rest) + " more"
	}
	return s
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

// BaseURL parses e's base URL; it must be absolute http(s). Its error says
// what to set when there is none.
func BaseURL(e *spec.Endpoint) (*url.URL, error) {
	if e.BaseURL == "" {
		return nil, &UnreachableError{Host: "(none)", Reason: "spec " + e.Spec + " names no server; set base_url for it in the config",
			Fix: "Give the API's address as --base-url, or as specs[" + e.Spec + "].base_url in the config."}
	}
	u, err := url.Parse(e.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, &UnreachableError{Host: "(invalid)", Reason: "spec " + e.Spec + " has no usable absolute http(s) base URL; set base_url for it in the config",
			Fix: "Give the API's absolute http(s) address as --base-url, or as specs[" + e.Spec + "].base_url in the config."}
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

func sameOrigin(u, base *url.URL) bool {
	return u.Scheme == base.Scheme && strings.EqualFold(u.Host, base.Host) && u.User == nil
}

// splitPathQuery splits a path template whose key carries a query
// (OpenAI's /responses/{response_id}?beta=true, which tells a beta
// operation apart from the one at the same path) into the template and
// that query, which goes on the wire as the query it is: escaped into the
// path, "?" made the call another path. A "?" inside a {name} is left alone.
func splitPathQuery(template string) (string, string) {
	i := strings.IndexByte(template, '?')
	if i < 0 || strings.Contains(template[i:], "}") {
		return template, ""
	}
	query := template[i+1:]
	if j := strings.IndexByte(query, '#'); j >= 0 {
		query = query[:j]
	}
	return template[:i], query
}

// buildPath expands the path template. Values are escaped so they stay in
// their own segment; a segment that would be "." or ".." is refused.
// It also returns the path values as openapi3filter reads them (style
// delimiters, values unescaped).
func buildPath(template string, params []param, values map[string]any) (string, map[string]string, []string) {
	// A "#" cannot be part of a path: Box's spec tells operations on one
	// path apart with a fragment (/files/{file_id}#update_shared_link) that
	// its API never sees.
	if i := strings.LastIndexByte(template, '#'); i >= 0 && !strings.Contains(template[i:], "}") {
		template = template[:i]
	}
	var b strings.Builder
	pathParams := map[string]string{}
	var problems []string
	rest := template
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(serialize.EscapeKeep(rest, "/:@!$&'()*+,;=%"))
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			b.WriteString(serialize.EscapeKeep(rest, "/:@!$&'()*+,;=%"))
			break
		}
		b.WriteString(serialize.EscapeKeep(rest[:i], "/:@!$&'()*+,;=%"))
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
		plain := serialize.Simple(p.Name, p.Style, p.Explode, v, serialize.Identity)
		pathParams[name] = plain
		wire := serialize.Simple(p.Name, p.Style, p.Explode, v, serialize.EscapePath)
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
	wb := answer.MediaBase(want)
	for _, t := range types {
		if answer.MediaBase(t) == wb {
			return t, true
		}
	}
	for _, t := range types {
		tb := answer.MediaBase(t)
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
	b := answer.MediaBase(ct)
	for k, mt := range content {
		if answer.MediaBase(k) == b {
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
	return serialize.ScalarString(jsonValue(v))
}
