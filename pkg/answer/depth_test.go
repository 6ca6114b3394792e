package answer

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// deepBody is n levels of {"a": ...} around 1, as an upstream sends it.
func deepBody(n int) []byte {
	return []byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
}

// depthOf is how many levels of objects and arrays the JSON text b nests.
func depthOf(t *testing.T, b []byte) int {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	depth, deepest := 0, 0
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	if depth != 0 {
		t.Fatalf("not whole JSON: %.200s", b)
	}
	return deepest
}

// A 300-deep object came back 301 levels deep; the parsers of some MCP
// clients fail past about 200. What the model reads nests at most
// MaxAnswerDepth levels, the deeper part summarised, however small the body.
func TestDeepUpstreamJSONIsCutAtMaxAnswerDepth(t *testing.T) {
	q, err := CompileJQ(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		body      []byte
		jq        *JQ
		budget    int
		wantWhole bool
	}{
		{"300 deep", deepBody(300), nil, DefaultResultBytes, false},
		{"300 deep at the smallest budget", deepBody(300), nil, MinResultBytes, false},
		{"300 deep through jq", deepBody(300), q, DefaultResultBytes, false},
		{"300 deep in a list", []byte(`{"data":[` + string(deepBody(300)) + `,{"id":2}],"has_more":false}`), nil, DefaultResultBytes, false},
		{"300 deep arrays", []byte(strings.Repeat("[", 300) + strings.Repeat("]", 300)), nil, DefaultResultBytes, false},
		{"65 deep", deepBody(65), nil, DefaultResultBytes, false},
		{"64 deep shows whole", deepBody(64), nil, DefaultResultBytes, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &Answer{Endpoint: "x.get", StatusCode: 200, ContentType: "application/json", Body: tt.body}
			w, err := NewView(t.Context(), a, RenderOptions{Budget: tt.budget, ResponseID: "r_x", JQ: tt.jq})
			if err != nil {
				t.Fatal(err)
			}
			out, r := w.Fit(tt.budget, func(r *Reply) []byte {
				b, _ := json.Marshal(r)
				return b
			})
			if len(out) > tt.budget {
				t.Errorf("result is %d bytes, over %d", len(out), tt.budget)
			}
			body, _ := r.Body.(json.RawMessage)
			got := depthOf(t, body)
			if tt.wantWhole {
				if r.Shaped != nil || !bytes.Equal(body, tt.body) {
					t.Errorf("a body of MaxAnswerDepth levels is previewed: shaped %+v", r.Shaped)
				}
				return
			}
			if got > MaxAnswerDepth {
				t.Errorf("body nests %d levels, want at most %d", got, MaxAnswerDepth)
			}
			if r.Shaped == nil || r.Hint == "" {
				t.Fatalf("shaped %v, hint %q: a summarised body must say so", r.Shaped, r.Hint)
			}
			if tt.budget == DefaultResultBytes && (got != MaxAnswerDepth || r.Shaped.Reason != ReasonTooDeep) {
				t.Errorf("depth %d, reason %q: a small deep body shows whole down to level %d, reason %q",
					got, r.Shaped.Reason, MaxAnswerDepth, ReasonTooDeep)
			}
		})
	}
}

// The cap holds in PreviewJSON itself, whatever the limits of a trial.
func TestPreviewJSONNeverNestsPastMaxAnswerDepth(t *testing.T) {
	v, err := DecodeJSON(deepBody(300))
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{MinPreviewBudget, 1024, 4096, MaxResultBytes} {
		b, sh := PreviewJSON(v, 1801, budget)
		if d := depthOf(t, b); d > MaxAnswerDepth || len(b) > budget || sh.Reason == "" {
			t.Errorf("budget %d: depth %d, %d bytes, reason %q", budget, d, len(b), sh.Reason)
		}
	}
}

func TestJSONDeeperThanAgreesWithTheDecodedDepth(t *testing.T) {
	for _, tt := range []struct {
		name string
		body string
	}{
		{"scalar", `1`},
		{"flat", `{"a":1,"b":[1,2]}`},
		{"brackets in strings", `{"a":"[[[[{{{{\"[[[["}`},
		{"64 deep", string(deepBody(64))},
		{"65 deep", string(deepBody(65))},
		{"1000 deep arrays", strings.Repeat("[", 1000) + strings.Repeat("]", 1000)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := depthOf(t, []byte(tt.body))
			for _, n := range []int{0, 1, 2, 63, 64, 65} {
				if got, want := JSONDeeperThan([]byte(tt.body), n), d > n; got != want {
					t.Errorf("JSONDeeperThan(%d) = %v, want %v (depth %d)", n, got, want, d)
				}
			}
		})
	}
}
