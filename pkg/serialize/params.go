package serialize

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Pair is one escaped name=value of a query string or cookie header.
type Pair struct{ K, V string }

// Escaper escapes one name or value for its place in the request.
type Escaper func(string) string

// Identity leaves a name or value as it is.
func Identity(s string) string { return s }

// Normalize turns typed Go slices and maps (from Go callers) into the
// []any and map[string]any that JSON decoding gives.
func Normalize(v any) any {
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
		return Normalize(rv.Elem().Interface())
	}
	return v
}

// ScalarString renders a scalar as parameter text. Arrays and objects
// nested inside an array or object are sent as JSON text.
func ScalarString(v any) string {
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

// SortedKeys returns an object's keys in order: JSON objects decoded into
// maps have lost theirs, and a stable order keeps requests reproducible.
func SortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Simple renders a path or header value in style simple, label or
// matrix. Delimiters stay literal; names and values go through esc.
func Simple(name, style string, explode bool, v any, esc Escaper) string {
	v = Normalize(v)
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
			b.WriteString(esc(ScalarString(it)))
		}
	case map[string]any:
		if style == "matrix" && explode {
			prefix, sep = ";", ";"
		}
		b.WriteString(prefix)
		for i, k := range SortedKeys(x) {
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(esc(k))
			b.WriteString(kv)
			b.WriteString(esc(ScalarString(x[k])))
		}
	default:
		if style == "matrix" && v == nil {
			return ";" + esc(name)
		}
		b.WriteString(prefix)
		b.WriteString(esc(ScalarString(v)))
	}
	return b.String()
}

// Form renders a query or cookie value in style form,
// spaceDelimited, pipeDelimited or deepObject as name=value pairs.
func Form(name, style string, explode bool, v any, esc Escaper) []Pair {
	return FormKV(name, style, explode, v, esc, esc)
}

// FormKV is Form with names (the parameter's, and an
// object's keys) escaped by keyEsc and values by valEsc: a form body
// field with allowReserved keeps reserved characters only in its values.
func FormKV(name, style string, explode bool, v any, keyEsc, valEsc Escaper) []Pair {
	v = Normalize(v)
	n := keyEsc(name)
	sep := ","
	switch style {
	case "spaceDelimited":
		sep = valEsc(" ")
	case "pipeDelimited":
		sep = valEsc("|")
	case "deepObject":
		var out []Pair
		deepPairsKV(&out, n, v, keyEsc, valEsc)
		return out
	}
	switch x := v.(type) {
	case []any:
		if explode {
			out := make([]Pair, 0, len(x))
			for _, it := range x {
				out = append(out, Pair{n, valEsc(ScalarString(it))})
			}
			return out
		}
		parts := make([]string, len(x))
		for i, it := range x {
			parts[i] = valEsc(ScalarString(it))
		}
		return []Pair{{n, strings.Join(parts, sep)}}
	case map[string]any:
		keys := SortedKeys(x)
		if explode && style == "form" {
			out := make([]Pair, 0, len(keys))
			for _, k := range keys {
				out = append(out, Pair{keyEsc(k), valEsc(ScalarString(x[k]))})
			}
			return out
		}
		parts := make([]string, 0, 2*len(keys))
		for _, k := range keys {
			parts = append(parts, keyEsc(k), valEsc(ScalarString(x[k])))
		}
		return []Pair{{n, strings.Join(parts, sep)}}
	}
	return []Pair{{n, valEsc(ScalarString(v))}}
}

// deepPairsKV renders v under prefix in bracket notation: objects as
// prefix[key], arrays as prefix[0] (the way Stripe reads form bodies and
// deepObject query parameters), recursively. Brackets stay literal; keys
// go through keyEsc, leaf values through valEsc.
func deepPairsKV(out *[]Pair, prefix string, v any, keyEsc, valEsc Escaper) {
	switch x := Normalize(v).(type) {
	case map[string]any:
		for _, k := range SortedKeys(x) {
			deepPairsKV(out, prefix+"["+keyEsc(k)+"]", x[k], keyEsc, valEsc)
		}
	case []any:
		for i, it := range x {
			deepPairsKV(out, prefix+"["+strconv.Itoa(i)+"]", it, keyEsc, valEsc)
		}
	case nil:
		// A null leaf is left out, as if not given.
	default:
		*out = append(*out, Pair{prefix, valEsc(ScalarString(x))})
	}
}

// isUnreserved reports the RFC 3986 unreserved characters.
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

const upperHex = "0123456789ABCDEF"

// EscapeKeep percent-encodes every byte of s except unreserved ones and
// those in keep.
func EscapeKeep(s, keep string) string {
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

// EscapePath escapes a path parameter value: "/", "?", "#", "%" and
// everything else outside the unreserved set and ":@" is encoded, so a
// value stays inside its own path segment.
func EscapePath(s string) string { return EscapeKeep(s, ":@") }

// EscapeQuery escapes a query name or value.
func EscapeQuery(s string) string { return EscapeKeep(s, "") }

// EscapeQueryReserved escapes a value of a parameter with allowReserved:
// reserved characters stay literal, except those that would end or split
// the query string ("&", "=", "#") and "%".
func EscapeQueryReserved(s string) string { return EscapeKeep(s, ":/?@!$'()*+,;[]") }

// EscapeCookie escapes a cookie value: RFC 6265 cookie-octets allow no
// space, DQUOTE, comma, semicolon or backslash.
func EscapeCookie(s string) string { return EscapeKeep(s, "!#$&'()*+/:<=>?@[]^`{|}") }

// ValidHeaderName reports an RFC 9110 token.
func ValidHeaderName(s string) bool {
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

// BadHeaderValue explains why a header value cannot be sent, or "".
func BadHeaderValue(s string) string {
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
