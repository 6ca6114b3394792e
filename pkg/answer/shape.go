package answer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Shaped describes a body that comes back as a preview instead of whole.
type Shaped struct {
	Reason     string   `json:"reason"`               // why: "over_budget"; empty when the preview is the whole value
	Bytes      int      `json:"bytes"`                // size of the whole body, bytes
	Items      int      `json:"items,omitempty"`      // length of the main array, when there is one
	Shown      int      `json:"shown,omitempty"`      // how many of those items the preview shows
	ItemFields []string `json:"itemFields,omitempty"` // field names of the main array's object items (union, first-seen order, capped)
	Path       string   `json:"path,omitempty"`       // where the main array is, as a jq path: "." or ".data" or ".response.users"
	Pages      int      `json:"pages,omitempty"`      // set by the caller when several pages were concatenated
}

// ReasonOverBudget is Shaped.Reason for a body whose encoding is larger than
// the budget it had to fit.
const ReasonOverBudget = "over_budget"

// MinPreviewBudget is the smallest budget PreviewJSON and PreviewText work
// to: a smaller one is raised to it. Every value has a summary that fits it.
const MinPreviewBudget = 256

const (
	// maxItemFields caps Shaped.ItemFields; fieldScanItems bounds how many
	// items are read to build it, so a 100,000-item page costs no more
	// than a 1,000-item one.
	maxItemFields  = 40
	fieldScanItems = 1000
	// envelopeMaxKeys is the most keys an object may have and still be a
	// list envelope ({"object":"list","data":[...],"has_more":true}); a
	// resource with dozens of fields and a small array of labels is not one.
	envelopeMaxKeys = 16
	// maxKeyBytes is the longest key shown in a preview; longer keys are
	// counted among the left-out keys, as cutting them could make two equal.
	maxKeyBytes = 128
	// maxNumberBytes is the longest number kept as a number; a longer one
	// is shown as a cut string, since a number cannot be cut.
	maxNumberBytes = 64
	// maxNameBytes bounds each key name listed in a summary.
	maxNameBytes = 24
	// smallBytes is the size under which a container past the depth shows
	// whole at least: a summary of {"href":"https://…"} would be no shorter.
	smallBytes = 96
	// maxPreviewDepth caps the recursion: containers nested deeper are
	// summarised even when the whole value would fit the budget.
	maxPreviewDepth = 1000
	unlimited       = int(^uint(0) >> 1)
)

// MaxAnswerDepth is how many levels of objects and arrays a body the model
// reads may nest: an upstream's 300-deep object passes through specgate, but
// the parsers of some MCP clients fail past about 200 levels, and the
// envelope around the body adds a few. A deeper body is previewed, its
// containers at this level summarised, however small it is.
const MaxAnswerDepth = 64

// ReasonTooDeep is Shaped.Reason for a body that would fit the budget but
// nests deeper than MaxAnswerDepth: the preview is the whole body with its
// containers at that level summarised.
const ReasonTooDeep = "too_deep"

// deeperThan reports whether v nests more than n levels of objects and
// arrays (a scalar is at level 0, [] at 1). It stops at level n+1, so a
// value of any depth costs at most a walk of its first n+1 levels.
func deeperThan(v any, n int) bool {
	switch t := v.(type) {
	case map[string]any:
		if n < 1 {
			return true
		}
		for _, x := range t {
			if deeperThan(x, n-1) {
				return true
			}
		}
	case []any:
		if n < 1 {
			return true
		}
		for _, x := range t {
			if deeperThan(x, n-1) {
				return true
			}
		}
	}
	return false
}

// JSONDeeperThan reports whether the JSON text b nests more than n levels
// of objects and arrays, as deeperThan does for a decoded value, without
// decoding it: a caller holding JSON text learns whether it may be shown
// whole before it pays for a view.
func JSONDeeperThan(b []byte, n int) bool {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > n {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// DecodeJSON parses a JSON body keeping numbers exact (json.Number); it
// rejects trailing data. Invalid UTF-8 in strings becomes U+FFFD.
func DecodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the top-level value")
	}
	return v, nil
}

// EncodeJSON encodes v compactly without HTML escaping (no \u003c), as the
// answer does.
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// MainArray finds the body's main array: the value itself when it is an
// array; else, when v is a list envelope (an object of at most 16 keys), the
// longest array among its fields (Stripe {"data":[...]}, Kubernetes
// {"items":[...]}, Slack {"ok":true,"members":[...]}); else the longest array
// one level down in such envelopes ({"response":{"users":[...]}}). A
// non-empty array wins over an empty one, a shallower over a deeper, then the
// longest, then the first key in byte order. The path is a jq path: ".",
// ".data", ".response.users", `.["odd key"]`.
func MainArray(v any) (path string, items []any, ok bool) {
	keys, items, ok := mainArray(v)
	if !ok {
		return "", nil, false
	}
	return jqPath(keys), items, true
}

