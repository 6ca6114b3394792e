package answer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"reflect"
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

// limits are the allowances of one preview trial.
type limits struct {
	depth int // a container deeper than this is summarised; the root is at 0, main array items at 1
	items int // items shown of an array other than the main one
	main  int // items shown of the main array
	str   int // bytes of a string kept before the cut marker
	keys  int // keys shown of an object (the key leading to the main array is always shown)
	names int // key names listed in a summary
	whole int // containers past depth whose encoding takes at most this many bytes show whole
	extra int // containers just past depth shown anyway (one level of them), first come first served
}

// baseLimits go from rich to poor: the first that fits with one item of
// the main array is where the item count is maximised.
var baseLimits = []limits{
	{depth: 1, items: 3, str: 64, keys: 64, names: 6, whole: smallBytes},
	{depth: 1, items: 2, str: 32, keys: 32, names: 4, whole: smallBytes},
	{depth: 1, items: 1, str: 16, keys: 16, names: 3, whole: smallBytes},
	{depth: 0, items: 1, str: 16, keys: 8, names: 2},
	{depth: 0, items: 0, str: 8, keys: 4, names: 0},
}

// hits records which allowances left something out in a trial: raising
// one that left nothing out would change nothing.
type hits struct{ depth, items, main, str, keys, names bool }

func (h hits) any() bool { return h.depth || h.items || h.main || h.str || h.keys || h.names }

// previewer writes previews of one value under trial limits. It keeps the
// sorted keys of each object it meets, since a preview is written a dozen
// times and sorting dominates otherwise.
type previewer struct {
	root     any
	path     []string // keys from the root to the main array
	hasMain  bool
	limit    int
	lim      limits
	buf      []byte
	over     bool // buf passed limit: the trial stops
	hit      hits
	extra    int // containers just past depth shown so far in this trial
	pastSeen int // containers just past depth met so far in this trial
	sorted   map[uintptr][]string
	names    []string // a stack of the names listed in markers of the objects being written
	level    int      // how many containers enclose the value being written
	capped   bool     // a container at MaxAnswerDepth was summarised in this trial
	keep     []any    // values converted during the preview, alive so no map address is reused
}

// try writes a preview under lim and reports whether it fits.
func (p *previewer) try(lim limits) bool {
	p.lim, p.buf, p.over, p.hit, p.names = lim, p.buf[:0], false, hits{}, p.names[:0]
	p.extra, p.pastSeen, p.level, p.capped = 0, 0, 0, false
	on := -1
	if p.hasMain {
		on = 0
	}
	p.value(p.root, 0, on)
	return !p.over && len(p.buf) <= p.limit
}

// base returns the richest base limits that fit with one item of the main
// array shown, or with none as a last resort.
func (p *previewer) base(n int) (limits, bool) {
	for _, l := range baseLimits {
		l.main = min(1, n)
		if p.try(l) {
			return l, true
		}
	}
	if n > 0 {
		l := baseLimits[len(baseLimits)-1]
		if p.try(l) {
			return l, true
		}
	}
	return limits{}, false
}

