package spec

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
)

// This file builds a Contract's Schema nodes: types, properties and
// alternatives, simplified, with simple allOf merged into one object.

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
	d.facets(s, rs)

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

	d.structure(s, rs, b)
	if len(s.AllOf) > 0 {
		s.mergeAllOf()
	}
	return s
}

// facets reads the schema's own keywords: type, format, description, flags,
// enum, values and bounds.
func (d *describer) facets(s *Schema, rs *rawSchema) {
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
}

// structure reads what the schema holds: properties and what they require,
// additional properties, items, and the allOf, oneOf and anyOf variants.
func (d *describer) structure(s *Schema, rs *rawSchema, b build) {
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
	// A discriminator's property picks the alternative, so a value without
	// it matches none (the validator refuses it): every alternative shows
	// it required.
	var picks []string
	if p := discriminatorProperty(rs.Discriminator); p != "" {
		picks = []string{p}
	}
	if len(rs.OneOf) > 0 {
		s.OneOf = d.simplify(s, variants(rs.OneOf, picks))
	}
	if len(rs.AnyOf) > 0 {
		s.AnyOf = d.simplify(s, variants(rs.AnyOf, picks))
	}
}

// discriminatorProperty is the propertyName of an OpenAPI discriminator
// object, or "" when raw is none.
func discriminatorProperty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var d struct {
		PropertyName string `json:"propertyName"`
	}
	if json.Unmarshal(raw, &d) != nil {
		return ""
	}
	return d.PropertyName
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
