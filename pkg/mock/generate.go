package mock

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// Bounds that keep a generated value small: real schemas (GitHub's, Stripe's)
// nest objects dozens of levels deep through optional properties.
const (
	// optionalDepth is the nesting below which optional properties and extra
	// array items are left out.
	optionalDepth = 5
	// maxDepth cuts even required properties (a required chain that deep is
	// a cycle in all but name).
	maxDepth = 24
	// maxNodes bounds the values of one answer; past it only what is
	// required is generated, and a oneOf takes its first branch rather than
	// trying others (nested oneOfs would otherwise multiply the work).
	maxNodes = 4000
	// hardNodes bounds even required values: past it each value is the
	// shortest of its type (a required chain of minItems arrays multiplies).
	hardNodes = 5 * maxNodes
	// maxStringBytes bounds one generated string, maxItems one array,
	// maxProps the entries added to reach minProperties.
	maxStringBytes = 64 << 10
	maxItems       = 64
	maxProps       = 256
	// maxAnswerBytes bounds the text of all the strings of one answer; past
	// it strings are no longer padded to their minLength.
	maxAnswerBytes = 1 << 20
)

// generator makes a value that satisfies a schema. The same seed gives the
// same value. A generator is used by one goroutine.
type generator struct {
	rng *rand.Rand
	// response leaves writeOnly properties out (they must not appear in an
	// answer); otherwise readOnly ones are left out.
	response bool
	// v31 validates as OpenAPI 3.1 does (JSON Schema 2020-12), the way
	// kin-openapi checks that document's requests and answers.
	v31 bool
	// stack holds the schemas being generated, to cut $ref cycles; those
	// from level on describe the same value (a schema, its allOf parts, the
	// oneOf branch being tried), the ones before it the values it is in.
	stack []*openapi3.Schema
	level int
	// depth counts the objects and arrays the current value is in.
	depth int
	nodes int
	// bytes counts the string bytes generated, up to maxAnswerBytes.
	bytes int
	// clipped is the first bound a value was cut at, "" if none: the value
	// made then is short and may fail its schema, which the caller warns of.
	clipped string
}

// clip notes that a value was cut at a bound.
func (g *generator) clip(why string) {
	if g.clipped == "" {
		g.clipped = why
	}
}

// newGenerator returns a generator seeded with seed, for an answer
// (response) or a request of doc (nil: OpenAPI 3.0).
func newGenerator(seed uint64, response bool, doc *openapi3.T) *generator {
	return &generator{
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		response: response,
		v31:      doc != nil && doc.IsOpenAPI31OrLater(),
	}
}

// Value returns a value for ref, or false when none can be made without
// following a cycle (the caller leaves an optional place empty).
func (g *generator) Value(ref *openapi3.SchemaRef) (any, bool) {
	if ref == nil || ref.Value == nil {
		return "string", true
	}
	return g.value(ref.Value, "")
}

func (g *generator) onStack(s *openapi3.Schema) bool {
	return slices.Contains(g.stack, s)
}

func (g *generator) opts() []openapi3.SchemaValidationOption {
	opts := []openapi3.SchemaValidationOption{openapi3.VisitAsRequest()}
	if g.response {
		opts[0] = openapi3.VisitAsResponse()
	}
	if g.v31 {
		opts = append(opts, openapi3.EnableJSONSchema2020())
	}
	return opts
}

// valid reports whether v satisfies s; examples written in specs often do
// not, and only a valid one is used inside a generated value.
func (g *generator) valid(s *openapi3.Schema, v any) bool {
	return s.VisitJSON(v, g.opts()...) == nil
}

