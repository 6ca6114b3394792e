package spec

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// aliasStringBomb is a YAML spec whose aliases each repeat one long string:
// few nodes, but n times the string's length once expanded.
func aliasStringBomb(size, n int) string {
	return "openapi: 3.0.3\ninfo: {title: t, version: \"1\"}\nx: &b \"" + strings.Repeat("A", size) +
		"\"\ny: [" + strings.TrimSuffix(strings.Repeat("*b,", n), ",") + "]\npaths: {}\n"
}

// A 2 MB spec of one 2 MiB string and 400 aliases to it passed the node
// guard (an alias to a scalar is one node) and ran the process out of
// memory; a 1 MB one took 14.5 s and 970 MB. The text aliases repeat is now
// bounded too.
func TestYAMLAliasBombOfLongStringsRefused(t *testing.T) {
	doc := aliasStringBomb(1<<20, 400)
	_, err := Parse(t.Context(), "bomb.yaml", []byte(doc), Options{})
	if err == nil || !strings.Contains(err.Error(), "aliases repeat too much text") {
		t.Fatalf("err = %v, want the alias text refused", err)
	}
	// Count the work: no more than the alias budget was written before the
	// refusal.
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := newYAMLWriter(&n, &buf, len(doc))
	if err := w.node(&n, 0); err != errYAMLAliasBytes {
		t.Fatalf("err = %v", err)
	}
	if limit := max(aliasBytesFloor, 2*len(doc)); buf.Len() > len(doc)+limit {
		t.Errorf("wrote %d bytes before refusing; the document is %d and the alias budget %d", buf.Len(), len(doc), limit)
	}

	// Merge keys and aliased keys repeat text as well.
	long := strings.Repeat("k", 1<<20)
	merge := "openapi: 3.0.3\nbase: &m {k: " + long + "}\n"
	for i := range 12 {
		merge += fmt.Sprintf("m%d: {<<: *m}\n", i)
	}
	if _, err := Parse(t.Context(), "merge.yaml", []byte(merge), Options{}); err == nil || !strings.Contains(err.Error(), "aliases repeat") {
		t.Errorf("merge keys: err = %v", err)
	}
	keys := "openapi: 3.0.3\nk: &k " + long + "\n"
	for i := range 12 {
		keys += fmt.Sprintf("m%d: {*k : 1}\n", i)
	}
	if _, err := Parse(t.Context(), "keys.yaml", []byte(keys), Options{}); err == nil || !strings.Contains(err.Error(), "aliases repeat") {
		t.Errorf("aliased keys: err = %v", err)
	}
}

// Aliases the way real specs use them, a shared block repeated where it
// applies, stay well within the bound.
func TestYAMLAliasesWithinBoundLoad(t *testing.T) {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: t, version: \"1\"}\nx-errors: &errors\n  '400': {description: \"" +
		strings.Repeat("bad request ", 50) + "\"}\n  '500': {description: oops}\npaths:\n")
	for i := range 300 {
		fmt.Fprintf(&b, "  /r%d:\n    get:\n      operationId: r%d\n      responses:\n        <<: *errors\n        '200': {description: ok}\n", i, i)
	}
	s := mustParse(t, "shared.yaml", b.String(), Options{})
	if len(s.Endpoints) != 300 {
		t.Fatalf("%d endpoints, want 300", len(s.Endpoints))
	}
	if c := s.Endpoints[299].Describe(DescribeOptions{}); c.Responses == nil || c.Responses.Other["400"] == "" {
		t.Errorf("the merged responses are lost: %+v", c.Responses)
	}
}

// An external document is refused by the same bound as the spec itself:
// kin-openapi's own YAML decoding bounds alias nodes but not the text they
// repeat, so external YAML goes through the bounded converter first.
func TestYAMLAliasBombInExternalRefRefused(t *testing.T) {
	bomb := aliasStringBomb(1<<20, 400) + "components: {schemas: {X: {type: string}}}\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/openapi.json":
			fmt.Fprint(w, `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"post":{"operationId":"a",
			  "requestBody":{"content":{"application/json":{"schema":{"$ref":"bomb.yaml#/components/schemas/X"}}}},
			  "responses":{"200":{"description":"ok"}}}}}}`)
		case "/bomb.yaml":
			fmt.Fprint(w, bomb)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	s, err := Load(t.Context(), srv.URL+"/openapi.json", Options{AllowExternalRefs: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Endpoints[0].Operation(t.Context())
	if err == nil || !strings.Contains(err.Error(), "aliases repeat too much text") {
		t.Errorf("Operation err = %v, want the alias bomb refused", err)
	}
}

// An external YAML document without aliases still resolves.
func TestExternalYAMLRefResolves(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/openapi.json":
			fmt.Fprint(w, `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"post":{"operationId":"a",
			  "requestBody":{"content":{"application/json":{"schema":{"$ref":"pet.yaml#/Pet"}}}},
			  "responses":{"200":{"description":"ok"}}}}}}`)
		case "/pet.yaml":
			fmt.Fprint(w, "Pet:\n  type: object\n  required: [name]\n  properties:\n    name: {type: string}\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	s, err := Load(t.Context(), srv.URL+"/openapi.json", Options{AllowExternalRefs: true})
	if err != nil {
		t.Fatal(err)
	}
	op, err := s.Endpoints[0].Operation(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sc := op.Op.RequestBody.Value.Content["application/json"].Schema.Value
	if sc == nil || len(sc.Required) != 1 || sc.Properties["name"] == nil {
		t.Errorf("schema not resolved: %+v", sc)
	}
}
