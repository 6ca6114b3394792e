package spec

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// This file renders an endpoint's contract for the inspect tool straight
// from the compact operation JSON: references resolved, cycles cut, and the
// whole bounded in size, shrinking what a model needs least first.

// Defaults for DescribeOptions fields left zero.
const (
	DefaultDescribeTargetBytes = 3 << 10
	DefaultDescribeMaxBytes    = 16 << 10
)

// Limits of schema rendering that hold before any shrinking.
const (
	describeEnumCap       = 12   // enum values shown per schema
	describeBodyDepth     = 8    // object nesting rendered for optional request fields
	describeRequiredDepth = 32   // object nesting rendered along required fields
	describeRespDepth     = 3    // object nesting rendered for response schemas
	describeBodyNodes     = 3000 // schema nodes per request body before optional ones are cut
	describeRespNodes     = 800  // schema nodes per response schema
	describeShortValue    = 80   // longest example, default or pattern kept, in bytes
)

// DescribeOptions bound the size of a Contract. The zero value uses the
// defaults.
type DescribeOptions struct {
	// TargetBytes is the marshalled size the contract is shrunk towards by
	// dropping what a call does not need (descriptions, examples, deep
	// optional fields, response detail). If zero, DefaultDescribeTargetBytes.
	TargetBytes int
	// MaxBytes is the hard bound: past it, optional parameters and optional
	// body fields go too. What a valid call needs (required parameters and
	// required body fields with their types) is never cut, so a contract
	// made only of those may still exceed it. If zero,
	// DefaultDescribeMaxBytes.
	MaxBytes int
}

// Contract is an endpoint's operation as a model reads it from inspect.
type Contract struct {
	ID          string `json:"id"`
	Method      string `json:"method"`
	Path        string `json:"path"`
	Summary     string `json:"summary,omitempty"`
	Description string `json:"description,omitempty"`
	BaseURL     string `json:"baseUrl,omitempty"`
	Deprecated  bool   `json:"deprecated,omitempty"`
	// Parameters are in spec order, path-level ones first.
	Parameters  []ContractParam    `json:"parameters,omitempty"`
	RequestBody *ContractBody      `json:"requestBody,omitempty"`
	Responses   *ContractResponses `json:"responses,omitempty"`
	// Security lists the alternative ways to authenticate: any one entry
	// will do, and it needs every scheme it names. An entry with no schemes
	// means the call may go without credentials. Nil: no auth declared.
	Security []ContractSecurity `json:"security,omitempty"`
	// Elided says what was cut to bound the size; empty when nothing was.
	Elided string `json:"elided,omitempty"`
}

// ContractParam is one parameter of a Contract.
type ContractParam struct {
	Name        string  `json:"name"`
	In          string  `json:"in"`
	Required    bool    `json:"required,omitempty"`
	Deprecated  bool    `json:"deprecated,omitempty"`
	Description string  `json:"description,omitempty"`
	Schema      *Schema `json:"schema,omitempty"`
}

// ContractBody is the request body of a Contract.
type ContractBody struct {
	Required    bool   `json:"required,omitempty"`
	Description string `json:"description,omitempty"`
	// ContentTypes are the media types the operation accepts, in spec order;
	// the first is the default and the one Schema describes.
	ContentTypes []string `json:"contentTypes"`
	Schema       *Schema  `json:"schema,omitempty"`
	// Note names the content types whose schema differs from Schema.
	Note string `json:"note,omitempty"`
}

// ContractResponses are the main responses of a Contract.
type ContractResponses struct {
	// Success is the lowest 2xx response (else "default").
	Success *ContractResponse `json:"success,omitempty"`
	// Other maps every other status code to its one-line description.
	Other map[string]string `json:"other,omitempty"`
}

// ContractResponse is one response with its schema outline.
type ContractResponse struct {
	Status      string  `json:"status"`
	Description string  `json:"description,omitempty"`
	ContentType string  `json:"contentType,omitempty"`
	Schema      *Schema `json:"schema,omitempty"`
}

// ContractSecurity is one alternative of a Contract's security: every scheme
// it lists is needed.
type ContractSecurity struct {
	Schemes []ContractScheme `json:"schemes"`
}

// ContractScheme is a security scheme a call needs.
type ContractScheme struct {
	Name string `json:"name"`
	// Type is apiKey, http, oauth2, openIdConnect or mutualTLS ("unknown"
	// when the spec does not define the scheme).
	Type string `json:"type"`
	// Scheme is the http scheme (bearer, basic).
	Scheme string `json:"scheme,omitempty"`
	// In and ParamName say where an apiKey goes.
	In        string `json:"in,omitempty"`
	ParamName string `json:"paramName,omitempty"`
}

