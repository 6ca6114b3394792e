package spec

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// This file reads schemas from the compact operation JSON and resolves
// their local references, caching each resolved component once.

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
	Discriminator        json.RawMessage            `json:"discriminator"`

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
			AdditionalProperties: m["additionalProperties"], Items: m["items"], Discriminator: m["discriminator"],
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
	raw, ok := s.Component(parts[0], parts[1])
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
