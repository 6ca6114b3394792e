// Package mock serves a spec-driven stand-in for an upstream API: every
// operation of a spec answers at its server URL's path plus its own path,
// from the spec's examples or from values generated from its schemas, with
// an optional quota that answers real 429s.
//
// The mock validates path and query parameters and request bodies against
// the spec (400 with a short JSON error), answers the documented success
// status, 404 for a path the spec does not describe and 405 with Allow for a
// known path with another method. It does not check credentials. It writes
// nothing but HTTP answers and, through its Logger, warnings.
package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/specgate/specgate/pkg/spec"
)

// Options tune a mock. The zero value serves without any quota.
type Options struct {
	// RequestsPerWindow admits at most this many requests in any sliding
	// Window, across all operations; more get 429. If zero, no such quota.
	RequestsPerWindow int
	// Window is the sliding window of RequestsPerWindow; required with it.
	Window time.Duration
	// Cooldown is the least time between two admitted requests to one
	// operation; one sooner gets 429. If zero, none.
	Cooldown time.Duration
	// Now returns the current time. If nil, time.Now.
	Now func() time.Time
	// Logger receives warnings (an example that fails its own schema, once
	// per answer). If nil, they are dropped.
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body read. If zero, 8 MiB.
	MaxBodyBytes int64
}

// Validate reports the first problem of the quota options.
func (o Options) Validate() error {
	switch {
	case o.RequestsPerWindow < 0:
		return fmt.Errorf("requests per window must be positive (got %d)", o.RequestsPerWindow)
	case o.RequestsPerWindow > 0 && o.Window <= 0:
		return errors.New("a window is required with requests per window")
	case o.RequestsPerWindow == 0 && o.Window != 0:
		return errors.New("a window needs requests per window")
	case o.Cooldown < 0:
		return fmt.Errorf("cooldown must not be negative (got %s)", o.Cooldown)
	}
	return nil
}

// Server is the mock, an http.Handler. It is safe for concurrent use and
// starts no goroutine.
type Server struct {
	spec     *spec.Spec
	router   *router
	quota    *quota
	now      func() time.Time
	log      *slog.Logger
	maxBody  int64
	basePath string

	mu  sync.Mutex
	ops map[string]*prepared // rebuilt operations by endpoint id, bounded
	lru []string             // ids in ops, least recently used first

	warned sync.Map // answers whose example failed its schema or were clipped, warned once
}

var _ http.Handler = (*Server)(nil)

// maxPrepared bounds the rebuilt operations a mock keeps.
const maxPrepared = 256

type prepared struct {
	once sync.Once
	op   *spec.Operation
	err  error
}

