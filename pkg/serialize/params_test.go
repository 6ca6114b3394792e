package serialize

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// The style examples of the OpenAPI specification (3.1.1, "Style
// Examples"), for a parameter named color with the values
// string "blue", array ["blue","black","brown"] and object
// {"R":100,"G":200,"B":150}. Object keys go out sorted (B, G, R): a JSON
// object decoded into a Go map has lost its order, so the spec's R,G,B
// order reads B,G,R here; nothing else differs.
func TestStyleExamplesFromTheSpec(t *testing.T) {
	str := "blue"
	arr := []any{"blue", "black", "brown"}
	obj := map[string]any{"R": 100, "G": 200, "B": 150}
	simple := []struct {
		style   string
		explode bool
		value   any
		want    string
	}{
		{"matrix", false, str, ";color=blue"},
		{"matrix", false, arr, ";color=blue,black,brown"},
		{"matrix", false, obj, ";color=B,150,G,200,R,100"},
		{"matrix", true, str, ";color=blue"},
		{"matrix", true, arr, ";color=blue;color=black;color=brown"},
		{"matrix", true, obj, ";B=150;G=200;R=100"},
		{"matrix", false, nil, ";color"},
		{"label", false, str, ".blue"},
		{"label", false, arr, ".blue,black,brown"},
		{"label", false, obj, ".B,150,G,200,R,100"},
		{"label", true, str, ".blue"},
		{"label", true, arr, ".blue.black.brown"},
		{"label", true, obj, ".B=150.G=200.R=100"},
		{"simple", false, str, "blue"},
		{"simple", false, arr, "blue,black,brown"},
		{"simple", false, obj, "B,150,G,200,R,100"},
		{"simple", true, str, "blue"},
		{"simple", true, arr, "blue,black,brown"},
		{"simple", true, obj, "B=150,G=200,R=100"},
	}
	for _, tt := range simple {
		t.Run(fmt.Sprintf("%s/%v/%T", tt.style, tt.explode, tt.value), func(t *testing.T) {
			if got := Simple("color", tt.style, tt.explode, tt.value, Identity); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	form := []struct {
		style   string
		explode bool
		value   any
		want    string // decoded query string
	}{
		{"form", false, "", "color="},
		{"form", false, str, "color=blue"},
		{"form", false, arr, "color=blue,black,brown"},
		{"form", false, obj, "color=B,150,G,200,R,100"},
		{"form", true, str, "color=blue"},
		{"form", true, arr, "color=blue&color=black&color=brown"},
		{"form", true, obj, "B=150&G=200&R=100"},
		{"spaceDelimited", false, arr, "color=blue black brown"},
		{"spaceDelimited", false, obj, "color=B 150 G 200 R 100"},
		{"spaceDelimited", true, arr, "color=blue&color=black&color=brown"},
		{"pipeDelimited", false, arr, "color=blue|black|brown"},
		{"pipeDelimited", false, obj, "color=B|150|G|200|R|100"},
		{"pipeDelimited", true, arr, "color=blue&color=black&color=brown"},
		{"deepObject", true, obj, "color[B]=150&color[G]=200&color[R]=100"},
	}
	for _, tt := range form {
		t.Run(fmt.Sprintf("%s/%v/%T", tt.style, tt.explode, tt.value), func(t *testing.T) {
			pairs := Form("color", tt.style, tt.explode, tt.value, EscapeQuery)
			var parts []string
			for _, p := range pairs {
				parts = append(parts, p.K+"="+p.V)
			}
			wire := strings.Join(parts, "&")
			got, err := url.QueryUnescape(wire)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q (wire %q), want %q", got, wire, tt.want)
			}
		})
	}
}
