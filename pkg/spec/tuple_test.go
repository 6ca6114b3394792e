package spec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTupleItemsLoad: a tuple-style items array (a list of schemas) made
// the whole spec fail to load ("a JSON array where the format expects
// schema"), as Slack's Web API spec did. It is read as its first schema,
// with one warning; an example holding "items": [...] is data and stays.
func TestTupleItemsLoad(t *testing.T) {
	doc := `{"swagger":"2.0","info":{"title":"t","version":"1"},"host":"api.example.com","basePath":"/api",
"paths":{"/chat.list":{"get":{"operationId":"chat_list","parameters":[{"name":"ids","in":"query","type":"array","items":[{"type":"string"},{"type":"integer"}]}],
"responses":{"200":{"description":"ok","schema":{"type":"object","properties":{"items":{"type":"array","items":[{"type":"string"}]}},
"example":{"items":["a",1]}}}}}}}}`
	s, err := Parse(t.Context(), "tuple.json", []byte(doc), Options{Name: "t"})
	if err != nil {
		t.Fatalf("does not load: %v", err)
	}
	n := 0
	for _, w := range s.Warnings {
		if strings.Contains(w, "tuple-style items") {
			n++
			if !strings.HasPrefix(w, "2 tuple-style") {
				t.Errorf("warning %q, want 2 arrays counted", w)
			}
		}
	}
	if n != 1 {
		t.Errorf("warnings %q, want one about tuple items", s.Warnings)
	}
	if len(s.Endpoints) != 1 {
		t.Fatalf("endpoints %v", ids(s))
	}
	c := s.Endpoints[0].Describe(DescribeOptions{})
	b, _ := json.Marshal(c.Parameters)
	if len(c.Parameters) != 1 || !strings.Contains(string(b), `"string"`) || strings.Contains(string(b), `"integer"`) {
		t.Errorf("parameters %s, want an array of strings", b)
	}
}

func TestSlackWebSpecLoads(t *testing.T) {
	path := filepath.Join(sharedSpecs, "slack-web.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skip("shared specs absent")
	}
	s, err := Parse(t.Context(), path, data, Options{Name: "slack"})
	if err != nil {
		t.Fatalf("slack-web does not load: %v", err)
	}
	if got := len(s.Endpoints); got < 150 {
		t.Errorf("%d endpoints, want Slack's 174", got)
	}
}

// TestRefInExampleIsNoReference: GitHub's every load warned "external $refs
// are not followed (https://api.github.com/scim/v2/…)" for "$ref" fields
// of example values. Only references in schema positions warn.
func TestRefInExampleIsNoReference(t *testing.T) {
	doc := func(extra string) string {
		return `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/u":{"get":{"operationId":"u",
"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object"` + extra + `},
"example":{"members":[{"$ref":"https://api.example.com/scim/v2/Users/1"}]},
"examples":{"one":{"value":{"$ref":"https://api.example.com/scim/v2/Users/2"}}}}}}}}}}}`
	}
	s := mustParse(t, "t.json", doc(""), Options{Name: "t"})
	for _, w := range s.Warnings {
		if strings.Contains(w, "external $ref") {
			t.Errorf("warning %q for a $ref inside an example", w)
		}
	}
	s = mustParse(t, "t.json", doc(`,"properties":{"a":{"$ref":"https://schemas.example.com/a.json"}}`), Options{Name: "t"})
	found := false
	for _, w := range s.Warnings {
		found = found || strings.Contains(w, "external $refs are not followed (https://schemas.example.com/a.json)")
	}
	if !found {
		t.Errorf("warnings %q, want the schema's external $ref named", s.Warnings)
	}
}

// TestGitHubLoadsWithoutRefWarnings: every load of GitHub's spec warned
// "external $refs are not followed (https://api.github.com/scim/v2/…)" for
// the "$ref" data fields of its SCIM examples.
func TestGitHubLoadsWithoutRefWarnings(t *testing.T) {
	if testing.Short() {
		t.Skip("loads GitHub's 13 MB spec")
	}
	for _, file := range []string{"github-full.json", "github-rest.json"} {
		path := filepath.Join(sharedSpecs, file)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Skip("shared specs absent")
		}
		s, err := Parse(t.Context(), path, data, Options{Name: "github"})
		if err != nil {
			t.Fatalf("%s does not load: %v", file, err)
		}
		for _, w := range s.Warnings {
			if strings.Contains(w, "$ref") {
				t.Errorf("%s: warning %q", file, w)
			}
		}
	}
}