// New builds a mock of s. The spec should be loaded without a base URL, so
// each endpoint keeps its own server's path.
func New(s *spec.Spec, opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m := &Server{
		spec:     s,
		quota:    &quota{limit: opts.RequestsPerWindow, window: opts.Window, cooldown: opts.Cooldown},
		now:      opts.Now,
		log:      opts.Logger,
		maxBody:  opts.MaxBodyBytes,
		basePath: ServerPath(s.BaseURL),
		ops:      map[string]*prepared{},
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.maxBody <= 0 {
		m.maxBody = 8 << 20
	}
	var routes []*route
	for _, e := range s.Endpoints {
		own := ServerPath(e.BaseURL)
		routes = append(routes, newRoute(own, e))
		if own != m.basePath {
			// A client given one base URL for the whole spec sends every
			// operation under the spec's server path.
			routes = append(routes, newRoute(m.basePath, e))
		}
	}
	m.router = newRouter(routes)
	return m, nil
}

// BasePath is the path of the spec's first server URL ("/api/v3"), where
// the mock serves the spec; "" for the root.
func (m *Server) BasePath() string { return m.basePath }

// ServerPath is the path of a server URL without its trailing slash:
// "/api/v3" for "https://petstore3.swagger.io/api/v3/".
func ServerPath(serverURL string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(u.EscapedPath(), "/")
}

// errorBody is the JSON of every answer the mock makes on its own account.
type errorBody struct {
	Error             string   `json:"error"`
	Message           string   `json:"message"`
	Problems          []string `json:"problems,omitempty"`
	RetryAfterSeconds int64    `json:"retryAfterSeconds,omitempty"`
}

func writeError(w http.ResponseWriter, status int, body errorBody) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// ServeHTTP answers one request as the spec says the upstream would.
func (m *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		// A request the spec does not foresee must cost this answer, never
		// the process serving the mock.
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			m.log.Error("mock answer failed", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
			writeError(w, http.StatusInternalServerError, errorBody{Error: "internal", Message: "the mock could not answer this request"})
		}
	}()
	now := m.now()
	rt, params, allow := m.router.find(r.Method, r.URL.EscapedPath())
	if rt == nil && r.Method == http.MethodHead {
		rt, params, _ = m.router.find(http.MethodGet, r.URL.EscapedPath())
	}
	if rt == nil {
		m.rateHeaders(w, m.quota.stateAt(now), now)
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, http.StatusMethodNotAllowed, errorBody{Error: "method_not_allowed",
				Message: fmt.Sprintf("%s is not an operation of %s; it has %s", r.Method, r.URL.Path, strings.Join(allow, ", "))})
			return
		}
		writeError(w, http.StatusNotFound, errorBody{Error: "not_found", Message: "no operation of the spec at " + r.URL.Path})
		return
	}
	v := m.quota.admitAt(rt.ep.ID, now)
	m.rateHeaders(w, v, now)
	if !v.ok {
		secs := ceilSeconds(v.retryAfter)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		writeError(w, http.StatusTooManyRequests, errorBody{Error: "rate_limited",
			Message: fmt.Sprintf("rate limit exceeded: retry in %d seconds", secs), RetryAfterSeconds: secs})
		return
	}
	op, err := m.operation(r.Context(), rt.ep)
	if err != nil {
		writeError(w, http.StatusInternalServerError, errorBody{Error: "internal", Message: err.Error()})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, m.maxBody)
	if problems := m.validate(r, op, params); len(problems) > 0 {
		writeError(w, http.StatusBadRequest, errorBody{Error: "invalid_request", Message: problems[0], Problems: problems})
		return
	}
	m.answer(w, r, rt.ep, op)
}

// ceilSeconds rounds d up to whole seconds, at least 1: waiting that long
// must be enough.
func ceilSeconds(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds())))
}

// rateHeaders sets X-RateLimit-* when the mock has a window quota:
// remaining after this request, and the epoch second by which the window is
// whole again.
func (m *Server) rateHeaders(w http.ResponseWriter, v verdict, now time.Time) {
	if !m.quota.windowed() {
		return
	}
	reset := v.reset
	if reset.IsZero() {
		reset = now
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(m.quota.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(v.remaining, 0)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(float64(reset.UnixNano())/1e9)), 10))
}

// operation returns e's operation with its responses, rebuilt once and
// kept in a bounded cache.
func (m *Server) operation(ctx context.Context, e *spec.Endpoint) (*spec.Operation, error) {
	m.mu.Lock()
	p, ok := m.ops[e.ID]
	if ok {
		if i := slices.Index(m.lru, e.ID); i >= 0 {
			m.lru = append(slices.Delete(m.lru, i, i+1), e.ID)
		}
	} else {
		p = &prepared{}
		m.ops[e.ID] = p
		m.lru = append(m.lru, e.ID)
		if len(m.lru) > maxPrepared {
			delete(m.ops, m.lru[0])
			m.lru = m.lru[1:]
		}
	}
	m.mu.Unlock()
	p.once.Do(func() { p.op, p.err = e.FullOperation(context.WithoutCancel(ctx)) })
	return p.op, p.err
}

// maxProblems bounds the problems one 400 lists.
const maxProblems = 5

