package serialize

import (
	"net/url"
	"testing"
)

func TestFormEscapesKeys(t *testing.T) {
	b, problems := encodeForm(BodyInput{ContentType: "application/x-www-form-urlencoded", Value: map[string]any{
		"metadata": map[string]any{"a]&b=[": "v&w"},
	}}, nil)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	vals, err := url.ParseQuery(string(b.Data))
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 1 || vals.Get("metadata[a]&b=[]") != "v&w" {
		t.Errorf("parsed %v from %s", vals, b.Data)
	}
}
