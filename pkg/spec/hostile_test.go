package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
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

// The alias budget counted a scalar's raw bytes, but JSON escaping writes a
// control character or "<" as six: 2 MiB of "\x01" escapes and seven
// aliases to it wrote 24 MiB of JSON and took 140 MB to check. The text
// is charged as written.
func TestYAMLAliasBombOfEscapedStringsRefused(t *testing.T) {
	for _, tt := range []struct {
		name, scalar string
		aliases      int
	}{
		{"control characters", `"` + strings.Repeat(`\x01`, (2<<20)/4) + `"`, 7},
		{"html characters", `"` + strings.Repeat("<", 1<<20) + `"`, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := func(aliases int) string {
				return "openapi: 3.0.3\ninfo: {title: t, version: \"1\"}\nx: &b " + tt.scalar +
					"\ny: [" + strings.TrimSuffix(strings.Repeat("*b,", aliases), ",") + "]\npaths: {}\n"
			}
			bomb := doc(tt.aliases)
			if _, err := Parse(t.Context(), "bomb.yaml", []byte(bomb), Options{}); err == nil || !strings.Contains(err.Error(), "aliases repeat too much text") {
				t.Fatalf("err = %v, want the alias text refused", err)
			}
			once, err := yamlToJSON([]byte(doc(0)))
			if err != nil {
				t.Fatal(err)
			}
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(bomb), &n); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			w := newYAMLWriter(&n, &buf, len(bomb))
			if err := w.node(&n, 0); err != errYAMLAliasBytes {
				t.Fatalf("err = %v", err)
			}
			// The document once, the alias budget, and the scalar that
			// passed it.
			scalar := len(once) - len(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"x":,"y":[],"paths":{}}`)
			if limit := max(aliasBytesFloor, 2*len(bomb)); buf.Len() > len(once)+limit+scalar {
				t.Errorf("wrote %d bytes before refusing; once %d, alias budget %d", buf.Len(), len(once), limit)
			}
		})
	}
	// Escaped text within the budget still loads: one alias to 300 KB of
	// "<" writes 1.8 MB through it.
	small := "openapi: 3.0.3\ninfo: {title: t, version: \"1\"}\nx: &b \"" + strings.Repeat("<", 300<<10) + "\"\ny: [*b]\npaths: {}\n"
	if _, err := Parse(t.Context(), "small.yaml", []byte(small), Options{}); err != nil {
		t.Errorf("one alias to escaped text: %v", err)
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

// nestedSchemaDoc is a spec whose "deep" operation takes a request body
// schema nested n levels by the given keyword, next to a plain "ok" one.
func nestedSchemaDoc(n int, open, close string) string {
	return `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
	  "/deep":{"post":{"operationId":"deep","requestBody":{"required":true,"content":{"application/json":{"schema":` +
		strings.Repeat(open, n) + `{"type":"string"}` + strings.Repeat(close, n) + `}}},"responses":{"200":{"description":"ok"}}}},
	  "/ok":{"get":{"operationId":"ok","parameters":[{"name":"q","in":"query","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}}}`
}

// refChainDoc is a spec whose "deep" operation reaches n schemas deep
// through a chain of $refs, each component one level.
func refChainDoc(n int) string {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"components":{"schemas":{`)
	for i := range n {
		fmt.Fprintf(&b, `"C%d":{"type":"array","items":{"$ref":"#/components/schemas/C%d"}},`, i, i+1)
	}
	fmt.Fprintf(&b, `"C%d":{"type":"string"}}},"paths":{
	  "/deep":{"post":{"operationId":"deep","requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/C0"}}}},"responses":{"200":{"description":"ok"}}}},
	  "/ok":{"get":{"operationId":"ok","responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/C%d"}}}}}}}}}`, n, n)
	return b.String()
}

// A 225 KB spec with items nested 9,000 levels loaded in 0.06 s, then its
// first invoke took 58 s and 1.7 GB (inspect 12 s, check 45 s): the price
// of the depth was paid at call time. The operation is now left out at
// load, with a warning, and the rest of the spec serves.
func TestDeeplyNestedSchemaLeftOutAtLoad(t *testing.T) {
	tests := []struct {
		name, doc, why string
	}{
		{"items 9000", nestedSchemaDoc(9000, `{"type":"array","items":`, `}`), "deeper than 64 levels"},
		{"properties 3000", nestedSchemaDoc(3000, `{"type":"object","properties":{"a":`, `}}`), "deeper than 64 levels"},
		{"allOf 3000", nestedSchemaDoc(3000, `{"allOf":[`, `]}`), "deeper than 64 levels"},
		{"additionalProperties 65", nestedSchemaDoc(65, `{"additionalProperties":`, `}`), "deeper than 64 levels"},
		{"ref chain 300", refChainDoc(300), "deeper than 256 levels through $refs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, "deep.json", tt.doc, Options{Name: "deep"})
			if got := ids(s); !slices.Equal(got, []string{"deep.ok"}) {
				t.Fatalf("endpoints = %q, want only deep.ok", got)
			}
			if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "POST /deep: its schemas nest "+tt.why) || !strings.HasSuffix(s.Warnings[0], "left out") {
				t.Errorf("warnings = %q", s.Warnings)
			}
			if len(s.Unusable) != 1 {
				t.Errorf("unusable = %v, want the deep operation", s.Unusable)
			}
			for id, why := range s.Unusable {
				if !strings.HasPrefix(id, "deep.") || !strings.Contains(why, tt.why) {
					t.Errorf("unusable %s: %q", id, why)
				}
			}
			ok := s.Endpoints[0]
			if _, err := ok.Operation(t.Context()); err != nil {
				t.Errorf("the rest of the spec cannot be rebuilt: %v", err)
			}
			if c := ok.Describe(DescribeOptions{}); c.Elided == "parameters, body and responses could not be rendered" {
				t.Errorf("the rest of the spec cannot be described: %+v", c)
			}
		})
	}
	// An endpoint whatever built it (an old cache, a caller in this
	// package) is refused before kin-openapi walks it, and described only
	// to the bounded depth.
	s := mustParse(t, "deep.json", nestedSchemaDoc(9000, `{"type":"array","items":`, `}`), Options{Name: "deep"})
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal([]byte(nestedSchemaDoc(9000, `{"type":"array","items":`, `}`)), &doc); err != nil {
		t.Fatal(err)
	}
	raw := doc.Paths["/deep"]["post"]
	deep := &Endpoint{ID: "deep.deep", Spec: "deep", Method: "POST", Path: "/deep", BodyTypes: []string{"application/json"}, raw: raw, spec: s}
	if _, err := deep.Operation(t.Context()); err == nil || !strings.Contains(err.Error(), "deeper than 64 levels") {
		t.Errorf("Operation err = %v, want the depth refused", err)
	}
	c := deep.Describe(DescribeOptions{})
	if c.RequestBody == nil || c.RequestBody.Schema == nil {
		t.Fatalf("no body schema: %+v", c)
	}
	levels := 0
	for sc := c.RequestBody.Schema; sc != nil; sc = sc.Items {
		levels++
	}
	if levels > maxSchemaDepth+1 {
		t.Errorf("described %d levels, want at most %d", levels, maxSchemaDepth+1)
	}
}

// Recursive schemas are legitimate (GitHub, Stripe and Kubernetes are full
// of them): the depth bound cuts cycles where the describer does and keeps
// them loading.
func TestRecursiveSchemasStillLoad(t *testing.T) {
	doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"components":{"schemas":{
	  "Node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/components/schemas/Node"}}}},
	  "A":{"type":"object","properties":{"b":{"$ref":"#/components/schemas/B"}}},
	  "B":{"allOf":[{"$ref":"#/components/schemas/A"},{"type":"object","properties":{"n":{"type":"integer"}}}]}}},
	  "paths":{"/n":{"post":{"operationId":"n","requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Node"}}}},
	    "responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/B"}}}}}}}}}`
	s := mustParse(t, "rec.json", doc, Options{})
	if len(s.Endpoints) != 1 || len(s.Warnings) != 0 {
		t.Fatalf("endpoints %q, warnings %q", ids(s), s.Warnings)
	}
	if _, err := s.Endpoints[0].Operation(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// "C": {"$ref": "#/components/schemas/C"} as a request body made invoke
// panic inside kin-openapi, which resolves such a loop to no schema at all.
// A $ref loop with no schema in between describes nothing: it becomes the
// empty schema (any value) with a warning, and the operation stays.
func TestSelfReferencingSchemaTreatedAsAny(t *testing.T) {
	tests := []struct {
		name, schemas, want string
	}{
		{"self", `"C":{"$ref":"#/components/schemas/C"}`, "(C -> C)"},
		{"pair", `"C":{"$ref":"#/components/schemas/D"},"D":{"$ref":"#/components/schemas/C","description":"siblings do not count"}`, "(C -> D -> C)"},
		{"into a loop", `"C":{"$ref":"#/components/schemas/D"},"D":{"$ref":"#/components/schemas/E"},"E":{"$ref":"#/components/schemas/D"}`, "(D -> E -> D)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"components":{"schemas":{` + tt.schemas + `}},
			  "paths":{"/c":{"post":{"operationId":"c","requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/C"}}}},
			    "responses":{"200":{"description":"ok"}}}}}}`
			s := mustParse(t, "self.json", doc, Options{})
			if len(s.Endpoints) != 1 {
				t.Fatalf("endpoints = %q", ids(s))
			}
			if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "$ref loop with no schema in between "+tt.want) || !strings.Contains(s.Warnings[0], "any value") {
				t.Errorf("warnings = %q", s.Warnings)
			}
			op, err := s.Endpoints[0].Operation(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if sc := op.Op.RequestBody.Value.Content["application/json"].Schema; sc == nil || sc.Value == nil {
				t.Errorf("the body schema resolves to nothing: %+v", sc)
			}
			if c := s.Endpoints[0].Describe(DescribeOptions{}); c.RequestBody == nil || c.RequestBody.Schema == nil {
				t.Errorf("contract = %+v", c)
			}
		})
	}
}

// kin-openapi decodes every schema level of a Swagger 2.0 document again
// from its bytes, and its strict validation (specgate check) walks every
// schema of any document: both cost time quadratic in the nesting, so the
// deep parts go before kin-openapi reads the document.
func TestDeeplyNestedSchemaNeverReachesKinOpenAPI(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","items":`, 9000) + `{"type":"string"}` + strings.Repeat(`}`, 9000)
	tests := []struct {
		name, doc string
		warnings  []string
	}{
		{"swagger inline", `{"swagger":"2.0","info":{"title":"t","version":"1"},"host":"example.com","paths":{
		    "/deep":{"post":{"operationId":"deep","parameters":[{"in":"body","name":"b","schema":` + deep + `}],"responses":{"200":{"description":"ok"}}}},
		    "/ok":{"get":{"operationId":"ok","responses":{"200":{"description":"ok"}}}}}}`,
			[]string{"POST /deep: its schemas nest deeper than 64 levels: left out"}},
		{"swagger definition", `{"swagger":"2.0","info":{"title":"t","version":"1"},"host":"example.com","definitions":{"D":` + deep + `,"E":{"type":"string"}},"paths":{
		    "/deep":{"post":{"operationId":"deep","parameters":[{"in":"body","name":"b","schema":{"$ref":"#/definitions/D"}}],"responses":{"200":{"description":"ok"}}}},
		    "/ok":{"get":{"operationId":"ok","responses":{"200":{"description":"ok","schema":{"$ref":"#/definitions/E"}}}}}}}`,
			[]string{"definitions.D nests deeper than 64 levels", "POST /deep: its schemas nest deeper than 64 levels: left out", "validation skipped: POST /deep"}},
		{"unused component", `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"components":{"schemas":{"Unused":` + deep + `}},"paths":{
		    "/ok":{"get":{"operationId":"ok","responses":{"200":{"description":"ok"}}}}}}`,
			[]string{"validation skipped: components.schemas.Unused nests deeper than 64 levels"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, "deep.json", tt.doc, Options{Name: "deep", Validate: true})
			if got := ids(s); !slices.Equal(got, []string{"deep.ok"}) {
				t.Fatalf("endpoints = %q, want only deep.ok", got)
			}
			for _, want := range tt.warnings {
				if !slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
					t.Errorf("warnings = %q, want one saying %q", s.Warnings, want)
				}
			}
			if _, err := s.Endpoints[0].Operation(t.Context()); err != nil {
				t.Errorf("the rest of the spec cannot be rebuilt: %v", err)
			}
		})
	}
}

// What was left out for depth, and why, comes back from the catalog cache.
func TestUnusableKeptInTheCache(t *testing.T) {
	dir := t.TempDir()
	loc := filepath.Join(dir, "deep.json")
	if err := os.WriteFile(loc, []byte(nestedSchemaDoc(100, `{"type":"array","items":`, `}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Cache{Dir: filepath.Join(dir, "cache")}
	first, err := c.Load(t.Context(), loc, Options{Name: "deep"})
	if err != nil || len(first.Spec.Unusable) != 1 {
		t.Fatalf("first load: %v %v", first.Spec, err)
	}
	second, err := c.Load(t.Context(), loc, Options{Name: "deep"})
	if err != nil || !second.FromCache || !maps.Equal(first.Spec.Unusable, second.Spec.Unusable) {
		t.Fatalf("cached: fromCache=%v unusable %v, want %v (%v)", second.FromCache, second.Spec.Unusable, first.Spec.Unusable, err)
	}
}
