package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Bounds of schema depth. Past them, rebuilding, describing and validating
// an operation costs seconds and gigabytes (a 225 KB spec with items nested
// 9,000 levels took 58 s and 1.7 GB on its first call), so such an
// operation is left out at load with a warning. Real specs stay far below:
// among the shared specs the deepest literal nesting is a handful of
// levels, and Stripe reaches 53 levels through its $refs.
const (
	// maxSchemaDepth bounds the literal nesting of schemas within one
	// operation or component (properties, items, allOf, ...).
	maxSchemaDepth = 64
	// maxSchemaRefDepth bounds the nesting reached by following $refs
	// (cycles cut where the describer and validator cut them).
	maxSchemaRefDepth = 256
)

// tooDeepMarker stands for a Swagger 2.0 definition that nested too deep to
// convert: an operation that refers to it is left out like one that holds
// such a schema itself.
const tooDeepMarker = "x-specgate-too-deep"

// schemaPlace says what a JSON container is, as far as schema depth goes.
type schemaPlace uint8

const (
	placeOther      schemaPlace = iota // operation, parameter, body, response, media type: its "schema" is a schema
	placeSchema                        // a schema object
	placeSchemaMap                     // properties and the like: every value is a schema
	placeSchemaList                    // allOf and the like: every element is a schema
	placeData                          // examples, enums, defaults: no schema inside
)

// Keywords whose value is one schema, a map of schemas, a list of schemas.
var (
	schemaKeywords = map[string]bool{
		"items": true, "additionalProperties": true, "not": true, "contains": true, "propertyNames": true,
		"if": true, "then": true, "else": true, "additionalItems": true, "unevaluatedItems": true,
		"unevaluatedProperties": true, "contentSchema": true,
	}
	schemaMapKeywords = map[string]bool{
		"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true,
	}
	schemaListKeywords = map[string]bool{
		"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true,
	}
)

// depthChecker measures schema depth over a spec's operations. Each
// referenced component is scanned once (cycles are cut where the describer
// and validator cut them: at a component already being expanded), so
// checking every operation of a spec costs about one pass over it.
type depthChecker struct {
	s       *Spec
	memo    map[string]schemaDepth
	onStack map[string]bool
}

// schemaDepth is how deep schemas nest: literally, and through $refs.
type schemaDepth struct{ literal, followed int }

func newDepthChecker(s *Spec) *depthChecker {
	return &depthChecker{s: s, memo: map[string]schemaDepth{}, onStack: map[string]bool{}}
}

// problem says why an operation's schemas are too deep to serve, or "".
func (c *depthChecker) problem(op []byte) string {
	d := c.scan(op, placeOther)
	switch {
	case d.literal > maxSchemaDepth:
		return fmt.Sprintf("its schemas nest deeper than %d levels", maxSchemaDepth)
	case d.followed > maxSchemaRefDepth:
		return fmt.Sprintf("its schemas nest deeper than %d levels through $refs", maxSchemaRefDepth)
	}
	return ""
}

// ref returns the depth a reference brings: as a schema, its target's own
// root counts as one level.
func (c *depthChecker) ref(ref string, schema bool) schemaDepth {
	key, place, cut := "o"+ref, placeOther, schemaDepth{}
	if schema {
		key, place, cut = "s"+ref, placeSchema, schemaDepth{1, 1}
	}
	if v, ok := c.memo[key]; ok {
		return v
	}
	if c.onStack[key] {
		return cut
	}
	raw, _, ok := c.s.lookupRef(ref)
	if !ok {
		return cut
	}
	c.onStack[key] = true
	v := c.scan(raw, place)
	delete(c.onStack, key)
	c.memo[key] = v
	return v
}

type depthFrame struct {
	place   schemaPlace
	depth   int // schema depth of the container, or of the schema around it
	array   bool
	wantKey bool
	key     []byte
}

