package invoke

import (
	"errors"
	"strings"
	"testing"
)

const spec31 = `{"openapi":"3.1.0","info":{"title":"g","version":"1"},"paths":{"/guilds/{guild_id}":{"get":{"operationId":"get_guild",
"parameters":[{"name":"guild_id","in":"path","required":true,"schema":{"type":"string","pattern":"^(0|[1-9][0-9]*)$"}},
{"name":"limit","in":"query","schema":{"type":"integer","maximum":100}},
{"name":"kind","in":"query","schema":{"type":"string","enum":["text","voice"]}}],
"responses":{"200":{"description":"ok"}}}}}}`

// TestSchema31ProblemsNameTheRule: on an OpenAPI 3.1 spec (Discord's) a
// refused value said only "jsonschema validation failed with
// 'https://example.com/schema.json#'"; each problem names the rule and the
// value's place.
func TestSchema31ProblemsNameTheRule(t *testing.T) {
	s := parseSpec(t, "g", spec31, "http://127.0.0.1:9")
	_, err := New(Options{}).Prepare(t.Context(), endpoint(t, s, "get_guild"),
		Args{Parameters: map[string]any{"guild_id": "abc", "limit": 500, "kind": "video"}})
	var ae *ArgError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v", err)
	}
	all := strings.Join(ae.Problems, "\n")
	for _, want := range []string{`"guild_id"`, `^(0|[1-9][0-9]*)$`, `"limit"`, "100", `"kind"`, "voice"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems %q do not name %s", ae.Problems, want)
		}
	}
	if strings.Contains(all, "example.com") || strings.Contains(all, "jsonschema validation failed") {
		t.Errorf("problems %q name the validator, not the rule", ae.Problems)
	}
}

func TestDiscordPatternProblem(t *testing.T) {
	s := sharedSpec(t, "discord.json", "http://127.0.0.1:9/api")
	_, err := New(Options{}).Prepare(t.Context(), endpoint(t, s, "get_guild"), Args{Parameters: map[string]any{"guild_id": "abc"}})
	var ae *ArgError
	if !errors.As(err, &ae) || len(ae.Problems) != 1 || !strings.Contains(ae.Problems[0], "does not match pattern '^(0|[1-9][0-9]*)$'") {
		t.Fatalf("err = %v", err)
	}
}
