package invoke

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/specgate/specgate/pkg/serialize"
	"github.com/specgate/specgate/pkg/spec"
)

// maxProblemLen bounds one problem sentence.
const maxProblemLen = 200

// validation is what validating a built request needs.
type validation struct {
	op         *spec.Operation
	req        *http.Request // a copy: validation may read its body
	pathParams map[string]string
	params     []param
	values     map[string]any  // the model's value per parameter key (in+name)
	fromConfig map[string]bool // parameter keys the config's credentials fill when sending
	jsonBody   bool            // let openapi3filter validate the body
	check      any             // a non-JSON body's value to validate directly
	hasCheck   bool
	jsonValue  any // a JSON body's value, for the exact check of its numbers
	bodySchema *openapi3.Schema
}

// validate runs openapi3filter.ValidateRequest on the built request and
// returns every problem as a short sentence. Parameters whose wire form
// kin-openapi cannot decode (deepObject arrays, anyOf of object and
// scalar, exploded cookies: all found in real specs) are validated from the
// model's value against their schema instead, so no false problem stops a
// good call.
func validate(ctx context.Context, v validation) (problems []string) {
	defer func() {
		if r := recover(); r != nil {
			problems = []string{unvalidatable("")}
		}
	}()
	route := &routers.Route{
		Spec:      v.op.Doc,
		Path:      v.op.Path,
		PathItem:  v.op.PathItem,
		Method:    v.op.Method,
		Operation: v.op.Op,
	}
	opts := &openapi3filter.Options{
		MultiError:          true,
		AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
		SkipSettingDefaults: true,
		ExcludeRequestBody:  !v.jsonBody,
	}
	input := &openapi3filter.RequestValidationInput{
		Request:    v.req,
		PathParams: v.pathParams,
		Route:      route,
		Options:    opts,
	}
	checked := map[string]bool{} // parameters validated from the model's value (numbers included)
	err := openapi3filter.ValidateRequest(ctx, input)
	for _, e := range flatten(err) {
		var re *openapi3filter.RequestError
		if errors.As(e, &re) && re.Parameter != nil {
			if v.fromConfig[re.Parameter.In+"\x00"+re.Parameter.Name] {
				continue // absent here, set from the config after validation
			}
			// kin-openapi decodes a parameter with alternatives (oneOf
			// string or array: Discord's sku_ids) into one guess of its own
			// and then finds it matches none; the model's value is checked
			// instead.
			if p := findParam(v.params, re.Parameter.In, re.Parameter.Name); p != nil && (isParseProblem(re.Err) || alternatives(p.Schema)) {
				val, ok := v.values[p.In+"\x00"+p.Name]
				if !ok {
					// kin-openapi cannot decode some styles at all
					// (deepObject arrays: Stripe's expand[] on every list
					// call) and says so even when the parameter is absent:
					// an absent parameter is only a problem when required.
					if p.Required {
						problems = append(problems, paramLabel(p.Name, p.In)+" is required")
					}
					continue
				}
				if p.Schema != nil {
					checked[p.In+"\x00"+p.Name] = true
					problems = append(problems, checkValue(paramLabel(p.Name, p.In), p.Schema, coerce(val, p.Schema), v.op.Doc, false)...)
					continue
				}
			}
			problems = append(problems, describe(paramLabel(re.Parameter.Name, re.Parameter.In), re.Err, re.Reason)...)
			continue
		}
		if errors.As(e, &re) && re.RequestBody != nil {
			problems = append(problems, describe("requestBody", re.Err, re.Reason)...)
			continue
		}
		var se *openapi3filter.SecurityRequirementsError
		if errors.As(e, &se) {
			continue // auth is ours to apply, after validation
		}
		problems = append(problems, shorten(e.Error()))
	}
	// openapi3filter read numbers as float64: check what rounding hid.
	for _, p := range v.params {
		key := p.In + "\x00" + p.Name
		if val, ok := v.values[key]; ok && val != nil && p.Schema != nil && !checked[key] && !v.fromConfig[key] {
			problems = append(problems, exactNumberProblems(paramLabel(p.Name, p.In), p.Schema, coerce(val, p.Schema))...)
		}
	}
	if v.jsonBody && v.jsonValue != nil && v.bodySchema != nil {
		problems = append(problems, exactNumberProblems("requestBody", v.bodySchema, v.jsonValue)...)
	}
	if v.hasCheck && v.bodySchema != nil {
		problems = append(problems, checkValue("requestBody", v.bodySchema, v.check, v.op.Doc, true)...)
	}
	return dedupe(problems)
}