// literalDepth returns how deep schemas nest in raw, following no $ref.
func literalDepth(raw []byte, root schemaPlace) int {
	return (&depthChecker{}).scan(raw, root).literal
}

// tooDeep names an operation or component whose schemas nest deeper than
// maxSchemaDepth, or returns "".
func (s *Spec) tooDeep() string {
	if s.deep != "" {
		return s.deep
	}
	sections := make([]string, 0, len(s.Components))
	for sec := range s.Components {
		sections = append(sections, sec)
	}
	sort.Strings(sections)
	for _, sec := range sections {
		place := placeOther
		if sec == "schemas" {
			place = placeSchema
		}
		names := make([]string, 0, len(s.Components[sec]))
		for name := range s.Components[sec] {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if literalDepth(s.Components[sec][name], place) > maxSchemaDepth {
				return "components." + sec + "." + name
			}
		}
	}
	return ""
}

// pruneDeepSwagger2 leaves out of a Swagger 2.0 document the operations
// whose own schemas nest deeper than maxSchemaDepth, and marks such
// definitions, before kin-openapi decodes it (at a cost quadratic in the
// nesting). It returns a warning for each and the document, unchanged when
// nothing is too deep.
func pruneDeepSwagger2(doc []byte) ([]string, []byte) {
	if literalDepth(doc, placeOther) <= maxSchemaDepth {
		return nil, doc
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(doc, &top) != nil {
		return nil, doc
	}
	var warnings []string
	var defs map[string]json.RawMessage
	if json.Unmarshal(top["definitions"], &defs) == nil && defs != nil {
		for _, name := range sortedRawKeys(defs) {
			if literalDepth(defs[name], placeSchema) > maxSchemaDepth {
				defs[name] = json.RawMessage(`{"` + tooDeepMarker + `":true}`)
				warnings = append(warnings, fmt.Sprintf("definitions.%s nests deeper than %d levels: operations that use it are left out", name, maxSchemaDepth))
			}
		}
		top["definitions"], _ = json.Marshal(defs)
	}
	for _, sec := range []string{"parameters", "responses"} {
		var m map[string]json.RawMessage
		if json.Unmarshal(top[sec], &m) != nil || m == nil {
			continue
		}
		for _, name := range sortedRawKeys(m) {
			if literalDepth(m[name], placeOther) > maxSchemaDepth {
				delete(m, name)
				warnings = append(warnings, fmt.Sprintf("%s.%s nests deeper than %d levels: left out", sec, name, maxSchemaDepth))
			}
		}
		top[sec], _ = json.Marshal(m)
	}
	var paths map[string]map[string]json.RawMessage
	if json.Unmarshal(top["paths"], &paths) == nil && paths != nil {
		for _, path := range sortedRawKeys(paths) {
			item := paths[path]
			for _, m := range methodOrder {
				if op, ok := item[m]; ok && literalDepth(op, placeOther) > maxSchemaDepth {
					delete(item, m)
					warnings = append(warnings, fmt.Sprintf("%s %s: its schemas nest deeper than %d levels: left out", strings.ToUpper(m), path, maxSchemaDepth))
				}
			}
			if p, ok := item["parameters"]; ok && literalDepth(p, placeOther) > maxSchemaDepth {
				delete(item, "parameters")
				warnings = append(warnings, fmt.Sprintf("%s: its parameters nest deeper than %d levels: left out", path, maxSchemaDepth))
			}
		}
		top["paths"], _ = json.Marshal(paths)
	}
	out, err := json.Marshal(top)
	if err != nil {
		return nil, doc
	}
	return warnings, out
}

func sortedRawKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// scan walks raw, a JSON value of the given place, without decoding it, and
// returns the deepest schema level it reaches, literally and following
// $refs. It stops once past a bound, so a hostile document costs one pass.
func (c *depthChecker) scan(raw []byte, root schemaPlace) schemaDepth {
	var d schemaDepth
	over := func() bool { return d.literal > maxSchemaDepth || d.followed > maxSchemaRefDepth }
	var stack []depthFrame
	for i := 0; i < len(raw); {
		switch ch := raw[i]; ch {
		case '{', '[':
			place, depth := childPlace(stack, root, ch == '[')
			if place == placeSchema {
				d.literal, d.followed = max(d.literal, depth), max(d.followed, depth)
				if over() {
					return d
				}
			}
			stack = append(stack, depthFrame{place: place, depth: depth, array: ch == '[', wantKey: ch == '{'})
			i++
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			i++
		case ',':
			if len(stack) > 0 && !stack[len(stack)-1].array {
				stack[len(stack)-1].wantKey = true
			}
			i++
		case ':':
			if len(stack) > 0 {
				stack[len(stack)-1].wantKey = false
			}
			i++
		case '"':
			end := jsonStringEnd(raw, i)
			if len(stack) == 0 || stack[len(stack)-1].array {
				i = end
				continue
			}
			top := &stack[len(stack)-1]
			if top.wantKey {
				top.key = jsonStringText(raw[i:end])
				top.wantKey = false
				if top.place == placeSchema && string(top.key) == tooDeepMarker {
					d.literal = maxSchemaDepth + 1
					return d
				}
			} else if c.s != nil && string(top.key) == "$ref" && (top.place == placeSchema || top.place == placeOther) {
				// A schema's reference stands in its place; a parameter's,
				// body's or response's brings its schemas below this level.
				base := top.depth
				if top.place == placeSchema {
					base--
				}
				r := c.ref(string(jsonStringText(raw[i:end])), top.place == placeSchema)
				d.literal = max(d.literal, r.literal)
				d.followed = max(d.followed, base+r.followed)
				if over() {
					return d
				}
			}
			i = end
		default:
			i++
		}
	}
	return d
}

// childPlace returns what a container opening inside the top of stack is.
func childPlace(stack []depthFrame, root schemaPlace, array bool) (schemaPlace, int) {
	if len(stack) == 0 {
		switch {
		case root == placeSchema && !array:
			return placeSchema, 1
		case root == placeSchema:
			return placeData, 0
		}
		return root, 0
	}
	p := stack[len(stack)-1]
	if p.array {
		switch p.place {
		case placeSchemaList:
			if !array {
				return placeSchema, p.depth + 1
			}
		case placeOther:
			return placeOther, p.depth
		}
		return placeData, p.depth
	}
	key := string(p.key)
	switch p.place {
	case placeSchema:
		switch {
		case schemaKeywords[key] && !array:
			return placeSchema, p.depth + 1
		case key == "items" && array, schemaListKeywords[key] && array:
			return placeSchemaList, p.depth
		case schemaMapKeywords[key] && !array:
			return placeSchemaMap, p.depth
		}
	case placeSchemaMap:
		if !array {
			return placeSchema, p.depth + 1
		}
	case placeOther:
		switch key {
		case "schema":
			if !array {
				return placeSchema, p.depth + 1
			}
		case "schemas", "definitions":
			// components.schemas, or a Swagger 2.0 document's definitions.
			if !array {
				return placeSchemaMap, p.depth
			}
		case "example", "examples", "default", "enum", "x-examples":
		default:
			return placeOther, p.depth
		}
	}
	return placeData, p.depth
}

// jsonStringEnd returns the index just past the JSON string starting at
// raw[i] (a quote), or len(raw) when it is not closed.
func jsonStringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

// jsonStringText returns the text of a quoted JSON string, unescaped only
// when it holds escapes.
func jsonStringText(quoted []byte) []byte {
	if len(quoted) < 2 {
		return nil
	}
	inner := quoted[1 : len(quoted)-1]
	for _, b := range inner {
		if b == '\\' {
			var s string
			if json.Unmarshal(quoted, &s) != nil {
				return inner
			}
			return []byte(s)
		}
	}
	return inner
}

// topLevelRef returns the "$ref" of a JSON object, without decoding the
// rest of it: every schema of a spec is probed at load.
func topLevelRef(raw []byte) (string, bool) {
	if !bytes.Contains(raw, []byte(`"$ref"`)) && !bytes.Contains(raw, []byte(`\u`)) {
		return "", false
	}
	depth, wantKey, isRef := 0, false, false
	for i := 0; i < len(raw); {
		switch raw[i] {
		case '{', '[':
			depth++
			wantKey = raw[i] == '{' && depth == 1
			i++
		case '}', ']':
			depth--
			i++
		case ',':
			wantKey = depth == 1
			i++
		case '"':
			end := jsonStringEnd(raw, i)
			switch {
			case depth == 1 && wantKey:
				isRef = string(jsonStringText(raw[i:end])) == "$ref"
				wantKey = false
			case depth == 1 && isRef:
				return string(jsonStringText(raw[i:end])), true
			}
			i = end
		default:
			i++
		}
	}
	return "", false
}

// tupleItems matches an "items" written as an array, the tuple form of
// JSON Schema drafts before 2020-12 that neither Swagger 2.0 nor OpenAPI
// 3.0 allows; Slack's Web API spec has them.
var tupleItems = regexp.MustCompile(`"items"\s*:\s*\[`)

// dataKey reports whether an object key holds data rather than schemas:
// untupleItems leaves what is under it as it is.
func dataKey(k string) bool {
	return k == "example" || k == "examples" || k == "default" || k == "enum" || k == "const" || strings.HasPrefix(k, "x-")
}

// hasSchemaTuple reports whether doc, valid JSON, has an "items" written as
// an array outside every data key: what untupleItems would rewrite. It
// scans the bytes without decoding them: a large spec (GitHub's) has
// "items": [ in examples only, and decoding all of it to learn so cost a
// sixth of its load.
func hasSchemaTuple(doc []byte) bool {
	type frame struct {
		object  bool
		data    bool   // under a data key
		key     []byte // the object's current key
		wantKey bool
	}
	stack := make([]frame, 0, 64)
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; c {
		case '{', '[':
			data := false
			if n := len(stack); n > 0 {
				top := stack[n-1]
				data = top.data || (top.object && dataKey(string(top.key)))
				if c == '[' && top.object && !data && string(top.key) == "items" {
					return true
				}
			}
			stack = append(stack, frame{object: c == '{', data: data, wantKey: c == '{'})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].wantKey = true
			}
		case '"':
			end := jsonStringEnd(doc, i)
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				stack[n-1].key = jsonStringText(doc[i:end])
				stack[n-1].wantKey = false
			}
			i = end - 1
		}
	}
	return false
}

// untupleItems reads each tuple-style "items" array in a schema position
// as its first schema (an empty array as any value), so a spec written
// that way loads; it returns the document and one warning, or the
// document unchanged when it has none. Example, default and enum values
// and extensions are data, not schemas, and are left as they are.
func untupleItems(doc []byte) ([]byte, []string) {
	if !tupleItems.Match(doc) || !hasSchemaTuple(doc) {
		return doc, nil
	}
	return rewriteTuples(doc)
}

// rewriteTuples is untupleItems on a document that may have tuples.
func rewriteTuples(doc []byte) ([]byte, []string) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return doc, nil
	}
	n := 0
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if dataKey(k) {
					continue
				}
				if arr, ok := c.([]any); ok && k == "items" {
					n++
					if len(arr) == 0 {
						x[k] = map[string]any{}
						continue
					}
					x[k] = walk(arr[0])
					continue
				}
				x[k] = walk(c)
			}
		case []any:
			for i, c := range x {
				x[i] = walk(c)
			}
		}
		return v
	}
	v = walk(v)
	if n == 0 {
		return doc, nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return doc, nil
	}
	return out, []string{fmt.Sprintf("%d tuple-style items arrays (a list of schemas) read as their first schema", n)}
}