// mostItems returns the largest count of main array items, from lim.main
// up to n, that fits under lim.
func (p *previewer) mostItems(lim limits, n int) int {
	lo, hi := lim.main, n // lo fits
	if lo >= hi {
		return lo
	}
	if lim.main = hi; p.try(lim) {
		return hi
	}
	hi-- // hi is now the largest count not yet ruled out
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if lim.main = mid; p.try(lim) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// enrich raises each allowance in turn while the preview still fits,
// dropping an allowance once raising it overflows or it left nothing out.
// One more level is often several times the size of the last, so what room
// is left then goes first to showing whole the containers past the depth
// up to the largest size that fits (all the items' small objects alike),
// then, in document order, to as many of the next level as fit.
func (p *previewer) enrich(lim limits) limits {
	lim = p.raise(lim)
	if !p.try(lim) || !p.hit.depth {
		return lim
	}
	lo, hi := lim.whole, p.limit // lo fits
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if lim.whole = mid; p.try(lim) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	lim.whole = lo
	if !p.try(lim) {
		return lim
	}
	lo, hi = 0, p.pastSeen // lo fits
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if lim.extra = mid; p.try(lim) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	lim.extra = lo
	return lim
}

// raise is the first part of enrich.
func (p *previewer) raise(lim limits) limits {
	steps := []struct {
		field *int
		hit   func(hits) bool
		max   int
	}{
		{&lim.keys, func(h hits) bool { return h.keys }, unlimited},
		{&lim.depth, func(h hits) bool { return h.depth }, maxPreviewDepth},
		{&lim.str, func(h hits) bool { return h.str }, unlimited},
		{&lim.items, func(h hits) bool { return h.items }, unlimited},
		{&lim.names, func(h hits) bool { return h.names }, 12},
	}
	if !p.try(lim) {
		return lim
	}
	last := p.hit
	done := make([]bool, len(steps))
	for progress := true; progress; {
		progress = false
		for i, s := range steps {
			if done[i] {
				continue
			}
			if *s.field >= s.max {
				done[i] = true
			}
			if done[i] || !s.hit(last) {
				continue // a raise elsewhere may still make this one matter
			}
			old := *s.field
			*s.field = grow(old, s.max)
			if p.try(lim) {
				last, progress = p.hit, true
			} else {
				*s.field, done[i] = old, true
			}
		}
	}
	return lim
}

// grow is the next allowance after n: by one while small, then by half.
func grow(n, limit int) int {
	next := n + 1
	if n >= 8 {
		next = n + n/2
	}
	if next > limit || next < n {
		return limit
	}
	return next
}

// fallback is the summary of the root that fits any budget of at least
// MinPreviewBudget: a count for an object or array, the head of a string.
func (p *previewer) fallback() []byte {
	p.buf, p.level = p.buf[:0], 0
	switch t := p.root.(type) {
	case map[string]any:
		p.lim = limits{}
		p.summary(t)
	case []any:
		p.buf = append(p.buf, '[')
		p.moreItems(len(t))
		p.buf = append(p.buf, ']')
	case string:
		p.buf = appendStringFit(p.buf, t, p.limit)
	case json.Number:
		if len(t) <= p.limit && isNumber(string(t)) {
			p.buf = append(p.buf, t...)
		} else {
			p.buf = appendStringFit(p.buf, string(t), p.limit)
		}
	default:
		p.buf = append(p.buf, "null"...)
	}
	return bytes.Clone(p.buf)
}

// itemFields is the union of the keys of the object items, first seen first.
func (p *previewer) itemFields(items []any) []string {
	var fields []string
	seen := map[string]bool{}
	for _, it := range items[:min(len(items), fieldScanItems)] {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		known := true
		for k := range m {
			if !seen[k] {
				known = false
				break
			}
		}
		if known {
			continue
		}
		for _, k := range p.keysOf(m) {
			if !seen[k] {
				seen[k] = true
				fields = append(fields, k)
				if len(fields) == maxItemFields {
					return fields
				}
			}
		}
	}
	return fields
}

// keysOf returns m's keys in byte order, sorting each object once.
func (p *previewer) keysOf(m map[string]any) []string {
	id := reflect.ValueOf(m).Pointer()
	if keys, ok := p.sorted[id]; ok && len(keys) == len(m) {
		return keys
	}
	keys := slices.Sorted(maps.Keys(m))
	p.sorted[id] = keys
	return keys
}

func (p *previewer) value(v any, depth, on int) {
	if p.over {
		return
	}
	switch t := v.(type) {
	case nil:
		p.buf = append(p.buf, "null"...)
	case bool:
		p.buf = strconv.AppendBool(p.buf, t)
	case string:
		p.str(t)
	case json.Number:
		p.number(string(t))
	case map[string]any:
		p.object(t, depth, on)
	case []any:
		p.array(t, depth, on)
	default:
		// Values that did not come from DecodeJSON (float64, structs) are
		// brought to the same form first.
		b, err := EncodeJSON(t)
		if err != nil {
			p.buf = append(p.buf, "null"...)
			break
		}
		if d, err := DecodeJSON(b); err == nil {
			p.keep = append(p.keep, d)
			p.value(d, depth, on)
		} else {
			p.buf = append(p.buf, "null"...)
		}
	}
	if len(p.buf) > p.limit {
		p.over = true
	}
}

func (p *previewer) number(s string) {
	switch {
	case s == "":
		p.buf = append(p.buf, '0') // as encoding/json writes an empty json.Number
	case len(s) > maxNumberBytes || !isNumber(s):
		p.hit.str = true
		p.buf = appendStringCut(p.buf, s, min(p.lim.str, maxNumberBytes))
	default:
		p.buf = append(p.buf, s...)
	}
}

func (p *previewer) str(s string) {
	if min(len(s), p.lim.str) > p.limit-len(p.buf) {
		// Its encoding is at least as long: stop before escaping megabytes.
		p.over = true
		return
	}
	if len(s) > p.lim.str {
		p.hit.str = true
	}
	p.buf = appendStringCut(p.buf, s, p.lim.str)
}

func (p *previewer) array(a []any, depth, on int) {
	if len(a) == 0 {
		p.buf = append(p.buf, "[]"...)
		return
	}
	var k, childDepth int
	switch {
	case p.atCap(a):
		k = 0
	case p.hasMain && on == len(p.path):
		k, childDepth = p.lim.main, 1
		if k < len(a) {
			p.hit.main = true
		}
	case depth > p.lim.depth:
		switch p.fate(a, depth) {
		case showWhole:
			p.whole(a)
			return
		case summarise:
			k = 0
		default:
			k, childDepth = p.lim.items, depth+1
			if k < len(a) {
				p.hit.items = true
			}
		}
	default:
		k, childDepth = p.lim.items, depth+1
		if k < len(a) {
			p.hit.items = true
		}
	}
	k = min(k, len(a))
	p.buf = append(p.buf, '[')
	p.level++
	for i, item := range a[:k] {
		if i > 0 {
			p.buf = append(p.buf, ',')
		}
		p.value(item, childDepth, -1)
		if p.over {
			return
		}
	}
	p.level--
	if k < len(a) {
		if k > 0 {
			p.buf = append(p.buf, ',')
		}
		p.moreItems(len(a) - k)
	}
	p.buf = append(p.buf, ']')
}

// atCap reports whether container v, about to be written, sits at
// MaxAnswerDepth and holds containers, which would nest past it: it is then
// summarised whatever the limits, as the whole body would be too deep for
// some clients to parse.
func (p *previewer) atCap(v any) bool {
	if p.level+1 < MaxAnswerDepth || !deeperThan(v, 1) {
		return false
	}
	p.capped = true
	return true
}

// What becomes of a non-empty container past the depth allowance.
const (
	summarise = iota
	showWhole // it is small: lim.whole
	expand    // just past the depth, let through by lim.extra
)

// fate decides what becomes of container v past the depth allowance,
// counting those just past it for lim.extra.
func (p *previewer) fate(v any, depth int) int {
	p.hit.depth = true
	if room := p.lim.whole; room > 0 && sizeWithin(v, &room) {
		return showWhole
	}
	if depth == p.lim.depth+1 {
		p.pastSeen++
		if p.extra < p.lim.extra {
			p.extra++
			return expand
		}
	}
	return summarise
}

// sizeWithin takes v's encoded size from *room, stopping once it is spent.
func sizeWithin(v any, room *int) bool {
	switch t := v.(type) {
	case nil:
		*room -= 4
	case bool:
		*room -= 5
	case json.Number:
		*room -= len(t)
	case string:
		*room -= len(t) + 2 // a lower bound: escapes are measured when written
	case []any:
		*room -= 1 + len(t)
		for _, it := range t {
			if *room < 0 || !sizeWithin(it, room) {
				return false
			}
		}
	case map[string]any:
		*room -= 1 + 2*len(t)
		for k, it := range t {
			if *room -= len(k) + 2; *room < 0 || !sizeWithin(it, room) {
				return false
			}
		}
	default:
		return false
	}
	return *room >= 0
}

// whole writes a small container in full, as it leaves nothing out.
func (p *previewer) whole(v any) {
	lim, h := p.lim, p.hit
	p.lim = limits{depth: maxPreviewDepth, items: unlimited, main: unlimited, str: unlimited, keys: unlimited}
	p.value(v, 0, -1)
	p.lim, p.hit = lim, h
}

// moreItems writes the marker string of an array's left-out items.
func (p *previewer) moreItems(n int) {
	p.buf = append(p.buf, `"…[+`...)
	p.buf = strconv.AppendInt(p.buf, int64(n), 10)
	p.buf = append(p.buf, ` more items]"`...)
}

// markerKey is the key of an object's marker: "…", or "…1", "…2" and so
// on when m holds that key itself.
func markerKey(m map[string]any) string {
	k := "…"
	for i := 1; ; i++ {
		if _, taken := m[k]; !taken {
			return k
		}
		k = "…" + strconv.Itoa(i)
	}
}

// summary writes {"…": "object: N keys (a, b, …)"} for m.
func (p *previewer) summary(m map[string]any) {
	p.hit.depth = true
	keys := p.keysOf(m)
	p.buf = append(p.buf, '{')
	p.buf = appendJSONString(p.buf, markerKey(m))
	p.buf = append(p.buf, `:"object: `...)
	p.buf = strconv.AppendInt(p.buf, int64(len(m)), 10)
	p.buf = append(p.buf, " keys"...)
	p.listNames(keys[:min(p.lim.names, len(keys))], len(keys))
	p.buf = append(p.buf, `"}`...)
}

// listNames writes " (a, b, …)" inside a marker string: names are the
// listed ones of total.
func (p *previewer) listNames(names []string, total int) {
	if len(names) == 0 {
		return
	}
	if len(names) < total {
		p.hit.names = true
	}
	p.buf = append(p.buf, " ("...)
	for i, n := range names {
		if i > 0 {
			p.buf = append(p.buf, ", "...)
		}
		p.buf = appendEscaped(p.buf, cutName(n))
	}
	if len(names) < total {
		p.buf = append(p.buf, ", …"...)
	}
	p.buf = append(p.buf, ')')
}

func cutName(s string) string {
	if len(s) <= maxNameBytes {
		return s
	}
	return s[:RuneCut(s, maxNameBytes)] + "…"
}

func (p *previewer) object(m map[string]any, depth, on int) {
	if len(m) == 0 {
		p.buf = append(p.buf, "{}"...)
		return
	}
	if p.atCap(m) {
		d := p.hit.depth // the cap is no allowance a richer trial could raise
		p.summary(m)
		p.hit.depth = d
		return
	}
	onPath := p.hasMain && on >= 0 && on < len(p.path)
	if !onPath && depth > p.lim.depth {
		switch p.fate(m, depth) {
		case showWhole:
			p.whole(m)
			return
		case summarise:
			p.summary(m)
			return
		}
	}
	pathKey := ""
	if onPath {
		pathKey = p.path[on]
	}
	keys := p.keysOf(m)
	// First pass: which keys show, and the first names of those that do
	// not, kept on p.names above those of the enclosing objects.
	shown := 0
	start := len(p.names)
	defer func() { p.names = p.names[:start] }()
	for _, k := range keys {
		if p.showKey(k, shown, pathKey) {
			shown++
		} else if len(p.names)-start < p.lim.names {
			p.names = append(p.names, k)
		}
	}
	names := p.names[start:len(p.names):len(p.names)]
	left := len(keys) - shown
	if left > 0 {
		p.hit.keys = true
	}
	mk := markerKey(m)
	p.buf = append(p.buf, '{')
	first, marked := true, left == 0
	writeMarker := func() {
		if !first {
			p.buf = append(p.buf, ',')
		}
		first, marked = false, true
		p.buf = appendJSONString(p.buf, mk)
		p.buf = append(p.buf, ':', '"')
		p.buf = strconv.AppendInt(p.buf, int64(left), 10)
		p.buf = append(p.buf, " more keys"...)
		p.listNames(names, left)
		p.buf = append(p.buf, '"')
	}
	shown = 0
	for _, k := range keys {
		if !p.showKey(k, shown, pathKey) {
			continue
		}
		shown++
		if !marked && k > mk {
			writeMarker()
		}
		if !first {
			p.buf = append(p.buf, ',')
		}
		first = false
		p.buf = appendJSONString(p.buf, k)
		p.buf = append(p.buf, ':')
		childOn := -1
		if onPath && k == pathKey {
			childOn = on + 1
		}
		p.level++
		p.value(m[k], depth+1, childOn)
		p.level--
		if p.over {
			return
		}
	}
	if !marked {
		writeMarker()
	}
	p.buf = append(p.buf, '}')
}

// showKey reports whether key k shows, given how many keys before it do.
func (p *previewer) showKey(k string, shown int, pathKey string) bool {
	if pathKey != "" && k == pathKey {
		return true
	}
	return shown < p.lim.keys && len(k) <= maxKeyBytes
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