// value generates for s; hint is the property name it fills, if any.
func (g *generator) value(s *openapi3.Schema, hint string) (any, bool) {
	if s.Always != nil {
		return "string", *s.Always
	}
	if g.onStack(s) || g.depth >= maxDepth || len(g.stack) >= 8*maxDepth {
		if s.Nullable || s.Type.IncludesNull() {
			return nil, true
		}
		return nil, false
	}
	g.nodes++
	if g.nodes > hardNodes {
		g.clip("the answer passes " + strconv.Itoa(hardNodes) + " values")
		return shortest(s), true
	}
	depth := len(g.stack)
	g.stack = append(g.stack, s)
	defer func() { g.stack = g.stack[:depth] }()

	if s.Const != nil {
		return s.Const, true
	}
	if len(s.AllOf) > 0 {
		// A part that describes this same value already (a oneOf branch
		// whose allOf names the schema that lists it) is left out; one that
		// describes a value this one is in is a cycle.
		cyclic := false
		merged, parts := mergeAllOf(s, func(p *openapi3.Schema) bool {
			if slices.Contains(g.stack[:g.level], p) {
				cyclic = true
			}
			return slices.Contains(g.stack, p)
		})
		if cyclic {
			if s.Nullable || s.Type.IncludesNull() {
				return nil, true
			}
			return nil, false
		}
		// The parts stay on the stack while the merged schema is made.
		g.stack = append(g.stack, parts...)
		return g.value(merged, hint)
	}
	if len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		return g.alternative(s, hint)
	}
	for _, ex := range append([]any{s.Example}, s.Examples...) {
		if ex != nil && g.valid(s, ex) {
			return ex, true
		}
	}
	if len(s.Enum) > 0 {
		var choices []any
		for _, e := range s.Enum {
			if e != nil {
				choices = append(choices, e)
			}
		}
		if len(choices) > 0 {
			return choices[g.rng.IntN(len(choices))], true
		}
	}
	if s.Default != nil && g.valid(s, s.Default) {
		return s.Default, true
	}
	switch schemaType(s) {
	case "object":
		return g.object(s)
	case "array":
		return g.array(s, hint)
	case "integer":
		return g.integer(s), true
	case "number":
		return g.number(s), true
	case "boolean":
		return g.rng.IntN(2) == 0, true
	case "null":
		return nil, true
	default:
		return g.str(s, hint), true
	}
}

// shortest is the smallest value of s's type, for a place past the bounds.
func shortest(s *openapi3.Schema) any {
	switch schemaType(s) {
	case "object":
		return map[string]any{}
	case "array":
		return []any{}
	case "integer", "number":
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	}
	return ""
}

// schemaType is the type to generate: the first non-null type, else one the
// keywords imply.
func schemaType(s *openapi3.Schema) string {
	for _, t := range s.Type.Slice() {
		if t != "null" {
			return t
		}
	}
	if s.Type.IncludesNull() {
		return "null"
	}
	switch {
	case len(s.Properties) > 0 || s.AdditionalProperties.Schema != nil || len(s.Required) > 0:
		return "object"
	case s.Items != nil || len(s.PrefixItems) > 0:
		return "array"
	case s.Min != nil || s.Max != nil || s.MultipleOf != nil:
		return "number"
	}
	return "string"
}

// alternative generates one branch of a oneOf or anyOf, merged with the
// schema's own keywords: the first branch whose value satisfies the whole
// schema (a oneOf value must match exactly one branch).
func (g *generator) alternative(s *openapi3.Schema, hint string) (any, bool) {
	branches := s.OneOf
	if len(branches) == 0 {
		branches = s.AnyOf
	}
	base := *s
	base.OneOf, base.AnyOf = nil, nil
	// Failing a value valid for the whole schema, the first one valid for
	// its own keywords, else the first made.
	var first, fallback any
	found, baseValid := false, false
	for _, b := range branches {
		if b == nil || b.Value == nil {
			continue
		}
		v, ok := g.value(&openapi3.Schema{AllOf: openapi3.SchemaRefs{{Value: &base}, b}}, hint)
		if !ok {
			continue
		}
		if !found {
			first, found = v, true
		}
		if len(branches) == 1 || g.valid(s, v) {
			return v, true
		}
		if g.nodes >= maxNodes {
			break
		}
		if d := s.Discriminator; d != nil && d.PropertyName != "" {
			if obj, isObj := v.(map[string]any); isObj {
				prev, had := obj[d.PropertyName]
				obj[d.PropertyName] = discriminatorValue(d, b)
				if g.valid(s, obj) {
					return obj, true
				}
				if had {
					obj[d.PropertyName] = prev
				}
			}
		}
		if !baseValid && g.valid(&base, v) {
			fallback, baseValid = v, true
		}
	}
	if baseValid {
		return fallback, true
	}
	return first, found
}

// discriminatorValue is the value of the discriminator property that
// selects branch b: its key in the mapping, else its schema name.
func discriminatorValue(d *openapi3.Discriminator, b *openapi3.SchemaRef) string {
	keys := make([]string, 0, len(d.Mapping))
	for k := range d.Mapping {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if m := d.Mapping[k]; m.Ref != "" && m.Ref == b.Ref {
			return k
		}
	}
	return b.Ref[strings.LastIndexByte(b.Ref, '/')+1:]
}

