// Package sweep calls a sample of every corpus spec's operations through
// specgate, as an agent would (inspect, then arguments made from what it
// shows), against Stoplight Prism validating each request against the spec.
// Its test runs only under `make sweep` (see sweep_test.go).
package sweep

import (
	"encoding/json"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/specgate/specgate/pkg/spec"
)

// gen makes a value valid for a schema as inspect shows it. full also fills
// the optional properties of objects (query parameters in deepObject or form
// style are sent whole); otherwise only the required ones are filled.
type gen struct {
	full bool
}

// value is a value for s, or nil when s allows only null or says nothing.
func (g gen) value(s *spec.Schema, depth int) any {
	if s == nil || depth > 8 {
		return nil
	}
	if v, ok := rawValue(s.Const); ok {
		return v
	}
	if len(s.Enum) > 0 {
		for _, raw := range s.Enum {
			if v, ok := rawValue(raw); ok && v != nil {
				return v
			}
		}
	}
	if v, ok := rawValue(s.Default); ok && v != nil && fits(s, v) {
		return v
	}
	if len(s.AllOf) > 0 {
		return g.value(mergeAllOf(s), depth+1)
	}
	if len(s.Properties) > 0 {
		// An object whose alternatives add to it (anyOf [{required:
		// [pattern]}, ...]): the object and its first alternative.
		for _, alts := range [][]*spec.Schema{s.OneOf, s.AnyOf} {
			if len(alts) > 0 && alts[0] != nil {
				m := *s
				m.OneOf, m.AnyOf, m.AllOf = nil, nil, []*spec.Schema{alts[0]}
				return g.value(mergeAllOf(&m), depth+1)
			}
		}
	}
	for _, alts := range [][]*spec.Schema{s.OneOf, s.AnyOf} {
		if len(alts) > 0 {
			// The first alternative that is not null and not a $cycle stub.
			for _, a := range alts {
				if a != nil && a.Cycle == "" && typeOf(a) != "null" {
					if v := g.value(a, depth+1); v != nil {
						return v
					}
				}
			}
		}
	}
	if s.Format == "binary" && typeOf(s) == "string" {
		return formats["binary"]
	}
	if v, ok := rawValue(s.Example); ok && v != nil && fits(s, v) {
		return v
	}
	switch typeOf(s) {
	case "string":
		return str(s)
	case "integer":
		return number(s, true)
	case "number":
		return number(s, false)
	case "boolean":
		return true
	case "array":
		n := 1
		if m := intOf(s.MinItems, 1); m > n {
			n = m
		}
		item := g.value(s.Items, depth+1)
		if item == nil {
			item = "sweep"
		}
		out := make([]any, 0, n)
		for i := range n {
			out = append(out, distinct(s.Items, item, i))
		}
		return out
	case "object", "":
		if len(s.Properties) == 0 && s.AdditionalProperties == nil && typeOf(s) == "" {
			return nil
		}
		out := map[string]any{}
		names := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			p := s.Properties[name]
			if !slices.Contains(s.Required, name) && (!g.full || depth > 0 || p.Deprecated) {
				continue
			}
			if v := g.value(p, depth+1); v != nil {
				out[name] = v
			}
		}
		for _, name := range s.Required {
			if _, ok := out[name]; !ok {
				out[name] = "sweep"
			}
		}
		return out
	}
	return nil
}

// distinct is the i-th item of an array made from item, different from the
// others in case the schema asks for uniqueItems.
func distinct(s *spec.Schema, item any, i int) any {
	if i == 0 {
		return item
	}
	switch v := item.(type) {
	case string:
		if _, known := formats[s.Format]; len(s.Enum) > 0 || known {
			return v
		}
		for _, c := range []string{v + strconv.Itoa(i), strconv.Itoa(i) + v} {
			if fits(&spec.Schema{Type: "string", Pattern: s.Pattern, MaxLength: s.MaxLength}, c) {
				return c
			}
		}
	case int64:
		return v + int64(i)
	}
	return item
}

// mergeAllOf folds the parts of an allOf into one object schema.
func mergeAllOf(s *spec.Schema) *spec.Schema {
	m := *s
	m.AllOf = nil
	m.Properties = map[string]*spec.Schema{}
	for k, v := range s.Properties {
		m.Properties[k] = v
	}
	for _, p := range s.AllOf {
		if p == nil {
			continue
		}
		if len(p.AllOf) > 0 {
			p = mergeAllOf(p)
		}
		if m.Type == nil {
			m.Type = p.Type
		}
		if m.Format == "" {
			m.Format = p.Format
		}
		if m.Pattern == "" {
			m.Pattern = p.Pattern
		}
		if len(m.Enum) == 0 {
			m.Enum = p.Enum
		}
		if m.Items == nil {
			m.Items = p.Items
		}
		for k, v := range p.Properties {
			m.Properties[k] = v
		}
		m.Required = append(m.Required, p.Required...)
	}
	return &m
}