// alternatives reports whether a schema is a oneOf or anyOf.
func alternatives(s *openapi3.Schema) bool {
	return s != nil && (len(s.OneOf) > 0 || len(s.AnyOf) > 0)
}

// checkValue validates a JSON value against a schema directly.
func checkValue(label string, s *openapi3.Schema, value any, doc *openapi3.T, request bool) (problems []string) {
	defer func() {
		if r := recover(); r != nil {
			problems = []string{unvalidatable(label)}
		}
	}()
	opts := []openapi3.SchemaValidationOption{openapi3.MultiErrors()}
	if request {
		opts = append(opts, openapi3.VisitAsRequest())
	}
	if doc != nil && doc.IsOpenAPI31OrLater() {
		opts = append(opts, openapi3.EnableJSONSchema2020())
	}
	value = jsonValue(value)
	exact := exactNumberProblems(label, s, value)
	err := s.VisitJSON(value, opts...)
	if err == nil {
		return exact
	}
	return append(describe(label, err, ""), exact...)
}

// unvalidatable is the problem a validation panic becomes. kin-openapi
// panics on some broken schemas (a $ref that resolves to itself leaves a
// nil schema behind); the spec is untrusted input, so that costs this call
// a validation_failed the model can read, not a protocol error.
func unvalidatable(label string) string {
	msg := "the spec's schema could not be validated (it is broken, for example a $ref that resolves to itself); this endpoint cannot be called until its spec is fixed"
	if label == "" {
		return msg
	}
	return shorten(label + ": " + msg)
}