// mergeAllOf folds s's allOf (nested ones too) into one schema: properties
// and required names joined (a property several parts describe becomes
// their allOf), the tightest bounds, the first type, format, enum and items.
// Parts for which skip is true (being generated already, further up) are
// left out. It returns the merged schema and the parts it merged.
func mergeAllOf(s *openapi3.Schema, skip func(*openapi3.Schema) bool) (*openapi3.Schema, []*openapi3.Schema) {
	out := *s
	out.AllOf = nil
	out.Properties = openapi3.Schemas{}
	for k, v := range s.Properties {
		out.Properties[k] = v
	}
	parts := []*openapi3.Schema{}
	var collect func(x *openapi3.Schema, depth int)
	collect = func(x *openapi3.Schema, depth int) {
		for _, p := range x.AllOf {
			if p == nil || p.Value == nil || depth > 8 || skip(p.Value) || slices.Contains(parts, p.Value) {
				continue
			}
			parts = append(parts, p.Value)
			collect(p.Value, depth+1)
		}
	}
	collect(s, 0)
	for _, p := range parts {
		if out.Type.IsEmpty() && !p.Type.IsEmpty() {
			out.Type = p.Type
		}
		if out.Format == "" {
			out.Format = p.Format
		}
		if len(out.Enum) == 0 {
			out.Enum = p.Enum
		}
		if out.Const == nil {
			out.Const = p.Const
		}
		if out.Items == nil {
			out.Items = p.Items
		}
		if out.Pattern == "" {
			out.Pattern = p.Pattern
		}
		if out.Example == nil {
			out.Example = p.Example
		}
		if out.Default == nil {
			out.Default = p.Default
		}
		if out.Discriminator == nil {
			out.Discriminator = p.Discriminator
		}
		if len(out.OneOf) == 0 && len(out.AnyOf) == 0 {
			out.OneOf, out.AnyOf = p.OneOf, p.AnyOf
		}
		out.Nullable = out.Nullable && p.Nullable
		out.Min = tighter(out.Min, p.Min, math.Max)
		out.Max = tighter(out.Max, p.Max, math.Min)
		out.MinLength = max(out.MinLength, p.MinLength)
		out.MaxLength = tighterUint(out.MaxLength, p.MaxLength)
		out.MinItems = max(out.MinItems, p.MinItems)
		out.MaxItems = tighterUint(out.MaxItems, p.MaxItems)
		out.MinProps = max(out.MinProps, p.MinProps)
		out.MaxProps = tighterUint(out.MaxProps, p.MaxProps)
		if out.MultipleOf == nil {
			out.MultipleOf = p.MultipleOf
		}
		if p.AdditionalProperties.Has != nil && !*p.AdditionalProperties.Has {
			out.AdditionalProperties = p.AdditionalProperties
		} else if out.AdditionalProperties.Schema == nil && out.AdditionalProperties.Has == nil {
			out.AdditionalProperties = p.AdditionalProperties
		}
		for _, r := range p.Required {
			if !slices.Contains(out.Required, r) {
				out.Required = append(out.Required, r)
			}
		}
		for name, ref := range p.Properties {
			prev, ok := out.Properties[name]
			switch {
			case !ok:
				out.Properties[name] = ref
			case prev.Value != ref.Value:
				out.Properties[name] = &openapi3.SchemaRef{Value: &openapi3.Schema{AllOf: openapi3.SchemaRefs{prev, ref}}}
			}
		}
	}
	if len(out.Properties) == 0 {
		out.Properties = nil
	}
	return &out, parts
}

func tighter(a, b *float64, pick func(x, y float64) float64) *float64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	v := pick(*a, *b)
	return &v
}

func tighterUint(a, b *uint64) *uint64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	v := min(*a, *b)
	return &v
}

// descend marks the values generated until the returned func runs as
// inside the current one.
func (g *generator) descend() func() {
	prev := g.level
	g.level = len(g.stack)
	g.depth++
	return func() { g.level = prev; g.depth-- }
}