// mainArray is MainArray with the path as keys.
func mainArray(v any) ([]string, []any, bool) {
	switch t := v.(type) {
	case []any:
		return []string{}, t, true
	case map[string]any:
		if len(t) > envelopeMaxKeys {
			return nil, nil, false
		}
		top, topItems, topOK := longestArray(t)
		if topOK && len(topItems) > 0 {
			return []string{top}, topItems, true
		}
		var path []string
		var items []any
		found := false
		for _, k := range slices.Sorted(maps.Keys(t)) {
			m, isMap := t[k].(map[string]any)
			if !isMap || len(k) > maxKeyBytes || len(m) > envelopeMaxKeys {
				continue
			}
			if sub, a, ok := longestArray(m); ok && (!found || len(a) > len(items)) {
				path, items, found = []string{k, sub}, a, true
			}
		}
		if found && len(items) > 0 {
			return path, items, true
		}
		if topOK {
			return []string{top}, topItems, true
		}
		return path, items, found
	}
	return nil, nil, false
}

// longestArray returns the longest array field of m.
func longestArray(m map[string]any) (string, []any, bool) {
	var key string
	var items []any
	found := false
	for k, v := range m {
		a, isArray := v.([]any)
		if !isArray || len(k) > maxKeyBytes {
			continue
		}
		if !found || len(a) > len(items) || len(a) == len(items) && k < key {
			key, items, found = k, a, true
		}
	}
	return key, items, found
}

// jqPath writes keys as a jq path.
func jqPath(keys []string) string {
	if len(keys) == 0 {
		return "."
	}
	var b []byte
	for _, k := range keys {
		if isIdentifier(k) {
			b = append(b, '.')
			b = append(b, k...)
			continue
		}
		b = append(b, `.[`...)
		b = appendJSONString(b, k)
		b = append(b, ']')
	}
	return string(b)
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// PreviewJSON returns a preview of v whose compact JSON encoding (as
// EncodeJSON writes it) is at most budget bytes, and the Shaped summary
// (Bytes = size). A budget under MinPreviewBudget is raised to it. The
// preview is always valid JSON; when the whole of v fits, it is v's encoding
// and Reason is empty.
//
// A preview leaves things out in these ways, each visible where it happens:
//
//   - a string cut short ends with "…[+N bytes]", N the bytes left out of it
//     (a number longer than 64 bytes becomes such a string);
//   - an array showing k of its n items ends with one more string element
//     "…[+N more items]", N = n-k (k may be 0 for an array nested deep);
//   - an object nested too deep becomes {"…": "object: N keys (a, b, …)"};
//   - an object showing only some keys gets one more key "…" whose value is
//     "N more keys (c, d, …)".
//
// The marker key is "…" unless the object holds that key itself, when it
// is "…1", "…2" and so on. Keys appear in byte order, the marker key
// among them, so decoding and re-encoding the preview gives the same bytes.
//
// A container past the depth allowance whose encoding is short (at least
// 96 bytes, more as room allows) shows whole rather than as a summary.
//
// Whatever the budget, the preview nests at most MaxAnswerDepth levels: a
// container at that level which holds containers is summarised as above
// (Reason is ReasonTooDeep when all else shows whole).
//
// The preview is built to fill the budget: first the least detail that
// still shows each item's own fields, with as many items of the main array
// (see MainArray) as fit; then, with that count fixed, more keys, deeper
// objects, longer strings, more nested items while they fit, and what room
// is left to showing whole the small objects past the depth, then the next
// level of the first ones.
func PreviewJSON(v any, size, budget int) (json.RawMessage, Shaped) {
	budget = max(budget, MinPreviewBudget)
	sh := Shaped{Bytes: size}
	switch v.(type) {
	case nil, bool, string, json.Number, map[string]any, []any:
	default:
		// A value that did not come from DecodeJSON (a float64, a struct)
		// is brought to that form, so the fallback can summarise it.
		b, err := EncodeJSON(v)
		if err != nil {
			b = []byte("null")
		}
		if v, err = DecodeJSON(b); err != nil {
			v = nil
		}
	}
	p := &previewer{root: v, limit: budget, sorted: map[uintptr][]string{}}
	path, items, hasMain := mainArray(v)
	if hasMain {
		p.path, p.hasMain = path, true
		sh.Path, sh.Items = jqPath(path), len(items)
		sh.ItemFields = p.itemFields(items)
	}
	p.buf = make([]byte, 0, min(budget, 1<<16)+64)
	whole := limits{depth: maxPreviewDepth, items: unlimited, main: unlimited, str: unlimited, keys: unlimited, names: 0}
	if p.try(whole) && !p.hit.any() {
		sh.Shown = len(items)
		if p.capped {
			// The whole value, but for what nests past MaxAnswerDepth.
			sh.Reason = ReasonTooDeep
			if size > budget {
				sh.Reason = ReasonOverBudget
			}
		}
		return json.RawMessage(bytes.Clone(p.buf)), sh
	}
	sh.Reason = ReasonOverBudget

	lim, ok := p.base(len(items))
	if !ok {
		return json.RawMessage(p.fallback()), sh
	}
	if hasMain && lim.main > 0 {
		lim.main = p.mostItems(lim, len(items))
	}
	lim = p.enrich(lim)
	if !p.try(lim) { // enrich ends on an accepted trial; this cannot fail
		return json.RawMessage(p.fallback()), sh
	}
	sh.Shown = min(lim.main, len(items))
	return json.RawMessage(bytes.Clone(p.buf)), sh
}

// PreviewText returns the head of a text body such that its JSON string
// encoding fits budget (raised to MinPreviewBudget when smaller), ending with
// "…[+N bytes]", N the bytes of b left out. The head is valid UTF-8, cut on a
// rune boundary, each invalid byte replaced by U+FFFD. When the whole of b
// fits, it comes back whole (invalid bytes replaced) and Reason is empty.
func PreviewText(b []byte, budget int) (string, Shaped) {
	budget = max(budget, MinPreviewBudget)
	sh := Shaped{Bytes: len(b)}
	room := budget - 2 // the quotes
	markerMax := len(cutMarker(len(b)))
	enc, fit := 0, 0 // encoded bytes so far; bytes of b that fit with a marker
	whole := true
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		n := textRuneLen(r)
		if enc+n > room {
			whole = false
			break
		}
		enc += n
		i += size
		if enc+markerMax <= room {
			fit = i
		}
	}
	if whole {
		return validText(b), sh
	}
	sh.Reason = ReasonOverBudget
	return validText(b[:fit]) + cutMarker(len(b)-fit), sh
}