// validate checks the request's parameters and body against op and returns
// its problems as short sentences.
func (m *Server) validate(r *http.Request, op *spec.Operation, params map[string]string) []string {
	opts := &openapi3filter.Options{
		MultiError:          true,
		AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
		SkipSettingDefaults: true,
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		if openapi3filter.RegisteredBodyDecoder(mt) == nil {
			opts.ExcludeRequestBody = true // accepted as it is: nothing here can read it
		}
	}
	input := &openapi3filter.RequestValidationInput{
		Request:    r,
		PathParams: params,
		Route: &routers.Route{Spec: op.Doc, Path: op.Path, PathItem: op.PathItem,
			Method: op.Method, Operation: op.Op},
		Options: opts,
	}
	var problems []string
	for _, err := range flatten(openapi3filter.ValidateRequest(r.Context(), input)) {
		if len(problems) == maxProblems {
			break
		}
		var re *openapi3filter.RequestError
		if errors.As(err, &re) {
			switch {
			case re.Parameter != nil && undecodable(re.Err, re.Parameter.Schema):
				// kin-openapi cannot read this parameter's wire form
				// (Stripe's deepObject expand[], a oneOf it decodes into
				// one guess) and says so even when it is absent: as in
				// invoke, only a required one missing is a problem.
				if re.Parameter.Required && !sent(r, re.Parameter) {
					problems = append(problems, fmt.Sprintf("%s parameter %q: is required", re.Parameter.In, re.Parameter.Name))
				}
			case re.RequestBody != nil && !isJSON(mediaType(r)) && parseProblem(re.Err):
				// a form or multipart body kin-openapi cannot decode
				// (Stripe's tax_id_data, an array of objects) is taken
				// as it is, as invoke sends it
			case re.Parameter != nil:
				problems = append(problems, fmt.Sprintf("%s parameter %q: %s", re.Parameter.In, re.Parameter.Name, reason(re)))
			case re.RequestBody != nil:
				problems = append(problems, "request body: "+reason(re))
			default:
				problems = append(problems, short(re.Error()))
			}
			continue
		}
		var se *openapi3filter.SecurityRequirementsError
		if errors.As(err, &se) {
			continue // credentials are not the mock's business
		}
		problems = append(problems, short(err.Error()))
	}
	return problems
}

// undecodable reports whether err is kin-openapi failing to decode a
// parameter rather than finding its value wrong: a parse error, a style it
// does not support, or a oneOf/anyOf it decoded into one guess.
// A scalar that does not parse (limit=many for an integer) is the
// request's fault, and stays a problem.
func undecodable(err error, schema *openapi3.SchemaRef) bool {
	if schema == nil || schema.Value == nil {
		return parseProblem(err)
	}
	sv := schema.Value
	if len(sv.OneOf) > 0 || len(sv.AnyOf) > 0 {
		return true
	}
	var pe *openapi3filter.ParseError
	if errors.As(err, &pe) && pe.Kind == openapi3filter.KindInvalidFormat && !sv.Type.Is("object") && !sv.Type.Is("array") {
		return false
	}
	return parseProblem(err)
}

// parseProblem reports whether err is a failure to decode the wire form
// (invoke's rule), not a schema's complaint about a decoded value.
func parseProblem(err error) bool {
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		return false
	}
	var pe *openapi3filter.ParseError
	if errors.As(err, &pe) {
		return true
	}
	return err != nil && (strings.Contains(err.Error(), "serialization method") || strings.Contains(err.Error(), "unsupported schema"))
}

// sent reports whether the request carries parameter p in any form
// (a deepObject's name[key] included).
func sent(r *http.Request, p *openapi3.Parameter) bool {
	switch p.In {
	case "query":
		for k := range r.URL.Query() {
			if k == p.Name || strings.HasPrefix(k, p.Name+"[") {
				return true
			}
		}
		return false
	case "header":
		return len(r.Header.Values(p.Name)) > 0
	case "cookie":
		_, err := r.Cookie(p.Name)
		return err == nil
	}
	return true
}

func mediaType(r *http.Request) string {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt
}

