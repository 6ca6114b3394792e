package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/specgate/specgate/pkg/config"
)

// injectKey is what a hostile spec tries to add to init's config: a top-level
// key that check would accept.
const injectKey = "audit_log: \"${HOME}/.bashrc\""

// initHostileSpec is a spec whose strings init writes, with edit changing one
// part of it.
func initHostileSpec(t *testing.T, edit func(doc map[string]any, schemes map[string]any)) string {
	t.Helper()
	schemes := map[string]any{}
	doc := map[string]any{
		"openapi": "3.0.3",
		"info":    map[string]any{"title": "Evil", "version": "1"},
		"paths": map[string]any{"/ping": map[string]any{
			"get":  map[string]any{"operationId": "ping$(touch${IFS}PWNED)", "responses": map[string]any{"200": map[string]any{"description": "ok"}}},
			"post": map[string]any{"operationId": "write", "responses": map[string]any{"200": map[string]any{"description": "ok"}}},
		}},
		"components": map[string]any{"securitySchemes": schemes},
	}
	edit(doc, schemes)
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "evil.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInitHostileSpecWritesNoKeyOfItsOwn: init wrote a credential's
// description (from an apiKey's in and name, an http scheme, a scheme's
// type) and the scheme's name into YAML comments unescaped, so a newline in
// a header name put `audit_log: "${HOME}/.bashrc"` at column 0 and check
// loaded it. Every spec string init writes is one line now: the config
// check loads holds only the keys init means, and no line holds a control,
// format or line-breaking character.
func TestInitHostileSpecWritesNoKeyOfItsOwn(t *testing.T) {
	info := func(k, v string) func(map[string]any, map[string]any) {
		return func(doc, _ map[string]any) { doc["info"].(map[string]any)[k] = v }
	}
	scheme := func(name string, sc map[string]any) func(map[string]any, map[string]any) {
		return func(_, schemes map[string]any) { schemes[name] = sc }
	}
	tests := []struct {
		name string
		edit func(doc, schemes map[string]any)
	}{
		{"newline in an apiKey's header name", scheme("key", map[string]any{"type": "apiKey", "in": "header", "name": "X-Key\n" + injectKey})},
		{"CRLF in an apiKey's in", scheme("key", map[string]any{"type": "apiKey", "in": "header\r\n" + injectKey, "name": "X-Key"})},
		{"newline in a scheme's name", scheme("key\n"+injectKey+"\n#", map[string]any{"type": "apiKey", "in": "header", "name": "X-Key"})},
		{"line separators in a scheme's name", scheme("key\u2028"+injectKey+"\u0085"+injectKey, map[string]any{"type": "http", "scheme": "bearer"})},
		{"newline in an unsupported http scheme", scheme("dig", map[string]any{"type": "http", "scheme": "digest\n" + injectKey})},
		{"newline in an unsupported type", scheme("tls", map[string]any{"type": "mutualTLS\n" + injectKey})},
		{"newline in an oauth2 scheme's name", scheme("oa\n"+injectKey, map[string]any{"type": "oauth2", "flows": map[string]any{
			"implicit": map[string]any{"authorizationUrl": "https://id.example/auth", "scopes": map[string]any{}}}})},
		{"newline in the title", info("title", "Evil\n"+injectKey+"\n")},
		{"NEL and a bidi override in the title", info("title", "Evil\u0085"+injectKey+"\u202e\x7f\x1b[2J")},
		{"newline in the version", info("version", "1\n"+injectKey)},
		{"newline in a stated limit", info("description", "Clients may send 100 requests per minute.\n"+injectKey)},
		{"newline in a relative server", func(doc, _ map[string]any) {
			doc["servers"] = []any{map[string]any{"url": "/api\n" + injectKey}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := initThenCheck(t, initHostileSpec(t, tt.edit))
			var top map[string]yaml.Node
			if err := yaml.Unmarshal([]byte(text), &top); err != nil {
				t.Fatal(err)
			}
			for k := range top {
				if k != "specs" && k != "upstreams" {
					t.Errorf("top-level key %q in:\n%s", k, text)
				}
			}
			var specs struct {
				Specs []map[string]yaml.Node `yaml:"specs"`
			}
			if err := yaml.Unmarshal([]byte(text), &specs); err != nil || len(specs.Specs) != 1 {
				t.Fatalf("specs %v: %v", specs.Specs, err)
			}
			for k := range specs.Specs[0] {
				if !slices.Contains([]string{"name", "location", "base_url", "upstream", "rate_limit_interval", "auth"}, k) {
					t.Errorf("spec key %q in:\n%s", k, text)
				}
			}
			for i, line := range strings.Split(text, "\n") {
				if i := strings.IndexFunc(line, func(r rune) bool {
					return unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Cf)
				}); i >= 0 {
					t.Errorf("line %d holds %q: %q", i+1, line[i:], line)
				}
				if line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, " ") && line != "specs:" && line != "upstreams:" {
					t.Errorf("line %d starts a key of its own: %q", i+1, line)
				}
			}
			c, err := config.Parse([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			if c.AuditLog != "" {
				t.Errorf("audit_log %q", c.AuditLog)
			}
		})
	}
}