// jsonValue converts Go values (ints, typed slices) into what VisitJSON
// expects: float64 or json.Number (ints keep every digit), []any,
// map[string]any.
func jsonValue(v any) any {
	switch x := serialize.Normalize(v).(type) {
	case []any:
		out := make([]any, len(x))
		for i, it := range x {
			out[i] = jsonValue(it)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, it := range x {
			out[k] = jsonValue(it)
		}
		return out
	case int:
		return json.Number(strconv.Itoa(x))
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case int32:
		return json.Number(strconv.FormatInt(int64(x), 10))
	case uint:
		return json.Number(strconv.FormatUint(uint64(x), 10))
	case uint64:
		return json.Number(strconv.FormatUint(x, 10))
	case uint32:
		return json.Number(strconv.FormatUint(uint64(x), 10))
	case float32:
		return float64(x)
	default:
		return x
	}
}

// coerce turns text the model sent for a number, integer or boolean
// parameter into that type, as the parameter's wire form would be read.
func coerce(v any, s *openapi3.Schema) any {
	v = serialize.Normalize(v)
	if s == nil {
		return v
	}
	switch x := v.(type) {
	case string:
		// Numbers stay json.Number, every digit kept for the exact check.
		switch {
		case s.Type.Is("integer"):
			if isIntegerLiteral(x) {
				return json.Number(x)
			}
		case s.Type.Is("number"):
			if isNumberLiteral(x) {
				return json.Number(x)
			}
		case s.Type.Is("boolean"):
			if b, err := strconv.ParseBool(x); err == nil {
				return b
			}
		}
	case []any:
		if s.Items != nil && s.Items.Value != nil {
			out := make([]any, len(x))
			for i, it := range x {
				out[i] = coerce(it, s.Items.Value)
			}
			return out
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, it := range x {
			out[k] = coerce(it, serialize.Property(s, k))
		}
		return out
	}
	return v
}

func findParam(ps []param, in, name string) *param {
	for i := range ps {
		if ps[i].In == in && ps[i].Name == name {
			return &ps[i]
		}
	}
	return nil
}

func paramLabel(name, in string) string {
	return "parameter " + quoteName(name) + " (" + in + ")"
}

// isParseProblem reports an error decoding a parameter's wire form, as
// opposed to a schema violation or a missing value.
func isParseProblem(err error) bool {
	var pe *openapi3filter.ParseError
	if errors.As(err, &pe) {
		return true
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		return false
	}
	return err != nil && strings.Contains(err.Error(), "serialization method")
}

// flatten expands multi-errors into their parts.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	var me openapi3.MultiError
	if errors.As(err, &me) && len(me) > 0 {
		if _, isMulti := err.(openapi3.MultiError); isMulti {
			var out []error
			for _, e := range me {
				out = append(out, flatten(e)...)
			}
			return out
		}
	}
	return []error{err}
}

// describe turns a validation error into short sentences prefixed with
// label: schema errors name the JSON path and reason, never the schema.
func describe(label string, err error, reason string) []string {
	if err == nil {
		if reason == "" {
			reason = "is invalid"
		}
		return []string{shorten(label + ": " + reason)}
	}
	if errors.Is(err, openapi3filter.ErrInvalidRequired) {
		return []string{label + ": is required"}
	}
	if errors.Is(err, openapi3filter.ErrInvalidEmptyValue) {
		return []string{label + ": must not be empty"}
	}
	var out []string
	if me, ok := err.(openapi3.MultiError); ok {
		for _, e := range me {
			out = append(out, describe(label, e, "")...)
		}
		return dedupe(out)
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		// The JSON Schema 2020-12 validator (OpenAPI 3.1) names only the
		// schema's URL at the top ("jsonschema validation failed with
		// 'https://example.com/schema.json#'"): the rule that failed and
		// where are in the innermost causes.
		for _, leaf := range leafCauses(ve, nil) {
			where := label
			for _, seg := range leaf.InstanceLocation {
				where += "." + problemName(seg)
			}
			out = append(out, shorten(where+": "+leaf.ErrorKind.LocalizedString(englishPrinter)))
		}
		if len(out) > 0 {
			return dedupe(out)
		}
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		where := label
		for _, seg := range se.JSONPointer() {
			where += "." + problemName(seg)
		}
		r := se.Reason
		if r == "cannot convert json.Number to float64" {
			r = "not a number, or too large to check"
		}
		if r == "" {
			r = "does not match the schema's " + strconv.Quote(se.SchemaField)
		}
		return []string{shorten(where + ": " + r)}
	}
	var pe *openapi3filter.ParseError
	if errors.As(err, &pe) {
		where := label
		for _, p := range pe.Path() {
			where += "." + serialize.ScalarString(p)
		}
		r := pe.Reason
		if r == "" {
			if rc := pe.RootCause(); rc != nil {
				r = rc.Error()
			}
		}
		if r == "" {
			r = "cannot be parsed"
		}
		return []string{shorten(where + ": " + r)}
	}
	if reason != "" {
		return []string{shorten(label + ": " + reason)}
	}
	return []string{shorten(label + ": " + err.Error())}
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// shorten keeps the first line of s, at most maxProblemLen bytes.
func shorten(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > maxProblemLen {
		cut := maxProblemLen
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.TrimSpace(s)
}

// englishPrinter renders the JSON Schema validator's messages.
var englishPrinter = message.NewPrinter(language.English)

// leafCauses collects the causes of ve that have none of their own: the
// rules that failed. At most 20, so a value failing everywhere stays short.
func leafCauses(ve *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		if len(out) < 20 {
			out = append(out, ve)
		}
		return out
	}
	for _, c := range ve.Causes {
		out = leafCauses(c, out)
	}
	return out
}
