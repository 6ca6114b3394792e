package answer

import (
	"encoding/json"
	"testing"
)

// TestValueTellsJSONTextAndBinaryByOneRule: the rule every reader of an
// answer shares (the view the model reads, a script's api.invoke).
func TestValueTellsJSONTextAndBinaryByOneRule(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		truncated               bool
		want                    BodyKind
		badJSON                 bool
	}{
		{"empty", "application/json", "", false, BodyNone, false},
		{"json", "application/json; charset=utf-8", `{"a":1}`, false, BodyJSON, false},
		{"+json", "application/vnd.github+json", `[1]`, false, BodyJSON, false},
		{"no type, an object", "", ` {"a":1}`, false, BodyJSON, false},
		{"no type, a number is text", "", `5`, false, BodyText, false},
		{"json type, not json", "application/json", `nope`, false, BodyText, true},
		{"json type, cut", "application/json", `{"a":`, true, BodyText, true},
		{"vendor type naming json", "application/x-amz-json-1.1", `{"TableNames":[]}`, false, BodyJSON, false},
		{"vendor type naming json, not json", "application/json-seq", "\x1e{}\n\x1e{}\n", false, BodyText, false},
		{"ndjson is text", "application/x-ndjson", "{}\n{}\n", false, BodyText, false},
		{"yaml is text", "application/yaml", "a: 1\n", false, BodyText, false},
		{"csv is text", "text/csv", "a,b\n", false, BodyText, false},
		{"image", "image/png", "\x89PNG\r\n", false, BodyBinary, false},
		{"no type, not utf-8", "", "\xff\xfe", false, BodyBinary, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Answer{ContentType: tt.contentType, Body: []byte(tt.body), Truncated: tt.truncated}
			v := a.Value()
			if v.Kind != tt.want || v.BadJSON != tt.badJSON {
				t.Fatalf("kind %d, bad JSON %v; want %d, %v", v.Kind, v.BadJSON, tt.want, tt.badJSON)
			}
			if v.Kind == BodyJSON {
				if _, err := json.Marshal(v.JSON); err != nil || v.JSON == nil {
					t.Errorf("decoded %v, %v", v.JSON, err)
				}
			}
			if string(v.Data) != tt.body {
				t.Errorf("data %q, want the body as stored", v.Data)
			}
		})
	}
	// A decoded body is not decoded again.
	a := &Answer{ContentType: "application/json", Body: []byte(`[1]`), Decoded: []any{"kept"}}
	if v := a.Value(); v.Kind != BodyJSON || v.JSON.([]any)[0] != "kept" {
		t.Errorf("value %v: want the answer's Decoded", v.JSON)
	}
}