func flatten(err error) []error {
	if err == nil {
		return nil
	}
	// Only a list at the top: a RequestError keeps its own list as its
	// cause, with the parameter it concerns.
	if me, ok := err.(openapi3.MultiError); ok {
		var out []error
		for _, e := range me {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// reason is a request error in a few words: the schema's complaint, not a
// dump of the schema.
func reason(re *openapi3filter.RequestError) string {
	var se *openapi3.SchemaError
	if errors.As(re.Err, &se) {
		msg := se.Reason
		if p := se.JSONPointer(); len(p) > 0 {
			msg = "at /" + strings.Join(p, "/") + ": " + msg
		}
		return short(msg)
	}
	var pe *openapi3filter.ParseError
	if errors.As(re.Err, &pe) {
		return short(pe.Error())
	}
	if re.Err != nil {
		if me, ok := re.Err.(openapi3.MultiError); ok && len(me) > 0 {
			return reason(&openapi3filter.RequestError{Err: me[0]})
		}
		return short(re.Err.Error())
	}
	return short(re.Reason)
}

func short(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// successResponse is the answer the mock gives to a valid request to op: the
// lowest documented 2xx status (201 for a create that documents only 201),
// else the default response as 200, else a bare 200.
func successResponse(op *openapi3.Operation) (int, *openapi3.Response) {
	if op.Responses == nil {
		return http.StatusOK, nil
	}
	best, bestCode := (*openapi3.ResponseRef)(nil), 0
	for code, ref := range op.Responses.Map() {
		var n int
		switch {
		case len(code) == 3 && code[0] == '2':
			var err error
			if n, err = strconv.Atoi(code); err != nil {
				if !strings.EqualFold(code, "2XX") {
					continue
				}
				n = 299 // a range: any exact 2xx wins over it
			}
		default:
			continue
		}
		if best == nil || n < bestCode {
			best, bestCode = ref, n
		}
	}
	if best != nil {
		if bestCode == 299 {
			bestCode = http.StatusOK
		}
		return bestCode, best.Value
	}
	if def := op.Responses.Default(); def != nil {
		return http.StatusOK, def.Value
	}
	return http.StatusOK, nil
}

// pickMedia chooses the answer's media type: one the request accepts, JSON
// first, else the first the spec lists.
func pickMedia(resp *openapi3.Response, accept string) (string, *openapi3.MediaType) {
	if resp == nil || len(resp.Content) == 0 {
		return "", nil
	}
	types := make([]string, 0, len(resp.Content))
	for t := range resp.Content {
		types = append(types, t)
	}
	sort.SliceStable(types, func(i, j int) bool {
		ji, jj := isJSON(types[i]), isJSON(types[j])
		if ji != jj {
			return ji
		}
		return types[i] < types[j]
	})
	for _, t := range types {
		if accepts(accept, t) {
			return t, resp.Content[t]
		}
	}
	return types[0], resp.Content[types[0]]
}

func isJSON(mt string) bool {
	mt, _, _ = strings.Cut(strings.ToLower(mt), ";")
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "*/*"
}

// accepts reports whether an Accept header takes media type mt; an empty
// header takes anything.
func accepts(accept, mt string) bool {
	if strings.TrimSpace(accept) == "" {
		return true
	}
	mt = strings.ToLower(mt)
	for _, part := range strings.Split(accept, ",") {
		a, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(part)), ";")
		switch {
		case a == "*/*" || a == mt:
			return true
		case strings.HasSuffix(a, "/*") && strings.HasPrefix(mt, strings.TrimSuffix(a, "*")):
			return true
		}
	}
	return false
}

// seed makes answers deterministic per request: the same method, path and
// query give the same values.
func seed(r *http.Request) uint64 {
	h := fnv.New64a()
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(h, "%s %s?", r.Method, r.URL.EscapedPath())
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s&", k, strings.Join(q[k], ","))
	}
	return h.Sum64()
}

// answer writes the success answer of op.
func (m *Server) answer(w http.ResponseWriter, r *http.Request, e *spec.Endpoint, op *spec.Operation) {
	status, resp := successResponse(op.Op)
	g := newGenerator(seed(r), true, op.Doc)
	if resp != nil {
		names := make([]string, 0, len(resp.Headers))
		for name := range resp.Headers {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			h := resp.Headers[name]
			if strings.EqualFold(name, "Content-Type") || h == nil || h.Value == nil || w.Header().Get(name) != "" {
				continue
			}
			if v, ok := g.headerValue(&h.Value.Parameter); ok {
				w.Header().Set(name, v)
			}
		}
	}
	mt, media := pickMedia(resp, r.Header.Get("Accept"))
	if media == nil || status == http.StatusNoContent || status == http.StatusNotModified {
		w.WriteHeader(status)
		return
	}
	body := m.body(e, status, mt, media, g)
	if g.clipped != "" {
		m.warnClipped(e, status, mt, g.clipped)
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if s, ok := body.(string); ok && !isJSON(mt) {
		w.Header().Set("Content-Type", mt)
		w.WriteHeader(status)
		io.WriteString(w, s)
		return
	}
	data, err := json.Marshal(body)
	if err != nil {
		writeError(w, http.StatusInternalServerError, errorBody{Error: "internal", Message: "the answer is not JSON: " + short(err.Error())})
		return
	}
	if !isJSON(mt) || strings.Contains(mt, "*") {
		mt = "application/json"
	}
	w.Header().Set("Content-Type", mt)
	w.WriteHeader(status)
	w.Write(data)
}

// body is the value the mock answers for a media type of a response: the
// media type's example, else its first named example, else the schema's
// example, else a value generated from the schema. The bool says it is an
// example, which is served even when it fails the schema.
func body(media *openapi3.MediaType, g *generator) (any, bool) {
	if media.Example != nil {
		return media.Example, true
	}
	names := make([]string, 0, len(media.Examples))
	for name := range media.Examples {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if ex := media.Examples[name]; ex != nil && ex.Value != nil && ex.Value.Value != nil {
			return ex.Value.Value, true
		}
	}
	if media.Schema == nil || media.Schema.Value == nil {
		return map[string]any{}, false
	}
	if ex := media.Schema.Value.Example; ex != nil {
		return ex, true
	}
	v, ok := g.Value(media.Schema)
	if !ok {
		return map[string]any{}, false
	}
	return v, false
}

// body is Body, warning once per answer whose example fails its schema.
func (m *Server) body(e *spec.Endpoint, status int, mt string, media *openapi3.MediaType, g *generator) any {
	v, fromExample := body(media, g)
	if !fromExample || media.Schema == nil || media.Schema.Value == nil {
		return v
	}
	key := e.ID + " " + strconv.Itoa(status) + " " + mt
	if _, done := m.warned.Load(key); done {
		return v
	}
	if err := media.Schema.Value.VisitJSON(v, openapi3.VisitAsResponse()); err != nil {
		if _, dup := m.warned.LoadOrStore(key, true); !dup {
			problem := err.Error()
			var se *openapi3.SchemaError
			if errors.As(err, &se) {
				problem = se.Reason
			}
			m.log.Warn("the spec's example fails its own schema; served as written",
				"endpoint", e.ID, "status", status, "mediaType", mt, "problem", short(problem))
		}
		return v
	}
	m.warned.Store(key, true) // valid: no need to check again
	return v
}

// warnClipped warns once per answer whose generated value was cut at a
// bound (the schema asks for more than the mock makes, or for a string no
// short one matches): the value served is short and may fail the schema.
func (m *Server) warnClipped(e *spec.Endpoint, status int, mt, why string) {
	key := "clipped " + e.ID + " " + strconv.Itoa(status) + " " + mt
	if _, dup := m.warned.LoadOrStore(key, true); dup {
		return
	}
	m.log.Warn("the schema asks for more than the mock generates; a short value is served",
		"endpoint", e.ID, "status", status, "mediaType", mt, "bound", short(why))
}

// headerValue is a generated value for a response header, as text.
func (g *generator) headerValue(p *openapi3.Parameter) (string, bool) {
	if p.Schema == nil || p.Schema.Value == nil {
		return "", false
	}
	v, ok := g.value(p.Schema.Value, p.Name)
	if !ok {
		return "", false
	}
	switch x := v.(type) {
	case string:
		return x, true
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = fmt.Sprint(e)
		}
		return strings.Join(parts, ","), true
	case map[string]any, nil:
		return "", false
	default:
		return fmt.Sprint(x), true
	}
}
