package invoke

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/spec"
)

// param is a parameter with what serialising it needs.
type param struct {
	Name          string
	In            string
	Required      bool
	Style         string
	Explode       bool
	AllowReserved bool
	// JSONContent is set when the parameter is described by content with a
	// JSON media type: the value is sent as JSON text.
	JSONContent bool
	Schema      *openapi3.Schema
}

// defaultStyle returns the OpenAPI default style for a location.
func defaultStyle(in string) string {
	switch in {
	case "query", "cookie":
		return "form"
	}
	return "simple"
}

// paramsFromOperation lists the operation's parameters, path-level ones
// merged in (operation-level ones win), with style and explode resolved.
func paramsFromOperation(op *spec.Operation) []param {
	var out []param
	seen := map[string]bool{}
	add := func(p *openapi3.Parameter) {
		if p == nil {
			return
		}
		key := p.In + "\x00" + p.Name
		if seen[key] {
			return
		}
		seen[key] = true
		q := param{Name: p.Name, In: p.In, Required: p.Required || p.In == "path", AllowReserved: p.AllowReserved}
		q.Style = p.Style
		if q.Style == "" {
			q.Style = defaultStyle(p.In)
		}
		if p.Explode != nil {
			q.Explode = *p.Explode
		} else {
			q.Explode = q.Style == "form"
		}
		if p.Schema != nil {
			q.Schema = p.Schema.Value
		}
		for ct, mt := range p.Content {
			if answer.IsJSONType(ct) {
				q.JSONContent = true
				if mt != nil && mt.Schema != nil {
					q.Schema = mt.Schema.Value
				}
			}
			break
		}
		out = append(out, q)
	}
	for _, r := range op.Op.Parameters {
		if r != nil {
			add(r.Value)
		}
	}
	if op.PathItem != nil {
		for _, r := range op.PathItem.Parameters {
			if r != nil {
				add(r.Value)
			}
		}
	}
	return out
}

// paramsFromEndpoint lists the catalog's parameters with default styles,
// for when the operation cannot be rebuilt.
func paramsFromEndpoint(e *spec.Endpoint) []param {
	out := make([]param, 0, len(e.Params))
	for _, p := range e.Params {
		style := defaultStyle(p.In)
		out = append(out, param{Name: p.Name, In: p.In, Required: p.Required || p.In == "path", Style: style, Explode: style == "form"})
	}
	return out
}

// pair is one escaped name=value of a query string or cookie header.
type pair struct{ k, v string }

// escaper escapes one name or value for its place in the request.
type escaper func(string) string

func identity(s string) string { return s }

// normalize turns typed Go slices and maps (from Go callers) into the
// []any and map[string]any that JSON decoding gives.
func normalize(v any) any {
	switch v.(type) {
	case nil, string, bool, float64, float32, int, int64, int32, uint, uint64, uint32, json.Number, []any, map[string]any:
		return v
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return v // []byte: a scalar, printed as text
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = rv.Index(i).Interface()
		}
		return out
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return v
		}
		out := make(map[string]any, rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			out[iter.Key().String()] = iter.Value().Interface()
		}
		return out
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return normalize(rv.Elem().Interface())
	}
	return v
}

// scalarString renders a scalar as parameter text. Arrays and objects
// nested inside an array or object are sent as JSON text.
func scalarString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case json.Number:
		return x.String()
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case uint:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case []byte:
		return string(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// sortedKeys returns an object's keys in order: JSON objects decoded into
// maps have lost theirs, and a stable order keeps requests reproducible.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// serializeSimple renders a path or header value in style simple, label or
// matrix. Delimiters stay literal; names and values go through esc.
func serializeSimple(name, style string, explode bool, v any, esc escaper) string {
	v = normalize(v)
	var prefix, sep, kv string
	switch style {
	case "label":
		prefix, sep, kv = ".", ",", ","
		if explode {
			sep, kv = ".", "="
		}
	case "matrix":
		prefix, sep, kv = ";"+esc(name)+"=", ",", ","
		if explode {
			kv = "="
		}
	default: // simple
		sep, kv = ",", ","
		if explode {
			kv = "="
		}
	}
	var b strings.Builder
	switch x := v.(type) {
	case []any:
		if style == "matrix" && explode {
			sep = ";" + esc(name) + "="
		}
		b.WriteString(prefix)
		for i, it := range x {
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(esc(scalarString(it)))
		}
	case map[string]any:
		if style == "matrix" && explode {
			prefix, sep = ";", ";"
		}
		b.WriteString(prefix)
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(esc(k))
			b.WriteString(kv)
			b.WriteString(esc(scalarString(x[k])))
		}
	default:
		if style == "matrix" && v == nil {
			return ";" + esc(name)
		}
		b.WriteString(prefix)
		b.WriteString(esc(scalarString(v)))
	}
	return b.String()
}

