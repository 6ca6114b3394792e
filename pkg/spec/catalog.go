package spec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

// Spec is one loaded API description. It is read-only after load and safe
// for concurrent use.
type Spec struct {
	Name        string
	Location    string
	Title       string
	APIVersion  string
	Description string
	// Version is the format the document was written in: "2.0", "3.0.3",
	// "3.1.0", ...
	Version string
	// OpenAPI is the OpenAPI version operations are rebuilt under.
	OpenAPI string
	// BaseURL is the spec-wide server URL (configured or first server).
	BaseURL string
	// Schemes holds the security schemes by name.
	Schemes   map[string]SecurityScheme
	Endpoints []*Endpoint
	// Warnings are problems that did not stop the spec from serving.
	Warnings []string
	// Excluded maps the id of every endpoint curation left out (see
	// Filter.Apply) to the rule that removed it. Nil when nothing was.
	Excluded map[string]string
	// Unusable maps the id of every operation left out at load because it
	// cannot be served safely (its schemas nest too deep) to the reason.
	// Nil when none was.
	Unusable map[string]string
	// StatedLimit is the rate limit the document itself states, if any.
	StatedLimit *StatedLimit
	// Components holds each components section ("schemas", "parameters",
	// ...) as compact JSON by name while the spec loads. A spec in a
	// catalog keeps them compressed and this is nil: read them with
	// Component.
	Components map[string]map[string]json.RawMessage
	// packed holds the components compressed, by section and name (see
	// pack).
	packed map[string]map[string][]byte

	hydr hydrator
	// deep names the first operation left out at load because its schemas
	// nest too deep.
	deep string
	// refs are the options external $refs are fetched with, when allowed.
	refs Options
}

// SecurityScheme is the part of a security scheme that auth needs.
type SecurityScheme struct {
	Type     string   `json:"type"` // apiKey, http, oauth2, openIdConnect, mutualTLS
	In       string   `json:"in,omitempty"`
	Name     string   `json:"name,omitempty"`
	Scheme   string   `json:"scheme,omitempty"` // basic, bearer, ... (lower case)
	TokenURL string   `json:"tokenUrl,omitempty"`
	Flows    []string `json:"flows,omitempty"`
	// AuthPrefix is, for an apiKey sent as the Authorization header, the
	// word the value needs before the key ("Bearer", "Bot", "SSWS") as the
	// scheme's description or name says; "" when neither says.
	AuthPrefix string `json:"authPrefix,omitempty"`
}

// SchemeKind is what a security scheme asks a call to carry: the one
// reading of a scheme's type and HTTP scheme that the code switches on.
type SchemeKind int

const (
	// SchemeUnsupported is a scheme specgate cannot send (mutualTLS, or a
	// type it does not know).
	SchemeUnsupported SchemeKind = iota
	// SchemeAPIKey is a key in a header, query parameter or cookie (In, Name).
	SchemeAPIKey
	// SchemeBasic is HTTP basic authentication: a username and a password.
	SchemeBasic
	// SchemeToken is "Authorization: <scheme> <token>": HTTP bearer, or
	// another HTTP scheme that takes a token.
	SchemeToken
	// SchemeOAuth2 is OAuth2: a token given as it is, or got with client
	// credentials from its token URL.
	SchemeOAuth2
	// SchemeOpenID is OpenID Connect: a token given as it is.
	SchemeOpenID
)

// Kind is the scheme's kind.
func (s SecurityScheme) Kind() SchemeKind {
	switch s.Type {
	case "apiKey":
		return SchemeAPIKey
	case "http":
		if strings.EqualFold(s.Scheme, "basic") {
			return SchemeBasic
		}
		return SchemeToken
	case "oauth2":
		return SchemeOAuth2
	case "openIdConnect":
		return SchemeOpenID
	}
	return SchemeUnsupported
}

// String names the kind as a config or a message says it.
func (k SchemeKind) String() string {
	switch k {
	case SchemeAPIKey:
		return "api key"
	case SchemeBasic:
		return "basic"
	case SchemeToken:
		return "bearer token"
	case SchemeOAuth2:
		return "oauth2"
	case SchemeOpenID:
		return "openid connect"
	}
	return "unsupported"
}

// CredentialField is the config field a scheme's credential is written in
// first: value, username, token or client_id.
func (k SchemeKind) CredentialField() string {
	switch k {
	case SchemeBasic:
		return "username"
	case SchemeToken, SchemeOpenID:
		return "token"
	case SchemeOAuth2:
		return "client_id"
	}
	return "value"
}