// typeOf is the schema's type, the first non-null one of a list.
func typeOf(s *spec.Schema) string {
	switch t := s.Type.(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if x, ok := x.(string); ok && x != "null" {
				return x
			}
		}
	}
	if len(s.Properties) > 0 || s.AdditionalProperties != nil {
		return "object"
	}
	if s.Items != nil {
		return "array"
	}
	return ""
}

func rawValue(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	return v, true
}

// fits reports whether an example or default can stand for a generated value:
// of the schema's type, and matching its pattern.
func fits(s *spec.Schema, v any) bool {
	switch typeOf(s) {
	case "string":
		x, ok := v.(string)
		if !ok {
			return false
		}
		if s.Pattern != "" {
			re, err := regexp.Compile(s.Pattern)
			if err != nil || !re.MatchString(x) {
				return false
			}
		}
		n := utf8.RuneCountInString(x)
		return n >= intOf(s.MinLength, 0) && (len(s.MaxLength) == 0 || n <= intOf(s.MaxLength, n))
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "number":
		_, ok := v.(float64)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return false
}

func intOf(raw json.RawMessage, def int) int {
	if len(raw) == 0 {
		return def
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return def
	}
	return int(f)
}

// formats are values of the string formats the corpus uses.
var formats = map[string]string{
	"date-time":     "2024-01-02T03:04:05Z",
	"date":          "2024-01-02",
	"time":          "03:04:05Z",
	"email":         "sweep@example.com",
	"uri":           "https://example.com/sweep",
	"url":           "https://example.com/sweep",
	"uri-reference": "https://example.com/sweep",
	"uuid":          "123e4567-e89b-42d3-a456-426614174000",
	"ipv4":          "192.0.2.1",
	"ipv6":          "2001:db8::1",
	"hostname":      "example.com",
	"byte":          "c3dlZXA=",
	"int32":         "1",
	"int64":         "1",
	"decimal":       "1",
	"duration":      "P1D",
	"binary":        "c3dlZXA=", // invoke takes file contents as base64
	"password":      "sweep-password",
}

func str(s *spec.Schema) string {
	v := "sweep"
	if f, ok := formats[s.Format]; ok {
		v = f
	}
	if s.Pattern != "" {
		if m, ok := matching(s.Pattern); ok {
			v = m
		}
	}
	if min := intOf(s.MinLength, 0); utf8.RuneCountInString(v) < min {
		v += strings.Repeat("a", min-utf8.RuneCountInString(v))
	}
	if max := intOf(s.MaxLength, -1); max >= 0 && utf8.RuneCountInString(v) > max {
		v = string([]rune(v)[:max])
	}
	return v
}

func number(s *spec.Schema, integer bool) any {
	lo, hasLo := floatOf(s.Minimum)
	hi, hasHi := floatOf(s.Maximum)
	v := 1.0
	if hasLo && v < lo {
		v = lo
	}
	if hasHi && v > hi {
		v = hi
	}
	// exclusiveMinimum is a bool in 3.0 and a number in 3.1.
	if x, ok := floatOf(s.ExclusiveMinimum); ok && v <= x {
		v = x + 1
	} else if string(s.ExclusiveMinimum) == "true" && hasLo && v <= lo {
		v = lo + 1
	}
	if x, ok := floatOf(s.ExclusiveMaximum); ok && v >= x {
		v = x - 1
	} else if string(s.ExclusiveMaximum) == "true" && hasHi && v >= hi {
		v = hi - 1
	}
	if integer {
		return int64(v)
	}
	return v
}

func floatOf(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

// matching is a short string that matches pattern, made by walking its
// syntax tree; ok is false when Go's regexp cannot parse it (lookarounds)
// or the string made does not match after all.
func matching(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	walk(&b, re.Simplify())
	out := b.String()
	if ok, _ := regexp.MatchString(pattern, out); !ok {
		return "", false
	}
	return out, true
}

func walk(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		b.WriteRune(pick(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
	case syntax.OpCapture:
		walk(b, re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			walk(b, s)
		}
	case syntax.OpAlternate:
		walk(b, re.Sub[0])
	case syntax.OpPlus:
		walk(b, re.Sub[0])
	case syntax.OpRepeat:
		n := re.Min
		if n == 0 && re.Max != 0 {
			n = 1
		}
		for range n {
			walk(b, re.Sub[0])
		}
	case syntax.OpQuest, syntax.OpStar:
		// Zero occurrences: the shortest match.
	}
}

// pick is a character of a class, a letter or digit when it has one.
func pick(ranges []rune) rune {
	if len(ranges) == 0 {
		return 'a'
	}
	for _, want := range []rune{'a', 'A', '1', '0'} {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= want && want <= ranges[i+1] {
				return want
			}
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < ranges[i]+128; r++ {
			if r > ' ' && r < 0x7f {
				return r
			}
		}
	}
	return ranges[0]
}