func (g *generator) object(s *openapi3.Schema) (any, bool) {
	defer g.descend()()
	out := map[string]any{}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	shallow := g.depth <= optionalDepth && g.nodes < maxNodes
	for _, name := range names {
		ref := s.Properties[name]
		if ref == nil || ref.Value == nil {
			continue
		}
		p := ref.Value
		required := slices.Contains(s.Required, name)
		if !required && (!shallow || g.response && p.WriteOnly || !g.response && p.ReadOnly) {
			continue
		}
		v, ok := g.value(p, name)
		if !ok {
			if required {
				return nil, false // a required property that only a cycle could fill
			}
			continue
		}
		out[name] = v
	}
	// A required name no property describes still has to be there.
	for _, name := range s.Required {
		if _, ok := out[name]; !ok {
			if v, ok := g.extra(s, name); ok {
				out[name] = v
			}
		}
	}
	// A map (additionalProperties only) gets one entry, as a real one would.
	want := int(min(s.MinProps, maxProps))
	if s.MinProps > maxProps {
		g.clip("minProperties " + strconv.FormatUint(s.MinProps, 10) + " passes " + strconv.Itoa(maxProps))
	}
	if len(s.Properties) == 0 && s.AdditionalProperties.Schema != nil && shallow {
		want = max(want, 1)
	}
	for i := 1; len(out) < want && i <= want+len(out); i++ {
		name := "additionalProp" + strconv.Itoa(i)
		if _, taken := out[name]; taken {
			continue
		}
		v, ok := g.extra(s, name)
		if !ok {
			break
		}
		out[name] = v
	}
	if s.MaxProps != nil {
		for i := len(names) - 1; i >= 0 && uint64(len(out)) > *s.MaxProps; i-- {
			if !slices.Contains(s.Required, names[i]) {
				delete(out, names[i])
			}
		}
	}
	return out, true
}

// extra is a value for a property the schema names in required or allows
// through additionalProperties but does not describe.
func (g *generator) extra(s *openapi3.Schema, name string) (any, bool) {
	if ap := s.AdditionalProperties; ap.Schema != nil && ap.Schema.Value != nil {
		return g.value(ap.Schema.Value, name)
	}
	if ap := s.AdditionalProperties; ap.Has != nil && !*ap.Has {
		return nil, false
	}
	return name, true
}