// Schema is a compact JSON Schema: references resolved, simple allOf merged,
// cycles cut with a "$cycle" marker naming the component.
type Schema struct {
	// Type is a string, or a list of strings when the spec gives several.
	Type        any               `json:"type,omitempty"`
	Format      string            `json:"format,omitempty"`
	Nullable    bool              `json:"nullable,omitempty"`
	Description string            `json:"description,omitempty"`
	Enum        []json.RawMessage `json:"enum,omitempty"`
	// MoreValues counts enum values not shown.
	MoreValues           int                `json:"$moreValues,omitempty"`
	Const                json.RawMessage    `json:"const,omitempty"`
	Default              json.RawMessage    `json:"default,omitempty"`
	Example              json.RawMessage    `json:"example,omitempty"`
	Minimum              json.RawMessage    `json:"minimum,omitempty"`
	Maximum              json.RawMessage    `json:"maximum,omitempty"`
	ExclusiveMinimum     json.RawMessage    `json:"exclusiveMinimum,omitempty"`
	ExclusiveMaximum     json.RawMessage    `json:"exclusiveMaximum,omitempty"`
	MinLength            json.RawMessage    `json:"minLength,omitempty"`
	MaxLength            json.RawMessage    `json:"maxLength,omitempty"`
	Pattern              string             `json:"pattern,omitempty"`
	MinItems             json.RawMessage    `json:"minItems,omitempty"`
	MaxItems             json.RawMessage    `json:"maxItems,omitempty"`
	Deprecated           bool               `json:"deprecated,omitempty"`
	Required             []string           `json:"required,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	AdditionalProperties *Schema            `json:"additionalProperties,omitempty"`
	Items                *Schema            `json:"items,omitempty"`
	AllOf                []*Schema          `json:"allOf,omitempty"`
	OneOf                []*Schema          `json:"oneOf,omitempty"`
	AnyOf                []*Schema          `json:"anyOf,omitempty"`
	// Fields names the properties of an object whose schemas were cut.
	Fields []string `json:"$fields,omitempty"`
	// Ref is a reference that could not be resolved (external, or missing).
	Ref string `json:"$ref,omitempty"`
	// Cycle names the component whose expansion was cut because it contains
	// itself.
	Cycle string `json:"$cycle,omitempty"`

	depth    int  // object nesting below the root (properties add one)
	level    int  // steps below the root (properties, items, alternatives)
	req      bool // every step from the root is a required property
	localReq bool // required by its parent object
	readOnly bool
	wOnly    bool
}

// Describe renders the endpoint's contract within opts' size bounds, from
// the compact operation JSON (no kin-openapi rebuild). Each call builds a
// new Contract; it is safe for concurrent use.
func (e *Endpoint) Describe(opts DescribeOptions) (c *Contract) {
	target, max := opts.TargetBytes, opts.MaxBytes
	if max <= 0 {
		max = DefaultDescribeMaxBytes
	}
	if target <= 0 {
		target = DefaultDescribeTargetBytes
	}
	target = min(target, max)
	c = &Contract{
		ID:          e.ID,
		Method:      e.Method,
		Path:        e.Path,
		Summary:     shortText(e.Summary, 200, 1),
		Description: shortText(e.Description, 300, 2),
		BaseURL:     e.BaseURL,
		Deprecated:  e.Deprecated,
	}
	if c.Description == c.Summary || strings.HasPrefix(c.Summary, strings.TrimSuffix(c.Description, "…")) {
		c.Description = ""
	}
	if e.spec == nil {
		return c
	}
	defer func() {
		// A spec is untrusted input: a schema that trips the renderer costs
		// the detail, not the server.
		if r := recover(); r != nil {
			c.Parameters, c.RequestBody, c.Responses = nil, nil, nil
			c.Elided = "parameters, body and responses could not be rendered"
		}
	}()
	d := &describer{s: e.spec, parsed: map[string]*rawSchema{}}
	d.render(e, c)
	d.shrink(c, target, max)
	return c
}

type describer struct {
	s      *Spec
	parsed map[string]*rawSchema // resolved components by reference
	nodes  int                   // nodes built in the current tree
	cap    int                   // node budget of the current tree
	notes  []elision             // what was elided, by group in order
	group  string                // group of the shrink step running
	// dropped are the descriptions shrink steps cleared, in order.
	dropped []droppedText
}

// elision is one clause of the elided note; a later step of the same group
// replaces its text, since the steps of a group cut ever more.
type elision struct{ group, text string }

func (d *describer) note(group, text string) {
	for i := range d.notes {
		if d.notes[i].group == group {
			d.notes[i].text = text
			return
		}
	}
	d.notes = append(d.notes, elision{group, text})
}

// rawSchema is the part of a JSON Schema the contract shows.
type rawSchema struct {
	Ref                  string                     `json:"$ref"`
	Type                 json.RawMessage            `json:"type"`
	Format               json.RawMessage            `json:"format"`
	Nullable             json.RawMessage            `json:"nullable"`
	Description          json.RawMessage            `json:"description"`
	Enum                 json.RawMessage            `json:"enum"`
	Const                json.RawMessage            `json:"const"`
	Default              json.RawMessage            `json:"default"`
	Example              json.RawMessage            `json:"example"`
	Examples             json.RawMessage            `json:"examples"`
	Minimum              json.RawMessage            `json:"minimum"`
	Maximum              json.RawMessage            `json:"maximum"`
	ExclusiveMinimum     json.RawMessage            `json:"exclusiveMinimum"`
	ExclusiveMaximum     json.RawMessage            `json:"exclusiveMaximum"`
	MinLength            json.RawMessage            `json:"minLength"`
	MaxLength            json.RawMessage            `json:"maxLength"`
	Pattern              json.RawMessage            `json:"pattern"`
	MinItems             json.RawMessage            `json:"minItems"`
	MaxItems             json.RawMessage            `json:"maxItems"`
	Deprecated           json.RawMessage            `json:"deprecated"`
	ReadOnly             json.RawMessage            `json:"readOnly"`
	WriteOnly            json.RawMessage            `json:"writeOnly"`
	Required             json.RawMessage            `json:"required"`
	Properties           map[string]json.RawMessage `json:"properties"`
	AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	Items                json.RawMessage            `json:"items"`
	AllOf                []json.RawMessage          `json:"allOf"`
	OneOf                []json.RawMessage          `json:"oneOf"`
	AnyOf                []json.RawMessage          `json:"anyOf"`

	bad bool // not a JSON object
}

func parseRawSchema(raw json.RawMessage) *rawSchema {
	rs := &rawSchema{}
	if err := json.Unmarshal(raw, rs); err != nil {
		// Only the composite fields can have the wrong shape; read the
		// object loosely and keep what fits.
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return &rawSchema{bad: true}
		}
		rs = &rawSchema{
			Type: m["type"], Format: m["format"], Nullable: m["nullable"], Description: m["description"],
			Enum: m["enum"], Const: m["const"], Default: m["default"], Example: m["example"], Examples: m["examples"],
			Minimum: m["minimum"], Maximum: m["maximum"], ExclusiveMinimum: m["exclusiveMinimum"],
			ExclusiveMaximum: m["exclusiveMaximum"], MinLength: m["minLength"], MaxLength: m["maxLength"],
			Pattern: m["pattern"], MinItems: m["minItems"], MaxItems: m["maxItems"], Deprecated: m["deprecated"],
			ReadOnly: m["readOnly"], WriteOnly: m["writeOnly"], Required: m["required"],
			AdditionalProperties: m["additionalProperties"], Items: m["items"],
		}
		rs.Ref, _ = field[string](m, "$ref")
		rs.Properties, _ = field[map[string]json.RawMessage](m, "properties")
		rs.AllOf, _ = field[[]json.RawMessage](m, "allOf")
		rs.OneOf, _ = field[[]json.RawMessage](m, "oneOf")
		rs.AnyOf, _ = field[[]json.RawMessage](m, "anyOf")
	}
	return rs
}

func rawString(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func rawBool(raw json.RawMessage) bool { return string(raw) == "true" }

func rawStrings(raw json.RawMessage) []string {
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	var out []string
	if json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return out
}

// rawNumber keeps a JSON number and nothing else.
func rawNumber(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return nil
	}
	return raw
}

// shortValue keeps a JSON value small enough to show.
func shortValue(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || len(raw) > describeShortValue || string(raw) == "null" {
		return nil
	}
	return raw
}

func (d *describer) lookup(ref string) (json.RawMessage, string, bool) { return d.s.lookupRef(ref) }

// lookupRef resolves a local "#/components/..." reference, pointers into a
// component included, and returns the JSON and the name a cycle marker
// shows.
func (s *Spec) lookupRef(ref string) (json.RawMessage, string, bool) {
	rest, ok := strings.CutPrefix(ref, "#/components/")
	if !ok {
		return nil, "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || parts[1] == "" {
		return nil, "", false
	}
	for i, p := range parts {
		if strings.Contains(p, "%") {
			if u, err := url.PathUnescape(p); err == nil {
				p = u
			}
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	raw, ok := s.Components[parts[0]][parts[1]]
	if !ok {
		return nil, "", false
	}
	for _, p := range parts[2:] {
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '[' {
			var arr []json.RawMessage
			i, err := strconv.Atoi(p)
			if json.Unmarshal(raw, &arr) != nil || err != nil || i < 0 || i >= len(arr) {
				return nil, "", false
			}
			raw = arr[i]
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil, "", false
		}
		if raw, ok = m[p]; !ok {
			return nil, "", false
		}
	}
	return raw, strings.Join(parts[1:], "/"), true
}

// resolveObject follows a "$ref" (and chains of them) to an object of the
// given components section.
func (d *describer) resolveObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	for range 16 {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil, false
		}
		ref, ok := field[string](m, "$ref")
		if !ok {
			return m, true
		}
		if raw, _, ok = d.lookup(ref); !ok {
			return nil, false
		}
	}
	return nil, false
}

// build is where a schema sits in the tree being built.
type build struct {
	depth    int
	level    int
	req      bool
	resp     bool
	maxDepth int
	stack    []string // components being expanded, for cycles
	// extraReq names properties required by a sibling of an allOf.
	extraReq []string
}

func (d *describer) schema(raw json.RawMessage, b build) *Schema {
	var rs *rawSchema
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		// true, false, or garbage: nothing to show.
		return &Schema{depth: b.depth, level: b.level, req: b.req}
	}
	rs = parseRawSchema(raw)
	if rs.Ref != "" {
		return d.ref(rs, b)
	}
	return d.node(rs, b)
}

func (d *describer) ref(rs *rawSchema, b build) *Schema {
	target, name, ok := d.lookup(rs.Ref)
	if !ok {
		return &Schema{Ref: rs.Ref, depth: b.depth, level: b.level, req: b.req}
	}
	if slices.Contains(b.stack, name) {
		out := &Schema{Cycle: name, depth: b.depth, level: b.level, req: b.req}
		if t := d.parsedRef(rs.Ref, target); t.Ref == "" {
			out.Type, out.Nullable = schemaType(t)
		}
		return out
	}
	b.stack = append(b.stack[:len(b.stack):len(b.stack)], name)
	t := d.parsedRef(rs.Ref, target)
	var out *Schema
	if t.Ref != "" {
		out = d.ref(t, b)
	} else {
		out = d.node(t, b)
	}
	// OpenAPI 3.1 lets a reference carry its own annotations.
	if desc := rawString(rs.Description); desc != "" {
		out.Description = shortText(desc, 120, 1)
	}
	if rawBool(rs.Nullable) {
		out.Nullable = true
	}
	return out
}

func (d *describer) parsedRef(ref string, raw json.RawMessage) *rawSchema {
	if rs, ok := d.parsed[ref]; ok {
		return rs
	}
	rs := parseRawSchema(raw)
	d.parsed[ref] = rs
	return rs
}

// schemaType reads a schema's type, "null" turned into nullable.
func schemaType(rs *rawSchema) (any, bool) {
	nullable := rawBool(rs.Nullable)
	if t := rawString(rs.Type); t != "" {
		if t == "null" {
			return nil, true
		}
		return t, nullable
	}
	ts := rawStrings(rs.Type)
	var keep []string
	for _, t := range ts {
		if t == "null" {
			nullable = true
		} else {
			keep = append(keep, t)
		}
	}
	switch len(keep) {
	case 0:
	case 1:
		return keep[0], nullable
	default:
		return keep, nullable
	}
	if len(rs.Properties) > 0 {
		return "object", nullable
	}
	if len(rs.Items) > 0 {
		return "array", nullable
	}
	return nil, nullable
}

func (d *describer) node(rs *rawSchema, b build) *Schema {
	d.nodes++
	s := &Schema{depth: b.depth, level: b.level, req: b.req}
	if rs.bad {
		return s
	}
	s.Type, s.Nullable = schemaType(rs)
	s.Format = rawString(rs.Format)
	s.Description = shortText(rawString(rs.Description), 120, 1)
	s.Deprecated = rawBool(rs.Deprecated)
	s.readOnly = rawBool(rs.ReadOnly)
	s.wOnly = rawBool(rs.WriteOnly)
	if len(rs.Enum) > 0 && rs.Enum[0] == '[' {
		var vals []json.RawMessage
		if json.Unmarshal(rs.Enum, &vals) == nil {
			if len(vals) > describeEnumCap {
				s.MoreValues = len(vals) - describeEnumCap
				vals = vals[:describeEnumCap]
				d.note("enum", "long enums ($moreValues)")
			}
			s.Enum = vals
		}
	}
	s.Const = shortValue(rs.Const)
	s.Default = shortValue(rs.Default)
	s.Example = shortValue(rs.Example)
	if s.Example == nil && len(rs.Examples) > 0 && rs.Examples[0] == '[' {
		var ex []json.RawMessage
		if json.Unmarshal(rs.Examples, &ex) == nil && len(ex) > 0 {
			s.Example = shortValue(ex[0])
		}
	}
	s.Minimum, s.Maximum = rawNumber(rs.Minimum), rawNumber(rs.Maximum)
	s.ExclusiveMinimum, s.ExclusiveMaximum = shortValue(rs.ExclusiveMinimum), shortValue(rs.ExclusiveMaximum)
	if string(s.ExclusiveMinimum) == "false" {
		s.ExclusiveMinimum = nil
	}
	if string(s.ExclusiveMaximum) == "false" {
		s.ExclusiveMaximum = nil
	}
	s.MinLength, s.MaxLength = rawNumber(rs.MinLength), rawNumber(rs.MaxLength)
	s.MinItems, s.MaxItems = rawNumber(rs.MinItems), rawNumber(rs.MaxItems)
	if p := rawString(rs.Pattern); len(p) <= describeShortValue {
		s.Pattern = p
	}

	// Past the depth or node budget, optional structure is summarised by
	// its type; required structure goes on, but no schema is shown past
	// maxSchemaDepth levels (load leaves deeper ones out: this bounds the
	// work for an endpoint whatever built it).
	limit := b.maxDepth
	if b.req {
		limit = describeRequiredDepth
	}
	deep := b.depth >= limit || (!b.req && d.nodes > d.cap) || b.level >= maxSchemaDepth
	hasStructure := len(rs.Properties) > 0 || len(rs.Items) > 0 || len(rs.AllOf) > 0 || len(rs.OneOf) > 0 || len(rs.AnyOf) > 0
	if deep && hasStructure {
		if s.Type == nil {
			switch {
			case len(rs.Properties) > 0:
				s.Type = "object"
			case len(rs.Items) > 0:
				s.Type = "array"
			}
		}
		if !b.resp {
			d.note("deep", "optional fields below level "+strconv.Itoa(limit))
		}
		return s
	}

	required := rawStrings(rs.Required)
	if len(b.extraReq) > 0 {
		required = mergeNames(required, b.extraReq)
	}
	if len(rs.Properties) > 0 {
		names := make([]string, 0, len(rs.Properties))
		for n := range rs.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		s.Properties = make(map[string]*Schema, len(names))
		for _, n := range names {
			local := slices.Contains(required, n)
			child := d.schema(rs.Properties[n], build{depth: b.depth + 1, level: b.level + 1, req: b.req && local, resp: b.resp, maxDepth: b.maxDepth, stack: b.stack})
			child.localReq = local
			// A request never sends read-only fields; a response never
			// returns write-only ones.
			if !local && (!b.resp && child.readOnly || b.resp && child.wOnly) {
				continue
			}
			s.Properties[n] = child
		}
		if s.Type == nil {
			s.Type = "object"
		}
	}
	if len(required) > 0 && (s.Type == "object" || s.Type == nil || len(rs.AllOf) > 0) {
		s.Required = required
	}
	if ap := bytes.TrimSpace(rs.AdditionalProperties); len(ap) > 0 && ap[0] == '{' && len(ap) > 2 {
		s.AdditionalProperties = d.schema(ap, build{depth: b.depth + 1, level: b.level + 1, resp: b.resp, maxDepth: b.maxDepth, stack: b.stack})
	}
	if it := bytes.TrimSpace(rs.Items); len(it) > 0 && it[0] == '{' {
		s.Items = d.schema(it, build{depth: b.depth, level: b.level + 1, req: b.req, resp: b.resp, maxDepth: b.maxDepth, stack: b.stack})
		if s.Type == nil {
			s.Type = "array"
		}
	}
	variants := func(list []json.RawMessage, extra []string) []*Schema {
		out := make([]*Schema, 0, len(list))
		for _, v := range list {
			out = append(out, d.schema(v, build{depth: b.depth, level: b.level + 1, req: b.req, resp: b.resp, maxDepth: b.maxDepth, stack: b.stack, extraReq: extra}))
		}
		return out
	}
	if len(rs.AllOf) > 0 {
		// Every part applies, so a name one part requires is required in
		// the others too.
		extra := required
		for _, m := range rs.AllOf {
			if o, ok := d.resolveObject(m); ok {
				extra = mergeNames(extra, rawStrings(o["required"]))
			}
		}
		s.AllOf = variants(rs.AllOf, extra)
	}
	if len(rs.OneOf) > 0 {
		s.OneOf = d.simplify(s, variants(rs.OneOf, nil))
	}
	if len(rs.AnyOf) > 0 {
		s.AnyOf = d.simplify(s, variants(rs.AnyOf, nil))
	}
	if len(s.AllOf) > 0 {
		s.mergeAllOf()
	}
	return s
}

// simplify rewrites the alternatives of s the way a model reads them most
// easily and returns those left: a null alternative becomes nullable, a
// list of constants becomes an enum, and a single alternative joins allOf
// to be merged.
func (d *describer) simplify(s *Schema, alts []*Schema) []*Schema {
	kept := alts[:0]
	for _, v := range alts {
		if v.Nullable && v.Type == nil && v.bare() && v.Const == nil && v.Enum == nil {
			s.Nullable = true
			continue
		}
		kept = append(kept, v)
	}
	if len(kept) == 0 {
		return nil
	}
	values := true
	for _, v := range kept {
		values = values && v.bare() && (v.Const != nil || v.Enum != nil) && v.MoreValues == 0
	}
	if values && s.Enum == nil {
		typ := commonType(Schema{OneOf: kept})
		for _, v := range kept {
			if v.Const != nil {
				s.Enum = append(s.Enum, v.Const)
			} else {
				s.Enum = append(s.Enum, v.Enum...)
			}
		}
		if len(s.Enum) > describeEnumCap {
			s.MoreValues = len(s.Enum) - describeEnumCap
			s.Enum = s.Enum[:describeEnumCap:describeEnumCap]
			d.note("enum", "long enums ($moreValues)")
		}
		if s.Type == nil {
			s.Type = typ
		}
		return nil
	}
	if len(kept) == 1 {
		s.AllOf = append(s.AllOf, kept[0])
		return nil
	}
	return kept
}

// bare reports whether s has no structure: no properties, items or
// alternatives, and is no reference or cycle.
func (s *Schema) bare() bool {
	return s.Properties == nil && s.Items == nil && s.AdditionalProperties == nil && s.AllOf == nil &&
		s.OneOf == nil && s.AnyOf == nil && s.Ref == "" && s.Cycle == "" && s.Fields == nil
}

func mergeNames(a, b []string) []string {
	out := slices.Clip(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// mergeAllOf folds allOf parts into s when they do not conflict: no part
// with its own alternatives or cycle, and one type at most.
func (s *Schema) mergeAllOf() {
	typ := s.Type
	for _, p := range s.AllOf {
		if p.Cycle != "" || p.Ref != "" || len(p.OneOf) > 0 || len(p.AnyOf) > 0 || len(p.AllOf) > 0 {
			return
		}
		if p.Type != nil {
			if typ != nil && !sameType(typ, p.Type) {
				return
			}
			typ = p.Type
		}
		if p.Items != nil && s.Items != nil {
			return
		}
	}
	parts := s.AllOf
	s.AllOf = nil
	s.Type = typ
	for _, p := range parts {
		for n, ps := range p.Properties {
			if s.Properties == nil {
				s.Properties = map[string]*Schema{}
			}
			if _, ok := s.Properties[n]; !ok {
				s.Properties[n] = ps
			}
		}
		s.Required = mergeNames(s.Required, p.Required)
		s.Nullable = s.Nullable || p.Nullable
		s.Deprecated = s.Deprecated || p.Deprecated
		s.readOnly = s.readOnly || p.readOnly
		s.wOnly = s.wOnly || p.wOnly
		if s.Items == nil {
			s.Items = p.Items
		}
		if s.AdditionalProperties == nil {
			s.AdditionalProperties = p.AdditionalProperties
		}
		if s.Description == "" {
			s.Description = p.Description
		}
		if s.Format == "" {
			s.Format = p.Format
		}
		if s.Pattern == "" {
			s.Pattern = p.Pattern
		}
		if s.Enum == nil {
			s.Enum, s.MoreValues = p.Enum, p.MoreValues
		}
		for _, f := range []struct{ dst, src *json.RawMessage }{
			{&s.Const, &p.Const}, {&s.Default, &p.Default}, {&s.Example, &p.Example},
			{&s.Minimum, &p.Minimum}, {&s.Maximum, &p.Maximum},
			{&s.ExclusiveMinimum, &p.ExclusiveMinimum}, {&s.ExclusiveMaximum, &p.ExclusiveMaximum},
			{&s.MinLength, &p.MinLength}, {&s.MaxLength, &p.MaxLength},
			{&s.MinItems, &p.MinItems}, {&s.MaxItems, &p.MaxItems},
		} {
			if *f.dst == nil {
				*f.dst = *f.src
			}
		}
	}
	if s.Type == nil && len(s.Properties) > 0 {
		s.Type = "object"
	}
	for n, ps := range s.Properties {
		if slices.Contains(s.Required, n) {
			ps.localReq = true
		}
	}
}

func sameType(a, b any) bool {
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		return as == bs
	}
	al, aok := a.([]string)
	bl, bok := b.([]string)
	return aok && bok && slices.Equal(al, bl)
}

// render fills the parameters, body, responses and security of c.
func (d *describer) render(e *Endpoint, c *Contract) {
	var op map[string]json.RawMessage
	if json.Unmarshal(e.raw, &op) != nil {
		return
	}
	params, _ := field[[]json.RawMessage](op, "parameters")
	for _, raw := range params {
		p, ok := d.resolveObject(raw)
		if !ok {
			continue
		}
		cp := ContractParam{}
		cp.Name, _ = field[string](p, "name")
		cp.In, _ = field[string](p, "in")
		if cp.Name == "" || cp.In == "" {
			continue
		}
		cp.Required, _ = field[bool](p, "required")
		cp.Required = cp.Required || cp.In == "path"
		cp.Deprecated, _ = field[bool](p, "deprecated")
		desc, _ := field[string](p, "description")
		cp.Description = shortText(desc, 150, 1)
		sch, ok := p["schema"]
		if !ok {
			// A parameter may give its schema under a media type instead.
			if content, err := objectEntries(p["content"]); err == nil && len(content) > 0 {
				var mt map[string]json.RawMessage
				if json.Unmarshal(content[0].Value, &mt) == nil {
					sch, ok = mt["schema"]
				}
			}
		}
		if ok {
			d.nodes, d.cap = 0, describeBodyNodes
			cp.Schema = d.schema(sch, build{req: cp.Required, maxDepth: describeBodyDepth})
			if cp.Schema.Example == nil {
				cp.Schema.Example = shortValue(p["example"])
			}
			// The parameter's description says it once.
			if cp.Description == "" {
				cp.Description = cp.Schema.Description
			}
			cp.Schema.Description = ""
		}
		c.Parameters = append(c.Parameters, cp)
	}

	if rb, ok := op["requestBody"]; ok {
		if body, ok := d.resolveObject(rb); ok {
			cb := &ContractBody{}
			cb.Required, _ = field[bool](body, "required")
			desc, _ := field[string](body, "description")
			cb.Description = shortText(desc, 150, 1)
			content, _ := objectEntries(body["content"])
			var first json.RawMessage
			var differ []string
			for i, en := range content {
				cb.ContentTypes = append(cb.ContentTypes, en.Key)
				var mt map[string]json.RawMessage
				_ = json.Unmarshal(en.Value, &mt)
				if i == 0 {
					first = mt["schema"]
				} else if !bytes.Equal(mt["schema"], first) {
					differ = append(differ, en.Key)
				}
			}
			if len(first) > 0 {
				d.nodes, d.cap = 0, describeBodyNodes
				cb.Schema = d.schema(first, build{req: true, maxDepth: describeBodyDepth})
			}
			if len(differ) > 0 {
				cb.Note = "schema shown is for " + cb.ContentTypes[0] + "; " + strings.Join(differ, ", ") + " take a different one"
			}
			// Some specs (Stripe's) give every GET an optional, empty form
			// body: offering it would only invite a body the call ignores.
			empty := cb.Schema == nil || (cb.Schema.Type == "object" && cb.Schema.bare())
			if (len(cb.ContentTypes) > 0 || cb.Schema != nil) && !(!cb.Required && empty && (e.Method == "GET" || e.Method == "HEAD")) {
				c.RequestBody = cb
			}
		}
	}

	if rs, ok := op["responses"]; ok {
		c.Responses = d.responses(rs)
	}

	for _, alt := range e.Security {
		cs := ContractSecurity{Schemes: []ContractScheme{}}
		for _, name := range alt {
			sc, ok := d.s.Schemes[name]
			if !ok {
				cs.Schemes = append(cs.Schemes, ContractScheme{Name: name, Type: "unknown"})
				continue
			}
			x := ContractScheme{Name: name, Type: sc.Type, Scheme: sc.Scheme}
			if sc.Type == "apiKey" {
				x.In, x.ParamName = sc.In, sc.Name
			}
			cs.Schemes = append(cs.Schemes, x)
		}
		c.Security = append(c.Security, cs)
	}
}

func (d *describer) responses(raw json.RawMessage) *ContractResponses {
	entries, err := objectEntries(raw)
	if err != nil || len(entries) == 0 {
		return nil
	}
	out := &ContractResponses{}
	success := -1
	for i, en := range entries {
		if len(en.Key) == 3 && en.Key[0] == '2' && (success < 0 || en.Key < entries[success].Key) {
			success = i
		}
	}
	if success < 0 {
		for i, en := range entries {
			if en.Key == "default" {
				success = i
			}
		}
	}
	for i, en := range entries {
		resp, ok := d.resolveObject(en.Value)
		if !ok {
			continue
		}
		desc, _ := field[string](resp, "description")
		if i != success {
			if out.Other == nil {
				out.Other = map[string]string{}
			}
			out.Other[en.Key] = shortText(desc, 80, 1)
			continue
		}
		cr := &ContractResponse{Status: en.Key, Description: shortText(desc, 120, 1)}
		content, _ := objectEntries(resp["content"])
		pick := -1
		for j, mt := range content {
			if isJSONType(mt.Key) {
				pick = j
				break
			}
		}
		if pick < 0 && len(content) > 0 {
			pick = 0
		}
		if pick >= 0 {
			cr.ContentType = content[pick].Key
			var mt map[string]json.RawMessage
			if json.Unmarshal(content[pick].Value, &mt) == nil && len(mt["schema"]) > 0 {
				d.nodes, d.cap = 0, describeRespNodes
				cr.Schema = d.schema(mt["schema"], build{resp: true, maxDepth: describeRespDepth})
			}
		}
		out.Success = cr
	}
	return out
}

func isJSONType(mt string) bool {
	mt, _, _ = strings.Cut(strings.ToLower(mt), ";")
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "*/*"
}

// walk calls fn on s and every schema below it, parents first.
func walk(s *Schema, fn func(*Schema)) {
	if s == nil {
		return
	}
	fn(s)
	for _, n := range sortedKeys(s.Properties) {
		walk(s.Properties[n], fn)
	}
	walk(s.AdditionalProperties, fn)
	walk(s.Items, fn)
	for _, list := range [][]*Schema{s.AllOf, s.OneOf, s.AnyOf} {
		for _, v := range list {
			walk(v, fn)
		}
	}
}

func sortedKeys(m map[string]*Schema) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// requestTrees visits the schemas of c's parameters and body.
func (c *Contract) requestTrees(fn func(*Schema)) {
	for i := range c.Parameters {
		walk(c.Parameters[i].Schema, fn)
	}
	if c.RequestBody != nil {
		walk(c.RequestBody.Schema, fn)
	}
}

// responseTree visits the schema of c's success response.
func (c *Contract) responseTree(fn func(*Schema)) {
	if c.Responses != nil && c.Responses.Success != nil {
		walk(c.Responses.Success.Schema, fn)
	}
}

// shrinkStep is one way to make a contract smaller. apply reports whether
// it changed anything.
type shrinkStep struct {
	group string
	note  string
	hard  bool // only to get under MaxBytes, not the target
	apply func(d *describer, c *Contract, excess int) bool
}

// pruneProperties removes the properties deeper than depth in the trees
// visit reaches, keeping those their parent requires when keepRequired.
func pruneProperties(visit func(func(*Schema)), depth int, keepRequired bool) bool {
	changed := false
	visit(func(s *Schema) {
		for n, p := range s.Properties {
			if p.depth > depth && !(keepRequired && p.localReq) {
				delete(s.Properties, n)
				changed = true
			}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.depth > depth && !keepRequired {
			s.AdditionalProperties = nil
			changed = true
		}
		if !keepRequired && s.Properties != nil && len(s.Properties) == 0 {
			s.Properties = nil
			s.Required = nil
		}
	})
	if changed {
		visit(dedupeAlternatives)
	}
	return changed
}

// dedupeAlternatives drops alternatives that pruning made identical, and
// merges a single one left into s.
func dedupeAlternatives(s *Schema) {
	dedupe := func(list []*Schema) []*Schema {
		if len(list) < 2 {
			return list
		}
		seen := map[string]bool{}
		kept := list[:0]
		for _, v := range list {
			b, _ := json.Marshal(v)
			if !seen[string(b)] {
				seen[string(b)] = true
				kept = append(kept, v)
			}
		}
		return kept
	}
	s.OneOf, s.AnyOf = dedupe(s.OneOf), dedupe(s.AnyOf)
	for _, list := range []*[]*Schema{&s.OneOf, &s.AnyOf} {
		if len(*list) == 1 {
			s.AllOf = append(s.AllOf, (*list)[0])
			*list = nil
		}
	}
	if len(s.AllOf) > 0 {
		s.mergeAllOf()
	}
}

// dropLongest clears the longest of texts until about excess bytes are
// saved.
// Cleared texts are kept so that shrink can give back what later, bigger
// cuts made room for.
func (d *describer) dropLongest(texts []*string, excess int) bool {
	texts = slices.DeleteFunc(texts, func(t *string) bool { return *t == "" })
	sort.SliceStable(texts, func(i, j int) bool { return len(*texts[i]) > len(*texts[j]) })
	saved := 0
	for _, t := range texts {
		if saved >= excess {
			break
		}
		saved += len(*t) + len(`,"description":""`)
		d.dropped = append(d.dropped, droppedText{at: t, text: *t, group: d.group})
		*t = ""
	}
	return saved > 0
}

// droppedText is a description a shrink step cleared.
type droppedText struct {
	at    *string
	text  string
	group string
}

// restore gives back dropped descriptions, shortest first, while c stays
// within target; n is c's current size. It returns the new size.
func (d *describer) restore(c *Contract, n, target int) int {
	left := map[string]int{}
	for _, t := range d.dropped {
		left[t.group]++
	}
	var back []droppedText
	for i := len(d.dropped) - 1; i >= 0; i-- {
		t := d.dropped[i]
		q, _ := json.Marshal(t.text)
		cost := len(q) + len(`,"description":`)
		if n+cost > target {
			continue
		}
		*t.at = t.text
		n += cost
		back = append(back, t)
		left[t.group]--
	}
	if len(back) == 0 {
		return n
	}
	saved := slices.Clone(d.notes)
	for g, k := range left {
		if k == 0 {
			d.notes = slices.DeleteFunc(d.notes, func(e elision) bool { return e.group == g })
		}
	}
	c.Elided = d.elided()
	b, _ := json.Marshal(c)
	if len(b) > target {
		// The estimate missed (a text of a schema cut since): undo.
		for _, t := range back {
			*t.at = ""
		}
		d.notes = saved
		c.Elided = d.elided()
		b, _ = json.Marshal(c)
	}
	return len(b)
}

// dropDescriptions clears the descriptions of the schemas visit reaches
// that keep does not keep.
func dropDescriptions(visit func(func(*Schema)), keep func(*Schema) bool) bool {
	changed := false
	visit(func(s *Schema) {
		if s.Description != "" && !keep(s) {
			s.Description = ""
			changed = true
		}
	})
	return changed
}

var shrinkSteps = []shrinkStep{
	{group: "resp", note: "response descriptions", apply: func(d *describer, c *Contract, excess int) bool {
		return dropDescriptions(c.responseTree, func(*Schema) bool { return false })
	}},
	{group: "examples", note: "examples", apply: func(d *describer, c *Contract, excess int) bool {
		changed := false
		drop := func(s *Schema) {
			if s.Example != nil {
				s.Example = nil
				changed = true
			}
		}
		c.requestTrees(drop)
		c.responseTree(drop)
		return changed
	}},
	{group: "resp", note: "response descriptions and fields below level 2", apply: func(d *describer, c *Contract, excess int) bool {
		return pruneProperties(c.responseTree, 2, false)
	}},
	{group: "body", note: "nested body descriptions", apply: func(d *describer, c *Contract, excess int) bool {
		return dropDescriptions(c.requestTrees, func(s *Schema) bool { return s.depth <= 1 })
	}},
	{group: "body", note: "nested body descriptions, optional body fields below level 3", apply: func(d *describer, c *Contract, excess int) bool {
		return pruneProperties(c.requestTrees, 3, true)
	}},
	{group: "resp", note: "response descriptions and fields below level 1", apply: func(d *describer, c *Contract, excess int) bool {
		return pruneProperties(c.responseTree, 1, false)
	}},
	{group: "resp", note: "response detail beyond top-level names and types", apply: func(d *describer, c *Contract, excess int) bool {
		changed := false
		c.responseTree(func(s *Schema) {
			if s.Format != "" || s.Enum != nil || s.Required != nil || s.Pattern != "" || s.Default != nil ||
				s.MinLength != nil || s.MaxLength != nil || s.Minimum != nil || s.Maximum != nil || s.Deprecated {
				changed = true
			}
			*s = Schema{Type: s.Type, Nullable: s.Nullable, Properties: s.Properties, Items: s.Items,
				AdditionalProperties: s.AdditionalProperties, AllOf: s.AllOf, OneOf: s.OneOf, AnyOf: s.AnyOf,
				Cycle: s.Cycle, Ref: s.Ref, depth: s.depth}
		})
		return changed
	}},
	{group: "resp", note: "response detail beyond top-level field names ($fields)", apply: func(d *describer, c *Contract, excess int) bool {
		if c.Responses == nil || c.Responses.Success == nil {
			return false
		}
		changed := false
		outline := func(s *Schema) {
			if s != nil && len(s.Properties) > 0 {
				s.Fields = sortedKeys(s.Properties)
				s.Properties, s.Required, s.AdditionalProperties = nil, nil, nil
				changed = true
			}
		}
		root := c.Responses.Success.Schema
		if root == nil {
			return false
		}
		outline(root)
		if root.Items != nil {
			outline(root.Items)
		}
		for _, list := range [][]*Schema{root.AllOf, root.OneOf, root.AnyOf} {
			for _, v := range list {
				outline(v)
				if v.Items != nil {
					outline(v.Items)
				}
			}
		}
		return changed
	}},
	{group: "resp", note: "response schema", apply: func(d *describer, c *Contract, excess int) bool {
		if c.Responses == nil || c.Responses.Success == nil || c.Responses.Success.Schema == nil {
			return false
		}
		sc := c.Responses.Success.Schema
		outline := &Schema{Type: sc.Type, Nullable: sc.Nullable}
		if sc.Items != nil {
			outline.Items = &Schema{Type: sc.Items.Type}
		}
		b1, _ := json.Marshal(sc)
		b2, _ := json.Marshal(outline)
		if len(b2) >= len(b1) {
			return false
		}
		c.Responses.Success.Schema = outline
		return true
	}},
	{group: "desc", note: "longest descriptions of optional inputs", apply: func(d *describer, c *Contract, excess int) bool {
		var texts []*string
		for i := range c.Parameters {
			if !c.Parameters[i].Required {
				texts = append(texts, &c.Parameters[i].Description)
			}
		}
		c.requestTrees(func(s *Schema) {
			if !s.req || s.depth > 1 {
				texts = append(texts, &s.Description)
			}
		})
		return d.dropLongest(texts, excess)
	}},
	{group: "body", note: "nested body descriptions, optional fields of nested objects", apply: func(d *describer, c *Contract, excess int) bool {
		return pruneProperties(c.requestTrees, 1, true)
	}},
	{group: "optdeep", note: "structure of optional fields below level 4", apply: func(d *describer, c *Contract, excess int) bool {
		return collapseBelow(c.requestTrees, 4, true)
	}},
	{group: "optdeep", note: "structure of optional fields below level 2", apply: func(d *describer, c *Contract, excess int) bool {
		return collapseBelow(c.requestTrees, 2, true)
	}},
	{group: "desc", note: "longest descriptions", apply: func(d *describer, c *Contract, excess int) bool {
		texts := []*string{&c.Description}
		for i := range c.Parameters {
			texts = append(texts, &c.Parameters[i].Description)
		}
		if c.RequestBody != nil {
			texts = append(texts, &c.RequestBody.Description)
		}
		if c.Responses != nil && c.Responses.Success != nil {
			texts = append(texts, &c.Responses.Success.Description)
		}
		c.requestTrees(func(s *Schema) { texts = append(texts, &s.Description) })
		return d.dropLongest(texts, excess)
	}},
	{group: "errors", note: "error descriptions", apply: func(d *describer, c *Contract, excess int) bool {
		changed := false
		if c.Responses != nil {
			for k, v := range c.Responses.Other {
				if v != "" {
					c.Responses.Other[k] = ""
					changed = true
				}
			}
		}
		return changed
	}},
	{group: "enum", note: "optional enums beyond 3 values ($moreValues)", hard: true, apply: func(d *describer, c *Contract, excess int) bool {
		changed := false
		c.requestTrees(func(s *Schema) {
			if !s.req && len(s.Enum) > 3 {
				s.MoreValues += len(s.Enum) - 3
				s.Enum = s.Enum[:3]
				changed = true
			}
		})
		return changed
	}},
	{group: "optbody", note: "all optional body fields", hard: true, apply: func(d *describer, c *Contract, excess int) bool {
		return pruneProperties(c.requestTrees, 0, true)
	}},
	{group: "optparams", note: "all optional parameters", hard: true, apply: func(d *describer, c *Contract, excess int) bool {
		kept := c.Parameters[:0]
		for _, p := range c.Parameters {
			if p.Required {
				kept = append(kept, p)
			}
		}
		changed := len(kept) != len(c.Parameters)
		c.Parameters = kept
		return changed
	}},
	{group: "errors", note: "error responses", hard: true, apply: func(d *describer, c *Contract, excess int) bool {
		if c.Responses == nil || c.Responses.Other == nil {
			return false
		}
		c.Responses.Other = nil
		return true
	}}}

var collapseSteps = makeCollapseSteps()

// collapseSteps are the last resort, when what a call needs is itself over
// MaxBytes (deeply nested alternatives, as in OpenAI's item unions): the
// structure below a level goes, required fields included; the names an
// object requires stay in its required list.
func makeCollapseSteps() []shrinkStep {
	var out []shrinkStep
	for level := 12; level >= 1; level-- {
		out = append(out, shrinkStep{group: "collapse", note: "structure below level " + strconv.Itoa(level) + ", required fields included (required lists keep their names)", hard: true,
			apply: func(d *describer, c *Contract, excess int) bool { return collapseBelow(c.requestTrees, level, false) }})
	}
	return out
}

// commonType is the type every alternative of s shares, if any.
func commonType(s Schema) any {
	var t any
	for _, list := range [][]*Schema{s.AllOf, s.OneOf, s.AnyOf} {
		for _, v := range list {
			switch {
			case v.Type == nil:
				return nil
			case t == nil:
				t = v.Type
			case !sameType(t, v.Type):
				return nil
			}
		}
	}
	if t == nil && s.Properties != nil {
		return "object"
	}
	return t
}

// collapseBelow cuts the structure of the schemas at level or deeper, only
// of optional ones when optionalOnly.
func collapseBelow(visit func(func(*Schema)), level int, optionalOnly bool) bool {
	changed := false
	visit(func(s *Schema) {
		if s.level < level || (optionalOnly && s.req) || (s.Properties == nil && s.Items == nil && s.AdditionalProperties == nil &&
			s.AllOf == nil && s.OneOf == nil && s.AnyOf == nil) {
			return
		}
		// Children are visited after this returns: with the fields cleared
		// here, they are not.
		old := *s
		*s = Schema{Type: s.Type, Format: s.Format, Nullable: s.Nullable, Description: s.Description,
			Enum: s.Enum, MoreValues: s.MoreValues, Required: s.Required, Cycle: s.Cycle, Ref: s.Ref,
			depth: s.depth, level: s.level, req: s.req, localReq: s.localReq}
		if s.Type == nil {
			s.Type = commonType(old)
		}
		changed = true
	})
	if changed {
		visit(dedupeAlternatives)
	}
	return changed
}

// shrink applies the shrink steps in order until c marshals within target
// (soft steps) or max (hard steps), then writes the elided note.
func (d *describer) shrink(c *Contract, target, max int) {
	size := func() int {
		c.Elided = d.elided()
		b, _ := json.Marshal(c)
		return len(b)
	}
	n := size()
	hard := false
	run := func(steps []shrinkStep) {
		for _, st := range steps {
			limit := target
			if st.hard {
				limit = max
			}
			if n <= limit {
				continue
			}
			d.group = st.group
			if st.apply(d, c, n-limit+len(st.note)+2) {
				d.note(st.group, st.note)
				n = size()
				hard = hard || st.hard
			}
		}
	}
	run(shrinkSteps)
	if !hard && n < target && len(d.dropped) > 0 {
		// Steps after a description cut may have cut much more: give back
		// what fits. (Not after hard steps, which move parameters.)
		n = d.restore(c, n, target)
	}
	if n > max {
		// Cutting what the call needs is worth it only if that gets the
		// contract under the bound: try the deepest cut on a copy first.
		trial := c.clone()
		saved := slices.Clone(d.notes)
		last := collapseSteps[len(collapseSteps)-1]
		last.apply(d, trial, n-max)
		d.note(last.group, last.note)
		trial.Elided = d.elided()
		d.notes = saved
		if b, _ := json.Marshal(trial); len(b) <= max {
			run(collapseSteps)
		}
	}
	c.Elided = d.elided()
}

// clone copies c deeply enough that shrinking the copy's request schemas
// leaves c alone.
func (c *Contract) clone() *Contract {
	out := *c
	out.Parameters = slices.Clone(c.Parameters)
	for i := range out.Parameters {
		out.Parameters[i].Schema = out.Parameters[i].Schema.clone()
	}
	if c.RequestBody != nil {
		body := *c.RequestBody
		body.Schema = body.Schema.clone()
		out.RequestBody = &body
	}
	return &out
}

func (s *Schema) clone() *Schema {
	if s == nil {
		return nil
	}
	out := *s
	if s.Properties != nil {
		out.Properties = make(map[string]*Schema, len(s.Properties))
		for n, p := range s.Properties {
			out.Properties[n] = p.clone()
		}
	}
	out.AdditionalProperties = s.AdditionalProperties.clone()
	out.Items = s.Items.clone()
	cloneList := func(list []*Schema) []*Schema {
		if list == nil {
			return nil
		}
		l := make([]*Schema, len(list))
		for i, v := range list {
			l[i] = v.clone()
		}
		return l
	}
	out.AllOf, out.OneOf, out.AnyOf = cloneList(s.AllOf), cloneList(s.OneOf), cloneList(s.AnyOf)
	return &out
}

func (d *describer) elided() string {
	if len(d.notes) == 0 {
		return ""
	}
	texts := make([]string, len(d.notes))
	for i, n := range d.notes {
		texts[i] = n.text
	}
	return strings.Join(texts, "; ")
}

var (
	mdLink  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	htmlTag = regexp.MustCompile(`</?[a-zA-Z][^>]*>`)
)

// shortText cleans markdown and HTML out of s and keeps at most sentences
// sentences within max bytes.
func shortText(s string, max, sentences int) string {
	if s == "" {
		return ""
	}
	if strings.Contains(s, "](") {
		s = mdLink.ReplaceAllString(s, "$1")
	}
	if strings.Contains(s, "<") {
		s = htmlTag.ReplaceAllString(s, "")
	}
	s = strings.ReplaceAll(s, "**", "")
	s = strings.Join(strings.Fields(s), " ")
	// Keep whole sentences while they fit: ". " ends one.
	end := 0
	for n := 0; n < sentences && end < len(s); n++ {
		next := len(s)
		if i := strings.Index(s[end:], ". "); i >= 0 {
			next = end + i + 1
		}
		if next > max {
			break
		}
		end = next
	}
	if end > 0 {
		return s[:end]
	}
	return firstSentences(s, max)
}
