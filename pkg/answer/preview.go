package answer

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
)

// The previewer behind PreviewJSON: it fits a decoded JSON value into a
// byte budget as a valid-JSON preview, trying tighter and looser limits
// (depth, items, strings, keys) until the largest that fits.

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
