package sweep

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/specgate/specgate/pkg/spec"
)

// The generator's values satisfy the rules the corpus writes most: a
// pattern, a length, bounds, distinct items, the first alternative.
func TestGenMeetsTheSchema(t *testing.T) {
	for _, pattern := range []string{`^AC[0-9a-fA-F]{32}$`, `^(0|[1-9][0-9]*)$`, `^[UW][A-Z0-9]{2,}$`, `^(SM|MM)[0-9a-fA-F]{32}$`, `^\d{4}-\d{2}$`} {
		v := (gen{}).value(&spec.Schema{Type: "string", Pattern: pattern}, 0)
		if s, ok := v.(string); !ok || !regexp.MustCompile(pattern).MatchString(s) {
			t.Errorf("%s: %v does not match", pattern, v)
		}
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	g := gen{}
	if v := g.value(&spec.Schema{Type: "integer", Minimum: raw("5"), Maximum: raw("9")}, 0); v != int64(5) {
		t.Errorf("integer in [5, 9]: %v", v)
	}
	if v := g.value(&spec.Schema{Type: "string", MinLength: raw("8")}, 0); len(v.(string)) < 8 {
		t.Errorf("minLength 8: %q", v)
	}
	snowflakes := g.value(&spec.Schema{Type: "array", MinItems: raw("2"), Items: &spec.Schema{Type: "string", Format: "snowflake", Pattern: `^(0|[1-9][0-9]*)$`}}, 0).([]any)
	if len(snowflakes) != 2 || snowflakes[0] == snowflakes[1] {
		t.Errorf("two distinct snowflakes: %v", snowflakes)
	}
	obj := g.value(&spec.Schema{Type: "object", Required: []string{"a"},
		Properties: map[string]*spec.Schema{"a": {Type: "string"}, "b": {Type: "string"}},
		AnyOf:      []*spec.Schema{{Required: []string{"b"}}}}, 0).(map[string]any)
	if _, ok := obj["b"]; !ok || len(obj) != 2 {
		t.Errorf("the first anyOf's required field: %v", obj)
	}
	if v := g.value(&spec.Schema{Type: "string", Format: "binary"}, 0); v != "c3dlZXA=" {
		t.Errorf("binary: %v, want base64", v)
	}
}
