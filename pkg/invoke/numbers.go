package invoke

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/specgate/specgate/pkg/serialize"
)

// Numbers from the model arrive as json.Number and go on the wire as
// written. kin-openapi validates them as float64, which rounds past 2^53:
// 9007199254740993.5 passes as an integer, 9007199254740993 passes a
// maximum of 9007199254740992, 2^63 passes format int64. The exact check
// here reports what that rounding hid, and only that: where float64 holds
// the value exactly, kin-openapi's verdict stands and nothing is added, so
// no problem is told twice. (The other way, a value just above an
// exclusive minimum that rounds onto it, kin-openapi refuses; that stays.)

// maxExactDepth bounds the walk through nested values.
const maxExactDepth = 32

// exactNumberProblems checks every json.Number in v against the numeric
// keywords of its schema (type integer, format int64, minimum, maximum,
// their exclusive forms) on the exact value. It follows properties,
// additionalProperties, items and allOf; anyOf and oneOf are left to
// kin-openapi, as which branch applies is its call.
func exactNumberProblems(label string, s *openapi3.Schema, v any) []string {
	var out []string
	walkExact(&out, label, s, v, 0)
	return dedupe(out)
}

func walkExact(out *[]string, where string, s *openapi3.Schema, v any, depth int) {
	if s == nil || depth > maxExactDepth {
		return
	}
	for _, a := range s.AllOf {
		if a != nil {
			walkExact(out, where, a.Value, v, depth+1)
		}
	}
	switch x := serialize.Normalize(v).(type) {
	case json.Number:
		if p := exactNumber(s, x); p != "" {
			*out = append(*out, shorten(where+": "+p))
		}
	case []any:
		if s.Items != nil {
			for i, it := range x {
				walkExact(out, where+"."+strconv.Itoa(i), s.Items.Value, it, depth+1)
			}
		}
	case map[string]any:
		keys := serialize.SortedKeys(x)
		for _, k := range keys {
			var ps *openapi3.Schema
			if p, ok := s.Properties[k]; ok && p != nil {
				ps = p.Value
			} else if s.AdditionalProperties.Schema != nil {
				ps = s.AdditionalProperties.Schema.Value
			}
			walkExact(out, where+"."+k, ps, x[k], depth+1)
		}
	}
}

// exactNumber returns the problem float64 rounding hides in n for schema
// s, or "".
func exactNumber(s *openapi3.Schema, n json.Number) string {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return "" // not a number: kin-openapi says so
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return "" // beyond float64: kin-openapi refuses it
	}
	integer := s.Type != nil && s.Type.Permits(openapi3.TypeInteger) && !s.Type.Permits(openapi3.TypeNumber)
	// kin-openapi reads 2^63 (float64's MaxInt64) as MaxInt64, exact or not.
	if integer && s.Format == "int64" && (r.Cmp(maxInt64) > 0 || r.Cmp(minInt64) < 0) && math.Abs(f) <= 1<<63 {
		return "value should be between " + minInt64.RatString() + " and " + maxInt64.RatString()
	}
	fr := new(big.Rat).SetFloat64(f)
	if fr == nil || r.Cmp(fr) == 0 {
		return "" // exact: kin-openapi's verdict stands
	}
	// f is what kin-openapi judged; report where r fails and f passes.
	if integer && !r.IsInt() && fr.IsInt() {
		return "value must be an integer"
	}
	if s.Max != nil {
		m := new(big.Rat).SetFloat64(*s.Max)
		if m != nil && r.Cmp(m) > 0 && fr.Cmp(m) <= 0 {
			return "number must be at most " + formatBound(*s.Max)
		}
	}
	if s.Min != nil {
		m := new(big.Rat).SetFloat64(*s.Min)
		if m != nil && r.Cmp(m) < 0 && fr.Cmp(m) >= 0 {
			return "number must be at least " + formatBound(*s.Min)
		}
	}
	if b, ok := exclusiveBound(s.ExclusiveMax, s.Max); ok {
		m := new(big.Rat).SetFloat64(b)
		if m != nil && r.Cmp(m) >= 0 && fr.Cmp(m) < 0 {
			return "number must be less than " + formatBound(b)
		}
	}
	if b, ok := exclusiveBound(s.ExclusiveMin, s.Min); ok {
		m := new(big.Rat).SetFloat64(b)
		if m != nil && r.Cmp(m) <= 0 && fr.Cmp(m) > 0 {
			return "number must be more than " + formatBound(b)
		}
	}
	return ""
}

var (
	maxInt64 = new(big.Rat).SetInt64(math.MaxInt64)
	minInt64 = new(big.Rat).SetInt64(math.MinInt64)
)

// exclusiveBound returns an exclusive bound: OpenAPI 3.1's value, or 3.0's
// flag on the plain bound.
func exclusiveBound(eb openapi3.ExclusiveBound, plain *float64) (float64, bool) {
	switch {
	case eb.Value != nil:
		return *eb.Value, true
	case eb.Bool != nil && *eb.Bool && plain != nil:
		return *plain, true
	}
	return 0, false
}

func formatBound(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// isIntegerLiteral reports an optional "-" then decimal digits.
func isIntegerLiteral(s string) bool {
	d := s
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	return d != "" && !slices.ContainsFunc([]byte(d), func(c byte) bool { return c < '0' || c > '9' })
}

// isNumberLiteral reports a JSON number literal (RFC 8259 section 6), with
// leading zeros tolerated as strconv reads them.
func isNumberLiteral(s string) bool {
	if _, err := strconv.ParseFloat(s, 64); err != nil && !isRangeErr(err) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return false // hex, "_", "Inf", "NaN": not JSON
		}
	}
	return true
}

func isRangeErr(err error) bool {
	var ne *strconv.NumError
	return errors.As(err, &ne) && ne.Err == strconv.ErrRange
}
