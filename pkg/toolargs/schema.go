package toolargs

import (
	"encoding/json"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/specgate/specgate/pkg/spec"
)

// InputSchema is the input schema of a tool whose arguments struct is T.
func InputSchema[T any]() json.RawMessage { return schemaOf[T](false) }

// OutputSchema is the output schema of a tool whose result struct is T.
// Every field is optional and an "error" object is allowed beside them, so
// that clients that validate structuredContent against it (the TypeScript
// SDK does, error results included) accept both the answer and the error
// envelope.
func OutputSchema[T any]() json.RawMessage { return schemaOf[T](true) }

// errorSchema is the error envelope's object, kept lean: the tool
// descriptions name the fields, and every tools/list pays for it.
var errorSchema = &jsonschema.Schema{
	Type:     "object",
	Required: []string{"code", "message"},
	Properties: map[string]*jsonschema.Schema{
		"code":    {Type: "string"},
		"message": {Type: "string"},
	},
}

func schemaOf[T any](output bool) json.RawMessage {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{
		IgnoreInvalidTypes: true,
		// A rendered schema in inspect's contract is recursive: described
		// as any object, not unrolled.
		TypeSchemas: map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[spec.Schema](): {Type: "object"}},
	})
	if err != nil {
		// The argument and result types are ours: a type the generator
		// cannot describe is a programming error caught by the tests.
		panic("toolargs: no JSON schema for " + reflect.TypeFor[T]().String() + ": " + err.Error())
	}
	if !output {
		// An optional argument is a pointer field, which the generator
		// writes as ["null", T]: a model sends T or leaves it out, and the
		// shorter form costs every tools/list less.
		for _, p := range s.Properties {
			if len(p.Types) == 2 && p.Types[0] == "null" {
				p.Type, p.Types = p.Types[1], nil
			}
		}
		// Unknown arguments are refused by name with the list of those the
		// tool takes (decodeArgs): saying so in every schema costs every
		// tools/list and tells the model less.
		s.AdditionalProperties = nil
	}
	if output {
		// Every tools/list pays for these: the top level is checked field by
		// field, nested values by their JSON type only.
		s.Required = nil
		if s.Properties == nil {
			s.Properties = map[string]*jsonschema.Schema{}
		}
		for name, p := range s.Properties {
			s.Properties[name] = &jsonschema.Schema{Type: p.Type, Types: p.Types}
		}
		s.Properties["error"] = errorSchema
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic("toolargs: schema of " + reflect.TypeFor[T]().String() + ": " + err.Error())
	}
	// An any-typed field's schema is the boolean true, which JSON Schema
	// allows but MCP clients (the TypeScript SDK) refuse as a property:
	// write it as the empty object, which means the same.
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		panic("toolargs: schema of " + reflect.TypeFor[T]().String() + ": " + err.Error())
	}
	if m, ok := tree.(map[string]any); ok {
		if r, ok := m["required"].([]any); ok && len(r) == 0 {
			delete(m, "required") // nothing required says nothing
		}
	}
	b, _ = json.Marshal(noBooleanSchemas(tree))
	return b
}

func noBooleanSchemas(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for k, x := range m {
		if props, ok := x.(map[string]any); ok && (k == "properties") {
			for name, p := range props {
				if b, ok := p.(bool); ok && b {
					props[name] = map[string]any{}
				} else {
					props[name] = noBooleanSchemas(p)
				}
			}
			continue
		}
		if b, ok := x.(bool); ok && b && (k == "items" || k == "additionalProperties") {
			m[k] = map[string]any{}
			continue
		}
		m[k] = noBooleanSchemas(x)
	}
	return m
}
