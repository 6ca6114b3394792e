package mock

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// hostileSchemas is a spec whose answers ask for more than any mock should
// make: before the bounds, /long padded 2,000,000,000 runes one at a time
// (out of memory), /wide looped to 100,000,000 properties, /huge answered
// -9223372036854775808 for 1e308, and /pattern a string failing its pattern.
const hostileSchemas = `openapi: 3.0.3
info: {title: hostile, version: "1"}
paths:
  /long:
    get:
      operationId: long
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, required: [s], properties: {s: {type: string, minLength: 2000000000}}}
  /wide:
    get:
      operationId: wide
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, minProperties: 100000000}
  /many:
    get:
      operationId: many
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: array
                minItems: 1000000
                items:
                  type: array
                  minItems: 1000000
                  items:
                    type: array
                    minItems: 1000000
                    items: {type: string, minLength: 60000}
  /huge:
    get:
      operationId: huge
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                required: [big, small, fits]
                properties:
                  big: {type: integer, minimum: 1e308, maximum: 1e308}
                  small: {type: integer, minimum: -1e308, maximum: -1e308}
                  fits: {type: integer, minimum: 9e18}
  /pattern:
    get:
      operationId: pattern
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                required: [long, past, fits]
                properties:
                  long: {type: string, pattern: "^(a{1000}){1000}$"}
                  past: {type: string, pattern: "^(?:a{1000}b{1000}){35}c$"}
                  fits: {type: string, pattern: "^(a{20}b){40}$"}
`

func TestMockBoundsHostileSchemas(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	srv := newMock(t, parseSpec(t, hostileSchemas), Options{Logger: log})

	get := func(path string) map[string]any {
		t.Helper()
		a := do(t, "GET", srv.URL+path, "", "")
		if a.status != 200 {
			t.Fatalf("GET %s = %d: %.300s", path, a.status, a.body)
		}
		if len(a.body) > 2*maxAnswerBytes {
			t.Errorf("GET %s answered %d bytes, past the answer bound", path, len(a.body))
		}
		if path == "/many" {
			return nil
		}
		return a.json(t)
	}

	if s, _ := get("/long")["s"].(string); len(s) > maxStringBytes {
		t.Errorf("/long: a %d-byte string", len(s))
	}
	if n := len(get("/wide")); n > maxProps {
		t.Errorf("/wide: %d properties", n)
	}
	get("/many")

	huge := get("/huge")
	for k, want := range map[string]float64{"big": 1e308, "small": -1e308} {
		if got, _ := huge[k].(float64); got != want {
			t.Errorf("/huge %s = %v, want %v", k, huge[k], want)
		}
	}
	if f, _ := huge["fits"].(float64); f < 9e18 {
		t.Errorf("/huge fits = %v, want at least 9e18", huge["fits"])
	}

	p := get("/pattern")
	if s, _ := p["fits"].(string); !regexp.MustCompile(`^(a{20}b){40}$`).MatchString(s) {
		t.Errorf("/pattern fits = %.40q (%d bytes), want a match", s, len(s))
	}
	for _, k := range []string{"long", "past"} {
		if s, _ := p[k].(string); len(s) > maxStringBytes {
			t.Errorf("/pattern %s: a %d-byte string", k, len(s))
		}
	}

	// One warning per clipped answer, however often it is asked for.
	get("/long")
	get("/wide")
	for _, id := range []string{"long", "wide", "many", "pattern"} {
		n := len(regexp.MustCompile(`endpoint=\S*\b`+id+` `).FindAllString(logs.String(), -1))
		if n != 1 {
			t.Errorf("%s: %d clip warnings, want 1:\n%s", id, n, logs.String())
		}
	}
	if regexp.MustCompile(`endpoint=\S*\bhuge `).MatchString(logs.String()) {
		t.Errorf("/huge warned, though its values are valid:\n%s", logs.String())
	}
}

// The whole answer stays bounded when every string is long and required.
func TestMockAnswerBytesBounded(t *testing.T) {
	var schema openapi3.Schema
	doc := `{"type":"array","minItems":100000,"items":{"type":"array","minItems":100000,"items":{"type":"string","minLength":60000}}}`
	if err := json.Unmarshal([]byte(doc), &schema); err != nil {
		t.Fatal(err)
	}
	g := newGenerator(1, true, nil)
	v, ok := g.value(&schema, "")
	if !ok {
		t.Fatal("no value")
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 2*maxAnswerBytes {
		t.Errorf("answer of %d bytes, past twice the %d-byte bound", len(data), maxAnswerBytes)
	}
	if g.clipped == "" {
		t.Error("a clipped value was not marked for its warning")
	}
}

// A pattern is matched, or the value is marked clipped with the reason:
// never a string that silently fails the pattern.
func TestMockPatternMatchedOrClipped(t *testing.T) {
	past := "^" + strings.Repeat("a{1000}", 70) + "$" // 70,000 bytes at least
	for _, tt := range []struct{ pattern, clipped string }{
		{`^(a{20}b){40}$`, ""},
		{`^[a-z]{1000}$`, ""},
		{past, "no string of at most 65536 bytes"},
		{`^(a{1000}){1000}$`, "does not compile (invalid repeat count"},
	} {
		g := newGenerator(1, true, nil)
		v, _ := g.value(&openapi3.Schema{Type: &openapi3.Types{"string"}, Pattern: tt.pattern}, "")
		s, _ := v.(string)
		if len(s) > maxStringBytes {
			t.Errorf("%.30s: a %d-byte string", tt.pattern, len(s))
		}
		switch {
		case tt.clipped == "" && (g.clipped != "" || !regexp.MustCompile(tt.pattern).MatchString(s)):
			t.Errorf("%.30s: %.40q (clipped %q), want a match", tt.pattern, s, g.clipped)
		case tt.clipped != "" && !strings.Contains(g.clipped, tt.clipped):
			t.Errorf("%.30s: clipped %q, want %q", tt.pattern, g.clipped, tt.clipped)
		}
	}
}