func (g *generator) array(s *openapi3.Schema, hint string) (any, bool) {
	defer g.descend()()
	n := int(s.MinItems)
	if n == 0 && g.depth <= optionalDepth && g.nodes < maxNodes {
		n = 1
	}
	if s.MaxItems != nil && uint64(n) > *s.MaxItems {
		n = int(*s.MaxItems)
	}
	if n > maxItems {
		g.clip("minItems " + strconv.Itoa(n) + " passes " + strconv.Itoa(maxItems))
		n = maxItems
	}
	out := make([]any, 0, n)
	for i, p := range s.PrefixItems {
		if i >= n || p == nil || p.Value == nil {
			break
		}
		v, ok := g.value(p.Value, hint)
		if !ok {
			return nil, false
		}
		out = append(out, v)
	}
	for len(out) < n {
		if s.Items == nil || s.Items.Value == nil {
			out = append(out, "item"+strconv.Itoa(len(out)+1))
			continue
		}
		var v any
		var ok bool
		// Unique items get a few tries at a value not yet in the array.
		for try := 0; try < 8; try++ {
			if v, ok = g.value(s.Items.Value, hint); !ok || !s.UniqueItems || !containsJSON(out, v) {
				break
			}
		}
		if !ok {
			if len(out) >= int(s.MinItems) {
				break
			}
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

func containsJSON(list []any, v any) bool {
	key := fmt.Sprintf("%#v", v)
	for _, x := range list {
		if fmt.Sprintf("%#v", x) == key {
			return true
		}
	}
	return false
}

// bounds returns the inclusive range s allows, around [1, 1000] when open.
func bounds(s *openapi3.Schema, step float64) (lo, hi float64) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if s.Min != nil {
		lo = *s.Min
		if s.ExclusiveMin.IsTrue() {
			lo += step
		}
	}
	if v := s.ExclusiveMin.Value; v != nil {
		lo = max(lo, *v+step)
	}
	if s.Max != nil {
		hi = *s.Max
		if s.ExclusiveMax.IsTrue() {
			hi -= step
		}
	}
	if v := s.ExclusiveMax.Value; v != nil {
		hi = min(hi, *v-step)
	}
	switch {
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		lo, hi = 1, 1000
	case math.IsInf(lo, -1):
		lo = min(hi, 1) - 1000
		if hi >= 1 {
			lo = 1
		}
	case math.IsInf(hi, 1):
		hi = lo + 1000
	}
	switch s.Format {
	case "int32":
		lo, hi = max(lo, math.MinInt32), min(hi, math.MaxInt32)
	case "int64":
		// Exact in a float64, as JSON decoders read numbers.
		lo, hi = max(lo, -(1<<53)), min(hi, 1<<53)
	}
	return lo, hi
}

func (g *generator) integer(s *openapi3.Schema) any {
	lo, hi := bounds(s, 1)
	lo, hi = math.Ceil(lo), math.Floor(hi)
	// Converting a float64 past int64 is undefined (1e308 became
	// -9223372036854775808): with no int64 in range, the bound itself is
	// answered, an integral JSON number.
	const top = 1 << 63
	if lo >= top || hi < -top {
		if hi < lo {
			return hi
		}
		return lo
	}
	lo, hi = max(lo, -top), min(hi, math.Nextafter(top, 0))
	if hi < lo {
		return int64(lo)
	}
	v := lo + float64(g.rng.Int64N(int64(min(hi-lo, 1<<40))+1))
	if m := s.MultipleOf; m != nil && *m > 0 {
		if k := math.Ceil(lo / *m) * *m; k <= hi {
			v = k
		}
	}
	return int64(v)
}

func (g *generator) number(s *openapi3.Schema) any {
	lo, hi := bounds(s, 0.01)
	if hi < lo {
		return lo
	}
	if m := s.MultipleOf; m != nil && *m > 0 {
		if k := math.Ceil(lo / *m) * *m; k <= hi {
			return k
		}
	}
	// Two decimals, inside the range.
	v := math.Round((lo+g.rng.Float64()*(hi-lo))*100) / 100
	return min(max(v, lo), hi)
}

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func (g *generator) str(s *openapi3.Schema, hint string) string {
	v := g.text(s, hint)
	g.bytes += len(v)
	return v
}

func (g *generator) text(s *openapi3.Schema, hint string) string {
	minLen := int(min(s.MinLength, maxStringBytes+1))
	if s.Pattern != "" {
		if v, ok := fromPattern(s.Pattern, minLen, maxLen(s), maxStringBytes); ok && len(v) <= maxAnswerBytes-g.bytes {
			return v
		}
		if _, err := regexp.Compile(s.Pattern); err != nil {
			g.clip("its pattern does not compile (" + strings.TrimPrefix(err.Error(), "error parsing regexp: ") + ")")
		} else {
			g.clip("no string of at most " + strconv.Itoa(maxStringBytes) + " bytes matching its pattern was found")
		}
	}
	n := g.rng.IntN(1000) + 1
	var v string
	switch strings.ToLower(s.Format) {
	case "date-time":
		v = epoch.Add(time.Duration(g.rng.IntN(365*24*60)) * time.Minute).Format(time.RFC3339)
	case "date":
		v = epoch.AddDate(0, 0, g.rng.IntN(365)).Format(time.DateOnly)
	case "time":
		v = epoch.Add(time.Duration(g.rng.IntN(24*60*60)) * time.Second).Format("15:04:05Z")
	case "uuid":
		v = g.uuid()
	case "email":
		v = "user" + strconv.Itoa(n) + "@example.com"
	case "uri", "url", "iri", "uri-reference", "iri-reference":
		v = "https://example.com/" + pathWord(hint) + "/" + strconv.Itoa(n)
	case "hostname", "idn-hostname":
		v = "host" + strconv.Itoa(n) + ".example.com"
	case "ipv4":
		v = "192.0.2." + strconv.Itoa(n%254+1)
	case "ipv6":
		v = "2001:db8::" + strconv.FormatInt(int64(n), 16)
	case "byte":
		v = base64.StdEncoding.EncodeToString([]byte("example " + strconv.Itoa(n)))
	case "duration":
		v = "PT" + strconv.Itoa(n) + "S"
	case "password":
		v = "secret-" + strconv.Itoa(n)
	default:
		v = pathWord(hint) + "-" + strconv.Itoa(n)
	}
	if minLen > maxStringBytes || minLen > maxAnswerBytes-g.bytes {
		g.clip("minLength " + strconv.FormatUint(s.MinLength, 10) + " passes the string bound")
		minLen = 0
	}
	return fitLength(v, minLen, maxLen(s))
}

func maxLen(s *openapi3.Schema) int {
	if s.MaxLength == nil || *s.MaxLength > math.MaxInt32 {
		return -1
	}
	return int(*s.MaxLength)
}

// fitLength pads or cuts v to the length bounds (in characters; max < 0:
// none).
func fitLength(v string, minLen, maxLen int) string {
	r := []rune(v)
	if len(r) < minLen {
		r = append(r, []rune(strings.Repeat("x", minLen-len(r)))...)
	}
	if maxLen >= 0 && len(r) > maxLen {
		r = r[:maxLen]
	}
	return string(r)
}

func pathWord(hint string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(hint) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "string"
	}
	return b.String()
}

func (g *generator) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.rng.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