// Operation is an endpoint's operation rebuilt with kin-openapi, references
// resolved, ready for openapi3filter validation. Treat it as read-only: it
// is shared between callers.
type Operation struct {
	Doc      *openapi3.T
	Path     string
	Method   string
	PathItem *openapi3.PathItem
	Op       *openapi3.Operation
}

// Catalog is the set of endpoints of all loaded specs, indexed by id. It is
// read-only after NewCatalog and safe for concurrent use.
type Catalog struct {
	specs     []*Spec
	endpoints []*Endpoint
	byID      map[string]*Endpoint
	excluded  map[string]string
	unusable  map[string]string
}

// NewCatalog indexes the endpoints of specs. Specs with a name already seen
// are an error: endpoint ids would collide.
func NewCatalog(specs ...*Spec) (*Catalog, error) {
	c := &Catalog{byID: map[string]*Endpoint{}}
	names := map[string]bool{}
	for _, s := range specs {
		if names[s.Name] {
			return nil, fmt.Errorf("two specs are named %q: give one a different name", s.Name)
		}
		names[s.Name] = true
		c.specs = append(c.specs, s)
		for _, e := range s.Endpoints {
			c.byID[e.ID] = e
			c.endpoints = append(c.endpoints, e)
		}
		for id, why := range s.Excluded {
			if c.excluded == nil {
				c.excluded = map[string]string{}
			}
			c.excluded[id] = why
		}
		for id, why := range s.Unusable {
			if c.unusable == nil {
				c.unusable = map[string]string{}
			}
			c.unusable[id] = why
		}
	}
	return c, nil
}

// Excluded reports whether the config left the endpoint id out of the
// catalog, and the rule that did ("specs[petstore].exclude[0] (\"deletePet\")").
func (c *Catalog) Excluded(id string) (reason string, ok bool) {
	reason, ok = c.excluded[id]
	return reason, ok
}

// Unusable reports whether id names an operation of a loaded spec that was
// left out at load because it cannot be served safely, and why.
func (c *Catalog) Unusable(id string) (reason string, ok bool) {
	reason, ok = c.unusable[id]
	return reason, ok
}

// Specs returns the loaded specs in load order.
func (c *Catalog) Specs() []*Spec { return c.specs }

// Endpoints returns every endpoint, spec by spec in document order.
func (c *Catalog) Endpoints() []*Endpoint { return c.endpoints }

// Len returns the number of endpoints.
func (c *Catalog) Len() int { return len(c.endpoints) }

// Lookup returns the endpoint with the given id.
func (c *Catalog) Lookup(id string) (*Endpoint, bool) {
	e, ok := c.byID[id]
	return e, ok
}