// serializeForm renders a query or cookie value in style form,
// spaceDelimited, pipeDelimited or deepObject as name=value pairs.
func serializeForm(name, style string, explode bool, v any, esc escaper) []pair {
	return serializeFormKV(name, style, explode, v, esc, esc)
}

// serializeFormKV is serializeForm with names (the parameter's, and an
// object's keys) escaped by keyEsc and values by valEsc: a form body
// field with allowReserved keeps reserved characters only in its values.
func serializeFormKV(name, style string, explode bool, v any, keyEsc, valEsc escaper) []pair {
	v = normalize(v)
	n := keyEsc(name)
	sep := ","
	switch style {
	case "spaceDelimited":
		sep = valEsc(" ")
	case "pipeDelimited":
		sep = valEsc("|")
	case "deepObject":
		var out []pair
		deepPairsKV(&out, n, v, keyEsc, valEsc)
		return out
	}
	switch x := v.(type) {
	case []any:
		if explode {
			out := make([]pair, 0, len(x))
			for _, it := range x {
				out = append(out, pair{n, valEsc(scalarString(it))})
			}
			return out
		}
		parts := make([]string, len(x))
		for i, it := range x {
			parts[i] = valEsc(scalarString(it))
		}
		return []pair{{n, strings.Join(parts, sep)}}
	case map[string]any:
		keys := sortedKeys(x)
		if explode && style == "form" {
			out := make([]pair, 0, len(keys))
			for _, k := range keys {
				out = append(out, pair{keyEsc(k), valEsc(scalarString(x[k]))})
			}
			return out
		}
		parts := make([]string, 0, 2*len(keys))
		for _, k := range keys {
			parts = append(parts, keyEsc(k), valEsc(scalarString(x[k])))
		}
		return []pair{{n, strings.Join(parts, sep)}}
	}
	return []pair{{n, valEsc(scalarString(v))}}
}

// deepPairsKV renders v under prefix in bracket notation: objects as
// prefix[key], arrays as prefix[0] (the way Stripe reads form bodies and
// deepObject query parameters), recursively. Brackets stay literal; keys
// go through keyEsc, leaf values through valEsc.
func deepPairsKV(out *[]pair, prefix string, v any, keyEsc, valEsc escaper) {
	switch x := normalize(v).(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			deepPairsKV(out, prefix+"["+keyEsc(k)+"]", x[k], keyEsc, valEsc)
		}
	case []any:
		for i, it := range x {
			deepPairsKV(out, prefix+"["+strconv.Itoa(i)+"]", it, keyEsc, valEsc)
		}
	case nil:
		// A null leaf is left out, as if not given.
	default:
		*out = append(*out, pair{prefix, valEsc(scalarString(x))})
	}
}

// isUnreserved reports the RFC 3986 unreserved characters.
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

const upperHex = "0123456789ABCDEF"

// escapeKeep percent-encodes every byte of s except unreserved ones and
// those in keep.
func escapeKeep(s, keep string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isUnreserved(c) && strings.IndexByte(keep, c) < 0 {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) || strings.IndexByte(keep, c) >= 0 {
			b = append(b, c)
			continue
		}
		b = append(b, '%', upperHex[c>>4], upperHex[c&15])
	}
	return string(b)
}

// escapePath escapes a path parameter value: "/", "?", "#", "%" and
// everything else outside the unreserved set and ":@" is encoded, so a
// value stays inside its own path segment.
func escapePath(s string) string { return escapeKeep(s, ":@") }

// escapeQuery escapes a query name or value.
func escapeQuery(s string) string { return escapeKeep(s, "") }

// escapeQueryReserved escapes a value of a parameter with allowReserved:
// reserved characters stay literal, except those that would end or split
// the query string ("&", "=", "#") and "%".
func escapeQueryReserved(s string) string { return escapeKeep(s, ":/?@!$'()*+,;[]") }

// escapeCookie escapes a cookie value: RFC 6265 cookie-octets allow no
// space, DQUOTE, comma, semicolon or backslash.
func escapeCookie(s string) string { return escapeKeep(s, "!#$&'()*+/:<=>?@[]^`{|}") }
