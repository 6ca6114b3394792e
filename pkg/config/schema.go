package config

import (
	"encoding/json"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaID is the dialect of Schema's answer.
const schemaDialect = "https://json-schema.org/draft/2020-12/schema"

// Schema returns the JSON Schema (2020-12) of the config file, generated
// from the config types: every key Load accepts, and no other (an object
// admits no unknown key, as Load refuses them). Durations, sizes, secrets,
// enums and `mock: true` are described as the file writes them. Only
// specs[].location and upstreams[].match are required: the defaults fill
// the rest, and Validate checks what the schema cannot (a window with
// requests_per_window, a URL's form).
func Schema() (*jsonschema.Schema, error) {
	duration := &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "string", Pattern: `^\s*([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+\s*$`, Description: `a duration with a unit: "10s", "250ms", "1m30s"`},
		{Type: "integer", Enum: []any{0}, Description: "0 (off)"},
	}}
	size := &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: jsonschema.Ptr(0.0), Description: "bytes"},
		{Type: "string", Pattern: `^\s*[0-9]+\s*(KiB|MiB|GiB|KB|MB|GB|B)?\s*$`, Description: `a size: 262144, "256KiB", "4MiB", "1MB"`},
	}}
	secret := &jsonschema.Schema{Types: []string{"string", "number", "boolean"},
		Description: `a secret: a literal, "${ENV}" references, or (with a *_file sibling) a file`}
	types := map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[Duration](): duration,
		reflect.TypeFor[ByteSize](): size,
		reflect.TypeFor[Secret]():   secret,
		reflect.TypeFor[OnLimit]():  {Type: "string", Enum: []any{"wait", "reject"}},
		reflect.TypeFor[Backend]():  {Type: "string", Enum: []any{"memory", "redis", "redis_cluster"}},
		reflect.TypeFor[Channel]():  {Type: "string", Enum: []any{ChannelElicit, ChannelPage, ChannelAuto}},
		reflect.TypeFor[Concurrency](): {AnyOf: []*jsonschema.Schema{
			{Type: "integer", Minimum: jsonschema.Ptr(0.0), Description: "calls in flight (0: no limit)"},
			{Type: "string", Enum: []any{"auto"}, Description: "adaptive (AIMD), from 1"},
			{Type: "object", Description: "adaptive within bounds", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
				Properties: map[string]*jsonschema.Schema{"min": {Type: "integer", Minimum: jsonschema.Ptr(0.0)}, "max": {Type: "integer", Minimum: jsonschema.Ptr(0.0)}}},
		}},
	}
	mock, err := jsonschema.For[Mock](&jsonschema.ForOptions{TypeSchemas: types})
	if err != nil {
		return nil, err
	}
	delete(mock.Properties, "on") // not a key: `mock: true` or the mapping says it
	mock.PropertyOrder = nil
	types[reflect.TypeFor[Mock]()] = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "boolean", Description: "serve the spec from its mock, with no quota"}, mock}}

	s, err := jsonschema.For[Config](&jsonschema.ForOptions{TypeSchemas: types})
	if err != nil {
		return nil, err
	}
	walkSchema(s, func(n *jsonschema.Schema) {
		n.Required = nil
		// For makes a pointer's schema allow null by adding "null" to its
		// types, which, on a schema of alternatives (a *Duration), would
		// allow null only: null is one more alternative instead.
		if len(n.AnyOf) > 0 && len(n.Types) == 1 && n.Types[0] == "null" {
			n.Types = nil
			n.AnyOf = append(n.AnyOf, &jsonschema.Schema{Type: "null"})
		}
	})
	withKeyDocs(s)
	s.Schema = schemaDialect
	s.Title = "specgate config"
	s.Description = "The YAML config of specgate (config.example.yaml documents every key and its default)."
	s.Properties["specs"].Items.Required = []string{"location"}
	s.Properties["upstreams"].Items.Required = []string{"match"}
	return s, nil
}

// SchemaJSON is Schema as indented JSON.
func SchemaJSON() ([]byte, error) {
	s, err := Schema()
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func walkSchema(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	if s == nil {
		return
	}
	f(s)
	for _, p := range s.Properties {
		walkSchema(p, f)
	}
	walkSchema(s.Items, f)
	walkSchema(s.AdditionalProperties, f)
	for _, a := range s.AnyOf {
		walkSchema(a, f)
	}
}

// schemaPaths lists the key paths of s: "http.auth.jwt.issuer", with "[]"
// for a list's items ("specs[].name") and "{}" for a map's values
// ("specs[].auth{}.token").
func schemaPaths(s *jsonschema.Schema) []string {
	var out []string
	describeKeys(s, "", func(path string, _ *jsonschema.Schema) *jsonschema.Schema {
		out = append(out, path)
		return nil
	})
	return out
}

// describeKeys calls f on each property of s with its path; a schema f
// returns replaces the property's.
func describeKeys(s *jsonschema.Schema, path string, f func(string, *jsonschema.Schema) *jsonschema.Schema) {
	if s == nil {
		return
	}
	for k, p := range s.Properties {
		kp := k
		if path != "" {
			kp = path + "." + k
		}
		if r := f(kp, p); r != nil {
			s.Properties[k] = r
			p = r
		}
		describeKeys(p, kp, f)
	}
	describeKeys(s.Items, path+"[]", f)
	describeKeys(s.AdditionalProperties, path+"{}", f)
	for _, a := range s.AnyOf {
		describeKeys(a, path, f)
	}
}

// withKeyDocs gives each property of s its description from keyDocs, on a
// copy of its schema: the schemas of a type (every duration) are shared.
func withKeyDocs(s *jsonschema.Schema) {
	describeKeys(s, "", func(path string, p *jsonschema.Schema) *jsonschema.Schema {
		d := keyDocs[path]
		if d == "" {
			return nil
		}
		cp := *p
		if cp.Description != "" {
			d += " (" + cp.Description + ")"
		}
		cp.Description = d
		return &cp
	})
}