// Spec returns the spec with the given name.
func (c *Catalog) Spec(name string) (*Spec, bool) {
	for _, s := range c.specs {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// Operation rebuilds the endpoint's operation with its references resolved.
// Results are cached per spec in a small bounded cache.
func (e *Endpoint) Operation(ctx context.Context) (*Operation, error) {
	if e.spec == nil {
		return nil, fmt.Errorf("endpoint %s has no spec", e.ID)
	}
	return e.spec.hydr.get(ctx, e)
}

// hydrateCacheSize bounds the rebuilt operations kept per spec.
const hydrateCacheSize = 64

type hydrator struct {
	mu    sync.Mutex
	cache map[string]*hydrated
	order []string // least recently used first
}

type hydrated struct {
	once sync.Once
	op   *Operation
	err  error
}

func (h *hydrator) get(ctx context.Context, e *Endpoint) (*Operation, error) {
	h.mu.Lock()
	if h.cache == nil {
		h.cache = map[string]*hydrated{}
	}
	entry, ok := h.cache[e.ID]
	if ok {
		h.touch(e.ID)
	} else {
		entry = &hydrated{}
		h.cache[e.ID] = entry
		h.order = append(h.order, e.ID)
		if len(h.order) > hydrateCacheSize {
			delete(h.cache, h.order[0])
			h.order = h.order[1:]
		}
	}
	h.mu.Unlock()
	entry.once.Do(func() { entry.op, entry.err = hydrate(ctx, e, false) })
	return entry.op, entry.err
}

func (h *hydrator) touch(id string) {
	for i, x := range h.order {
		if x == id {
			copy(h.order[i:], h.order[i+1:])
			h.order[len(h.order)-1] = id
			return
		}
	}
}

var refPattern = regexp.MustCompile(`"\$ref"\s*:\s*"(#/components/[^"]+)"`)

// FullOperation is Operation with the responses kept: what a mock of the
// upstream needs to answer. It is not cached (responses on specs like
// Stripe's reach most of the components); callers keep what they reuse.
func (e *Endpoint) FullOperation(ctx context.Context) (*Operation, error) {
	if e.spec == nil {
		return nil, fmt.Errorf("endpoint %s has no spec", e.ID)
	}
	return hydrate(ctx, e, true)
}

// hydrate builds a minimal document holding the operation and the
// components it reaches, and resolves it with kin-openapi. Without
// responses, the operation's responses are replaced by an empty default.
func hydrate(ctx context.Context, e *Endpoint, responses bool) (*Operation, error) {
	s := e.spec
	// Load leaves such operations out; checking again keeps kin-openapi's
	// resolver and validator away from them whatever built the endpoint.
	if why := newDepthChecker(s).problem(e.raw); why != "" {
		return nil, fmt.Errorf("rebuilding %s: %s", e.ID, why)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(e.raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("rebuilding %s: the operation is not an object", e.ID)
	}
	// Request validation needs parameters and the body, not responses,
	// which on specs like Stripe's reach most of the components.
	if _, ok := fields["responses"]; !responses || !ok {
		fields["responses"] = json.RawMessage(`{"default":{"description":""}}`)
	}
	delete(fields, "callbacks")
	opRaw, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	needed := map[string]map[string]json.RawMessage{}
	queue := [][]byte{opRaw}
	for len(queue) > 0 {
		raw := queue[0]
		queue = queue[1:]
		for _, m := range refPattern.FindAllSubmatch(raw, -1) {
			section, name, ok := splitComponentRef(string(m[1]))
			if !ok {
				continue
			}
			if needed[section] == nil {
				needed[section] = map[string]json.RawMessage{}
			}
			if _, done := needed[section][name]; done {
				continue
			}
			body, ok := s.Component(section, name)
			if !ok {
				return nil, fmt.Errorf("endpoint %s refers to missing component %s/%s", e.ID, section, name)
			}
			needed[section][name] = body
			queue = append(queue, body)
		}
	}
	if names, ok := s.componentNames("securitySchemes"); ok {
		ss := make(map[string]json.RawMessage, len(names))
		for _, name := range names {
			ss[name], _ = s.Component("securitySchemes", name)
		}
		needed["securitySchemes"] = ss
	}
	var buf bytes.Buffer
	buf.WriteString(`{"openapi":`)
	writeJSONString(&buf, s.OpenAPI)
	buf.WriteString(`,"info":{"title":"`)
	buf.WriteString("specgate")
	buf.WriteString(`","version":"1"},"paths":{`)
	writeJSONString(&buf, e.Path)
	buf.WriteString(`:{`)
	writeJSONString(&buf, strings.ToLower(e.Method))
	buf.WriteByte(':')
	buf.Write(opRaw)
	buf.WriteString(`}},"components":`)
	comps, err := json.Marshal(needed)
	if err != nil {
		return nil, err
	}
	buf.Write(comps)
	buf.WriteByte('}')

	doc := &openapi3.T{}
	if err := json.Unmarshal(buf.Bytes(), doc); err != nil {
		return nil, fmt.Errorf("rebuilding %s: %s", e.ID, jsonErrorText(err))
	}
	loader := newLoader(ctx, s.refs)
	var base *url.URL
	if isURL(s.Location) {
		base, _ = url.Parse(s.Location)
	}
	if err := loader.ResolveRefsIn(doc, base); err != nil {
		return nil, fmt.Errorf("rebuilding %s: %s", e.ID, oneLine(err.Error()))
	}
	item := doc.Paths.Value(e.Path)
	if item == nil {
		return nil, fmt.Errorf("rebuilding %s: path lost", e.ID)
	}
	op := item.GetOperation(e.Method)
	if op == nil {
		return nil, fmt.Errorf("rebuilding %s: operation lost", e.ID)
	}
	return &Operation{Doc: doc, Path: e.Path, Method: e.Method, PathItem: item, Op: op}, nil
}

// splitComponentRef splits "#/components/schemas/Foo" into its section and
// unescaped name.
func splitComponentRef(ref string) (section, name string, ok bool) {
	rest, found := strings.CutPrefix(ref, "#/components/")
	if !found {
		return "", "", false
	}
	section, name, found = strings.Cut(rest, "/")
	if !found || name == "" {
		return "", "", false
	}
	// A pointer into a component ("schemas/Pet/properties/id") needs the
	// whole component.
	name, _, _ = strings.Cut(name, "/")
	if strings.Contains(name, "%") {
		if u, err := url.PathUnescape(name); err == nil {
			name = u
		}
	}
	name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	return section, name, true
}

// SpecNames returns the names of specs in sorted order.
func (c *Catalog) SpecNames() []string {
	names := make([]string, len(c.specs))
	for i, s := range c.specs {
		names[i] = s.Name
	}
	sort.Strings(names)
	return names
}
