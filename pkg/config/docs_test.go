package config

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// schemaKeyPaths lists every key path a JSON Schema of the config allows:
// "http.auth.jwt.issuer", with "[]" for a list's items ("specs[].name") and
// "{}" for a map's values ("specs[].auth{}.token").
func schemaKeyPaths(t *testing.T, schemaJSON []byte) []string {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(schemaJSON, &root); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(n map[string]any, path string)
	walk = func(n map[string]any, path string) {
		if props, ok := n["properties"].(map[string]any); ok {
			for k, v := range props {
				p := k
				if path != "" {
					p = path + "." + k
				}
				seen[p] = true
				if m, ok := v.(map[string]any); ok {
					walk(m, p)
				}
			}
		}
		if m, ok := n["items"].(map[string]any); ok {
			walk(m, path+"[]")
		}
		if m, ok := n["additionalProperties"].(map[string]any); ok {
			walk(m, path+"{}")
		}
		for _, k := range []string{"anyOf", "oneOf", "allOf"} {
			alts, _ := n[k].([]any)
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok {
					walk(m, path)
				}
			}
		}
	}
	walk(root, "")
	paths := make([]string, 0, len(seen))
	for p := range seen {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// inYAML reports whether the document holds a value at path, in
// schemaKeyPaths' notation: "[]" steps into every item of a list, "{}" into
// every value of a mapping.
func inYAML(doc *yaml.Node, path string) bool {
	nodes := []*yaml.Node{doc}
	if doc.Kind == yaml.DocumentNode {
		nodes = doc.Content
	}
	for _, seg := range strings.Split(path, ".") {
		key := strings.TrimRight(seg, "[]{}")
		var next []*yaml.Node
		for _, n := range nodes {
			if n.Kind != yaml.MappingNode {
				continue
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					next = append(next, n.Content[i+1])
				}
			}
		}
		for rest := seg[len(key):]; rest != ""; rest = rest[2:] {
			var inner []*yaml.Node
			for _, n := range next {
				switch {
				case strings.HasPrefix(rest, "[]") && n.Kind == yaml.SequenceNode:
					inner = append(inner, n.Content...)
				case strings.HasPrefix(rest, "{}") && n.Kind == yaml.MappingNode:
					for i := 1; i < len(n.Content); i += 2 {
						inner = append(inner, n.Content[i])
					}
				}
			}
			next = inner
		}
		nodes = next
	}
	return len(nodes) > 0
}

// undocumented returns the schema's key paths that the example does not
// hold and the page does not name in backquotes.
func undocumented(t *testing.T, schemaJSON, example []byte, page string) []string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(example, &doc); err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, p := range schemaKeyPaths(t, schemaJSON) {
		if !inYAML(&doc, p) && !strings.Contains(page, "`"+p+"`") {
			missing = append(missing, p)
		}
	}
	return missing
}

// TestConfigurationPageCoversTheSchema holds docs/configuration.md and the
// config.example.yaml it links to every key of config.schema.json: a key
// added to the config types (and so to the schema, which
// TestSchemaFileIsCurrent keeps current) fails here until it is documented.
func TestConfigurationPageCoversTheSchema(t *testing.T) {
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile("../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	schema, example, page := read("config.schema.json"), read("config.example.yaml"), string(read("docs/configuration.md"))
	if !strings.Contains(page, "](../config.example.yaml)") {
		t.Error("docs/configuration.md does not link to ../config.example.yaml")
	}
	if n := len(schemaKeyPaths(t, schema)); n < 100 {
		t.Fatalf("found %d key paths in config.schema.json: the walk is broken", n)
	}
	for _, p := range undocumented(t, schema, example, page) {
		t.Errorf("%s is in config.schema.json but neither in config.example.yaml nor named as `%s` in docs/configuration.md", p, p)
	}

	t.Run("a key in neither is reported", func(t *testing.T) {
		fake := []byte(`{"properties": {
			"rate_limit_interval": {"type": "string"},
			"upstreams": {"type": "array", "items": {"properties": {
				"match": {"type": "string"},
				"surge": {"type": "integer"},
				"max_concurrent": {"anyOf": [{"type": "integer"}, {"properties": {"min": {}, "floor": {}}}]}}}},
			"specs": {"items": {"properties": {"auth": {"additionalProperties": {"properties": {"token": {}, "pin": {}}}}}}}}}`)
		got := undocumented(t, fake, example, "see `upstreams[].max_concurrent.min`")
		want := []string{"specs[].auth{}.pin", "upstreams[].max_concurrent.floor", "upstreams[].surge"}
		if !slices.Equal(got, want) {
			t.Errorf("undocumented = %q, want %q", got, want)
		}
	})
}

// TestReadmeConfigLoads loads each YAML block of the README that is a
// config (it has specs:), as a user who copies it would.
func TestReadmeConfigLoads(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(readme, -1)
	n := 0
	for _, b := range blocks {
		if !strings.Contains(string(b[1]), "specs:") {
			continue
		}
		n++
		t.Setenv("GITHUB_TOKEN", "ghp_example")
		c, err := Parse(b[1])
		if err != nil {
			t.Fatalf("README block %d: %v", n, err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("README block %d: %v", n, err)
		}
		if len(c.Upstreams) == 0 {
			t.Errorf("README block %d has no upstreams: budget", n)
		}
	}
	if n == 0 {
		t.Error("the README has no YAML config block")
	}
}
