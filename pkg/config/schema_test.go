package config

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// compileSchema compiles Schema's JSON with a validator of its own, so the
// schema is checked as an editor would read it.
func compileSchema(t *testing.T) *sjs.Schema {
	t.Helper()
	data, err := SchemaJSON()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := sjs.NewCompiler()
	c.DefaultDraft(sjs.Draft2020)
	if err := c.AddResource("config.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("config.schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// yamlToJSON reads YAML as the JSON value an editor's language server
// validates.
func yamlToJSON(t *testing.T, text string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sjs.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSchemaValidatesTheExample(t *testing.T) {
	s := compileSchema(t)
	data, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(yamlToJSON(t, string(data))); err != nil {
		t.Errorf("config.example.yaml does not validate: %v", err)
	}
	if !strings.HasPrefix(string(data), "# yaml-language-server: $schema=") {
		t.Errorf("config.example.yaml does not start with the yaml-language-server line")
	}
}

func TestSchemaRefuses(t *testing.T) {
	s := compileSchema(t)
	for name, text := range map[string]string{
		"unknown top key":     "rate_limit_intervall: 10s\n",
		"unknown nested key":  "specs:\n  - location: a.yaml\n    base_ur: https://x\n",
		"unknown auth field":  "specs:\n  - location: a.yaml\n    auth: {k: {valu: x}}\n",
		"bare number":         "rate_limit_interval: 10\n",
		"bad enum":            "upstreams:\n  - match: x\n    on_limit: later\n",
		"spec sans location":  "specs:\n  - name: a\n",
		"bad size":            "result_bytes: 16 kilobytes\n",
		"mock key that is no": "specs:\n  - location: a.yaml\n    mock: {on: true}\n",
	} {
		if err := s.Validate(yamlToJSON(t, text)); err == nil {
			t.Errorf("%s: the schema accepts %q", name, text)
		}
	}
	for name, text := range map[string]string{
		"durations":  "rate_limit_interval: 1m30s\ncache_ttl: 0\n",
		"sizes":      "result_bytes: 262144\nmax_response_bytes: 8MiB\n",
		"mock true":  "specs:\n  - location: a.yaml\n    mock: true\n",
		"mock quota": "specs:\n  - location: a.yaml\n    mock: {requests_per_window: 5, window: 10s}\n",
		"secret num": "specs:\n  - location: a.yaml\n    auth: {k: {value: 12345}}\n",
	} {
		if err := s.Validate(yamlToJSON(t, text)); err != nil {
			t.Errorf("%s: the schema refuses %q: %v", name, text, err)
		}
	}
}

// What the schema accepts, Load accepts too, for the keys the example
// writes: the schema is made from the same types.
func TestSchemaKeysAreLoadKeys(t *testing.T) {
	s, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"specs", "upstreams", "http", "store", "search", "scripts", "rate_limit_interval"} {
		if s.Properties[k] == nil {
			t.Errorf("schema lacks %q", k)
		}
	}
	if s.Properties["specs"].Items.Properties["mock"] == nil || s.Properties["specs"].Items.Properties["location"] == nil {
		t.Error("specs[] lacks mock or location")
	}
}

// config.schema.json, which config.example.yaml names for editors, is what
// `specgate config schema` prints; regenerate it with
// `go run ./cmd/specgate config schema > config.schema.json`.
func TestSchemaFileIsCurrent(t *testing.T) {
	want, err := SchemaJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../config.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("config.schema.json is stale: go run ./cmd/specgate config schema > config.schema.json")
	}
}
