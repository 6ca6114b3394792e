package spec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestHasSchemaTuple(t *testing.T) {
	tests := []struct {
		doc  string
		want bool
	}{
		{`{"type":"array","items":[{"type":"string"}]}`, true},
		{`{"type": "array", "items" : [ ]}`, true},
		{`{"a":{"b":[{"items":[1]}]}}`, true},
		{`{"type":"array","items":{"type":"string"}}`, false},
		{`{"example":{"items":["a","b"]}}`, false},
		{`{"examples":{"x":{"value":{"items":[1]}}}}`, false},
		{`{"default":[{"items":[1]}],"enum":[{"items":[]}],"const":{"items":[]}}`, false},
		{`{"x-data":{"items":[1]}}`, false},
		{`{"p":{"example":{"q":1},"items":[{}]}}`, true},
		{`{"s":"\"items\":[","t":["items",{"u":1}]}`, false},
	}
	for _, tt := range tests {
		if got := hasSchemaTuple([]byte(tt.doc)); got != tt.want {
			t.Errorf("hasSchemaTuple(%s) = %t, want %t", tt.doc, got, tt.want)
		}
		// The scan agrees with the rewrite it stands guard for.
		_, warn := rewriteTuples([]byte(tt.doc))
		if got := len(warn) > 0; got != tt.want {
			t.Errorf("the rewrite of %s found tuples: %t, want %t", tt.doc, got, tt.want)
		}
	}
}

func TestHasSchemaTupleOnRealSpecs(t *testing.T) {
	files, _ := filepath.Glob("../../../shared/specs/*.json")
	if len(files) == 0 {
		t.Skip("the shared specs are absent")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, warn := rewriteTuples(data)
		if got, want := hasSchemaTuple(data), len(warn) > 0; got != want {
			t.Errorf("%s: hasSchemaTuple = %t, the rewrite found tuples: %t", filepath.Base(f), got, want)
		}
	}
}

func TestHasNonLocalRef(t *testing.T) {
	tests := []struct {
		doc  string
		want bool
	}{
		{`{"$ref":"#/components/schemas/a"}`, false},
		{`{"$ref" :	"other.yaml#/a"}`, true},
		{`{"$ref":""}`, true},
		{`{"a":{"$ref":"#/x"},"b":{"$ref":"https://example.com/s.json"}}`, true},
		{`{"$ref":1,"s":"$ref"}`, false},
		{`{"$ref":"unterminated`, false},
	}
	for _, tt := range tests {
		if got := hasNonLocalRef([]byte(tt.doc)); got != tt.want {
			t.Errorf("hasNonLocalRef(%s) = %t, want %t", tt.doc, got, tt.want)
		}
	}
}

func TestRawObject(t *testing.T) {
	tests := []struct {
		raw  string
		want string // the members as key=value;..., "" when not an object
	}{
		{`{"a":1,"b":"x","c":{"d":[1,{"e":"}"}]},"a":2}`, `a=2;b="x";c={"d":[1,{"e":"}"}]}`},
		{` { "k" : [ ] , "\u0041" : null } `, `A=null;k=[ ]`},
		{`{}`, ``},
		{`null`, "-"},
		{`[1]`, "-"},
		{`{"`, "-"},
		{`{"a"`, "-"},
	}
	for _, tt := range tests {
		m, ok := rawObject([]byte(tt.raw))
		got := "-"
		if ok {
			var parts []string
			for k, v := range m {
				parts = append(parts, k+"="+string(v))
			}
			slices.Sort(parts)
			got = strings.Join(parts, ";")
		}
		if got != tt.want {
			t.Errorf("rawObject(%s) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}