// validText is b with each invalid byte replaced by U+FFFD.
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return string(out)
}

// cutMarker says how many bytes were left out of a cut string.
func cutMarker(left int) string {
	return "…[+" + strconv.Itoa(left) + " bytes]"
}

// textRuneLen is the size of r in a JSON string as EncodeJSON writes it;
// an invalid byte (utf8.RuneError) takes the 3 bytes of U+FFFD.
func textRuneLen(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '\u2028' || r == '\u2029':
		return 6
	default:
		return utf8.RuneLen(r) // U+FFFD included: 3
	}
}

// RuneCut returns the largest index ≤ n that does not split a UTF-8
// sequence of s (an invalid byte is its own sequence).
func RuneCut(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for back := 0; back < utf8.UTFMax && n-back > 0; back++ {
		if utf8.RuneStart(s[n-back]) {
			return n - back
		}
	}
	return n
}

// appendStringCut appends s as a JSON string, cut after at most n bytes with
// the cut marker.
func appendStringCut(dst []byte, s string, n int) []byte {
	if len(s) <= n {
		return appendJSONString(dst, s)
	}
	cut := RuneCut(s, n)
	dst = append(dst, '"')
	dst = appendEscaped(dst, s[:cut])
	dst = append(dst, "…[+"...)
	dst = strconv.AppendInt(dst, int64(len(s)-cut), 10)
	return append(dst, ` bytes]"`...)
}

// appendStringFit appends the longest head of s whose JSON string, with the
// cut marker, is at most room bytes.
func appendStringFit(dst []byte, s string, room int) []byte {
	room -= 2 + len(cutMarker(len(s)))
	enc, cut := 0, 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		n := textRuneLen(r)
		if enc+n > room {
			break
		}
		enc += n
		i += size
		cut = i
	}
	if cut == len(s) {
		return appendJSONString(dst, s)
	}
	dst = append(dst, '"')
	dst = appendEscaped(dst, s[:cut])
	dst = append(dst, cutMarker(len(s)-cut)...)
	return append(dst, '"')
}

func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendEscaped appends s escaped as encoding/json does with HTML escaping
// off, so sizes measured here are the sizes the answer has. One difference:
// an invalid byte becomes U+FFFD itself, not \ufffd: the same character in
// half the bytes, and a preview then re-encodes to exactly itself.
func appendEscaped(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// isNumber reports whether s is a JSON number literal.
func isNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}
