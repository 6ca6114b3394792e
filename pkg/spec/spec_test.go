package spec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/specgate/specgate/internal/yamlbudget"
)

const sharedSpecs = "../../../shared/specs"

func mustParse(t *testing.T, name, doc string, opts Options) *Spec {
	t.Helper()
	s, err := Parse(t.Context(), name, []byte(doc), opts)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return s
}

func ids(s *Spec) []string {
	var out []string
	for _, e := range s.Endpoints {
		out = append(out, e.ID)
	}
	return out
}

func TestLoadFixtures(t *testing.T) {
	tests := []struct {
		file    string
		ops     int
		base    string
		someID  string
		version string
	}{
		{"petstore-v3.yaml", 19, "https://petstore3.swagger.io/api/v3", "petstore-v3.findPetsByStatus", "3.0.4"},
		{"petstore-v2.json", 20, "https://petstore.swagger.io/v2", "petstore-v2.getPetById", "2.0"},
		{"uber-v2.json", 5, "https://api.uber.com/v1", "uber-v2.get_estimates_price", "2.0"},
		{"circular-ref.json", 1, "", "", "3.0.0"},
		{"mutual-circular-ref.json", 1, "", "", "3.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			s, err := Load(t.Context(), filepath.Join("../../testdata", tt.file), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(s.Endpoints); got != tt.ops {
				t.Errorf("endpoints = %d, want %d", got, tt.ops)
			}
			if s.BaseURL != tt.base {
				t.Errorf("BaseURL = %q, want %q", s.BaseURL, tt.base)
			}
			if s.Version != tt.version {
				t.Errorf("Version = %q, want %q", s.Version, tt.version)
			}
			if tt.someID != "" && !slices.Contains(ids(s), tt.someID) {
				t.Errorf("no endpoint %s in %v", tt.someID, ids(s))
			}
			// Every operation rebuilds with its references resolved, cycles
			// included.
			for _, e := range s.Endpoints {
				op, err := e.Operation(t.Context())
				if err != nil {
					t.Fatalf("%s: %v", e.ID, err)
				}
				if op.Op == nil || op.Method != e.Method {
					t.Fatalf("%s: bad rebuilt operation", e.ID)
				}
			}
		})
	}
}

func TestEndpointIDs(t *testing.T) {
	doc := `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{
	  "/api/v3/ticker/price":{"get":{"responses":{"200":{"description":"ok"}}}},
	  "/repos/{owner}/{repo}":{"get":{"operationId":"repos/get","responses":{"200":{"description":"ok"}}},
	                          "patch":{"operationId":"repos/get","responses":{"200":{"description":"ok"}}}},
	  "/x":{"post":{"operationId":"repos/get","responses":{"200":{"description":"ok"}}},
	        "put":{"operationId":"  spaced  op ","responses":{"200":{"description":"ok"}}}},
	  "/repos/get_2":{"get":{"operationId":"repos/get_2","responses":{"200":{"description":"ok"}}}}
	}}`
	s := mustParse(t, "binance.json", doc, Options{})
	got := ids(s)
	want := []string{
		"binance.get_api_v3_ticker_price",
		"binance.repos/get",
		"binance.repos/get_2",
		"binance.spaced_op",
		"binance.repos/get_3",
		"binance.repos/get_2_2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Errorf("duplicate id %s", id)
		}
		seen[id] = true
	}
}

func TestSlugID(t *testing.T) {
	tests := []struct{ method, path, want string }{
		{"GET", "/api/v3/ticker/price", "get_api_v3_ticker_price"},
		{"DELETE", "/pets/{petId}", "delete_pets_petId"},
		{"POST", "/", "post"},
		{"GET", "/files/{file_id}#add_shared_link", "get_files_file_id_add_shared_link"},
		{"PUT", "/a--b/..//c", "put_a_b_c"},
	}
	for _, tt := range tests {
		if got := slugID(tt.method, tt.path); got != tt.want {
			t.Errorf("slugID(%s %s) = %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}

func TestNameFromLocation(t *testing.T) {
	tests := map[string]string{
		"specs/petstore-v3.yaml":              "petstore-v3",
		"/x/github-full.json":                 "github-full",
		"https://example.com/api/openapi.yml": "openapi",
		"api.YAML":                            "api",
	}
	for in, want := range tests {
		if got := NameFromLocation(in); got != want {
			t.Errorf("NameFromLocation(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestServers(t *testing.T) {
	doc := `{"openapi":"3.0.1","info":{"title":"t","version":"1"},
	"servers":[{"url":"{scheme}://api.example.com/{version}","variables":{"scheme":{"default":"https","enum":["https","http"]},"version":{"default":"v2"}}}],
	"paths":{
	  "/a":{"get":{"responses":{"200":{"description":"ok"}}}},
	  "/b":{"servers":[{"url":"https://b.example.com/"}],"get":{"responses":{"200":{"description":"ok"}}},
	        "post":{"servers":[{"url":"https://upload.example.com"}],"responses":{"200":{"description":"ok"}}}}
	}}`
	s := mustParse(t, "api.json", doc, Options{})
	got := map[string]string{}
	for _, e := range s.Endpoints {
		got[e.ID] = e.BaseURL
	}
	want := map[string]string{
		"api.get_a":  "https://api.example.com/v2",
		"api.get_b":  "https://b.example.com",
		"api.post_b": "https://upload.example.com",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("base URLs (-want +got):\n%s", diff)
	}
	// A configured base URL overrides every server.
	s = mustParse(t, "api.json", doc, Options{BaseURL: "http://127.0.0.1:9"})
	for _, e := range s.Endpoints {
		if e.BaseURL != "http://127.0.0.1:9" {
			t.Errorf("%s: BaseURL = %q with an override", e.ID, e.BaseURL)
		}
	}
}

func TestParametersMergedAndBodyOrder(t *testing.T) {
	doc := `
openapi: 3.0.3
info: {title: t, version: "1"}
components:
  parameters:
    Owner: {name: owner, in: path, required: true, schema: {type: string}}
  requestBodies:
    Pet:
      content:
        application/xml: {schema: {type: object}}
        application/json: {schema: {type: object}}
paths:
  /pets/{owner}/{id}:
    parameters:
      - $ref: '#/components/parameters/Owner'
      - {name: id, in: path, required: true, schema: {type: integer}}
      - {name: verbose, in: query, schema: {type: boolean}}
    put:
      operationId: updatePet
      parameters:
        - {name: verbose, in: query, required: true, schema: {type: boolean}}
      requestBody: {$ref: '#/components/requestBodies/Pet'}
      security: []
      responses:
        200: {description: ok}
`
	s := mustParse(t, "pets.yaml", doc, Options{})
	e := s.Endpoints[0]
	want := []Param{{Name: "owner", In: "path", Required: true}, {Name: "id", In: "path", Required: true}, {Name: "verbose", In: "query", Required: true}}
	if diff := cmp.Diff(want, e.Params); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	// YAML key order survives: the first body type the spec lists is first.
	if diff := cmp.Diff([]string{"application/xml", "application/json"}, e.BodyTypes); diff != "" {
		t.Errorf("body types (-want +got):\n%s", diff)
	}
	if e.Security == nil || len(e.Security) != 0 {
		t.Errorf("security = %#v, want an explicit empty list", e.Security)
	}
	op, err := e.Operation(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(op.Op.Parameters); n != 3 {
		t.Errorf("rebuilt operation has %d parameters, want 3", n)
	}
	if op.Op.RequestBody == nil || op.Op.RequestBody.Value == nil {
		t.Fatal("rebuilt operation lost its body")
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"empty.json", "  ", "empty document"},
		{"garbage.json", "{not json", "not JSON or YAML"},
		{"bad.yaml", "a: [1, 2\nb: {", "invalid YAML"},
		{"noversion.json", `{"info":{}}`, `neither an "openapi" nor a "swagger"`},
		{"old.json", `{"swagger":"1.2"}`, `unsupported swagger version "1.2"`},
		{"four.json", `{"openapi":"4.0.0"}`, `unsupported openapi version "4.0.0"`},
		{"paths.json", `{"openapi":"3.0.0","paths":[1]}`, "paths:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(t.Context(), tt.name, []byte(tt.doc), Options{})
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a *LoadError", err)
			}
			if !strings.HasPrefix(err.Error(), tt.name+": ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to name %s and say %q", err, tt.name, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("err spans lines: %q", err)
			}
		})
	}
	_, err := Load(t.Context(), "testdata/does-not-exist.yaml", Options{})
	if err == nil || !strings.Contains(err.Error(), "does-not-exist.yaml: no such file") {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestExternalRefsNeverRead(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf(`{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"post":{
	  "requestBody":{"content":{"application/json":{"schema":{"$ref":%q}}}},
	  "responses":{"200":{"description":"ok"}}}}}}`, secret)
	s := mustParse(t, "ext.json", doc, Options{})
	if len(s.Warnings) == 0 || !strings.Contains(s.Warnings[0], "external $refs are not followed") {
		t.Errorf("warnings = %q, want one about external refs", s.Warnings)
	}
	_, err := s.Endpoints[0].Operation(t.Context())
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Operation err = %v, want the external ref refused", err)
	}
}

func TestLoadFromURL(t *testing.T) {
	doc, err := os.ReadFile("../../testdata/petstore-v3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/openapi.yaml":
			w.Write(bytes.Replace(doc, []byte("url: https://petstore3.swagger.io/api/v3"), []byte("url: /api/v3"), 1))
		case "/big.json":
			w.Write([]byte(`{"openapi":"3.0.0","x":"` + strings.Repeat("a", 4096) + `"}`))
		case "/away":
			http.Redirect(w, r, "http://[::1]:1/openapi.yaml", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	s, err := Load(t.Context(), srv.URL+"/openapi.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	// openapi.yaml is a generic file name: the title names the spec.
	if s.Name != "swagger-petstore-openapi-3-0" || len(s.Endpoints) != 19 {
		t.Errorf("name %q with %d endpoints", s.Name, len(s.Endpoints))
	}
	// A relative server URL resolves against the spec's URL.
	if want := srv.URL + "/api/v3"; s.BaseURL != want {
		t.Errorf("BaseURL = %q, want %q", s.BaseURL, want)
	}
	if _, err := Load(t.Context(), srv.URL+"/big.json", Options{MaxBytes: 1024}); err == nil || !strings.Contains(err.Error(), "byte limit") {
		t.Errorf("size cap: err = %v", err)
	}
	if _, err := Load(t.Context(), srv.URL+"/missing.json", Options{}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: err = %v", err)
	}
	if _, err := Load(t.Context(), srv.URL+"/away", Options{}); err == nil || !strings.Contains(err.Error(), "another host") {
		t.Errorf("redirect: err = %v", err)
	}
}

func TestCache(t *testing.T) {
	dir := t.TempDir()
	c := Cache{Dir: dir}
	loc := "../../testdata/petstore-v3.yaml"
	first, err := c.Load(t.Context(), loc, Options{})
	if err != nil || first.FromCache || first.CacheError != nil {
		t.Fatalf("first load: %+v, %v", first, err)
	}
	second, err := c.Load(t.Context(), loc, Options{})
	if err != nil || !second.FromCache {
		t.Fatalf("second load: fromCache=%v err=%v cacheErr=%v", second.FromCache, err, second.CacheError)
	}
	if diff := cmp.Diff(ids(first.Spec), ids(second.Spec)); diff != "" {
		t.Errorf("cached ids differ:\n%s", diff)
	}
	for i, e := range second.Spec.Endpoints {
		if diff := cmp.Diff(*first.Spec.Endpoints[i], *e, cmp.AllowUnexported(Endpoint{}), cmp.FilterPath(func(p cmp.Path) bool {
			return p.Last().String() == ".spec"
		}, cmp.Ignore())); diff != "" {
			t.Fatalf("cached endpoint %s differs:\n%s", e.ID, diff)
		}
		if _, err := e.Operation(t.Context()); err != nil {
			t.Fatalf("cached %s: %v", e.ID, err)
		}
	}
	// Another name is another catalog.
	other, err := c.Load(t.Context(), loc, Options{Name: "pets"})
	if err != nil || other.FromCache || other.Spec.Endpoints[0].Spec != "pets" {
		t.Fatalf("renamed load: fromCache=%v err=%v", other.FromCache, err)
	}

	// A corrupt file is rebuilt, never trusted.
	files, _ := filepath.Glob(filepath.Join(dir, "*.gob"))
	if len(files) != 2 {
		t.Fatalf("cache files: %v", files)
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		data[len(data)-10] ^= 0xff
		os.WriteFile(f, data, 0o600)
	}
	third, err := c.Load(t.Context(), loc, Options{})
	if err != nil || third.FromCache || third.CacheError == nil || !strings.Contains(third.CacheError.Error(), "checksum") {
		t.Fatalf("corrupt cache: fromCache=%v err=%v cacheErr=%v", third.FromCache, err, third.CacheError)
	}
	fourth, err := c.Load(t.Context(), loc, Options{})
	if err != nil || !fourth.FromCache {
		t.Fatalf("rewritten cache not used: %v %v", fourth.FromCache, err)
	}
	// A disabled cache never writes.
	none, err := Cache{}.Load(t.Context(), loc, Options{})
	if err != nil || none.FromCache {
		t.Fatalf("no cache: %v %v", none.FromCache, err)
	}
}

func TestCatalog(t *testing.T) {
	a := mustParse(t, "a.json", `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/x":{"get":{"operationId":"getX","responses":{"200":{"description":"ok"}}}}}}`, Options{})
	b := mustParse(t, "b.json", `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/x":{"get":{"operationId":"getX","responses":{"200":{"description":"ok"}}}}}}`, Options{})
	cat, err := NewCatalog(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if cat.Len() != 2 {
		t.Errorf("Len = %d", cat.Len())
	}
	if e, ok := cat.Lookup("b.getX"); !ok || e.Spec != "b" {
		t.Errorf("Lookup(b.getX) = %v, %v", e, ok)
	}
	if _, ok := cat.Lookup("c.getX"); ok {
		t.Error("Lookup of an unknown id succeeded")
	}
	if _, err := NewCatalog(a, a); err == nil {
		t.Error("two specs with one name were accepted")
	}
}

// TestSharedCorpus walks every spec of the shared corpus: each loads, or
// fails with a one-line reason naming the file.
func TestSharedCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(sharedSpecs, "*"))
	if len(files) == 0 {
		t.Skip("shared spec corpus not present")
	}
	if raceDetector {
		t.Skip("loads large specs: runs without -race")
	}
	knownBad := map[string]bool{} // every spec of the corpus loads; slack-web since tuple items are read
	for _, f := range files {
		if strings.HasSuffix(f, ".md") {
			continue
		}
		base := filepath.Base(f)
		t.Run(base, func(t *testing.T) {
			s, err := Load(t.Context(), f, Options{})
			if knownBad[base] {
				if err == nil || !strings.HasPrefix(err.Error(), f+": ") || strings.Contains(err.Error(), "\n") {
					t.Fatalf("want a one-line error naming the file, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, e := range s.Endpoints {
				if seen[e.ID] {
					t.Fatalf("duplicate id %s", e.ID)
				}
				seen[e.ID] = true
			}
			if testing.Short() {
				return
			}
			failed := 0
			for _, e := range s.Endpoints {
				if _, err := e.Operation(t.Context()); err != nil {
					failed++
				}
			}
			// Specs with external or broken refs lose only the operations
			// that need them.
			if failed > 0 && len(s.Warnings) == 0 {
				t.Errorf("%d operations cannot be rebuilt but no warning says why", failed)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"petstore-v3.yaml", "petstore-v2.json", "circular-ref.json"} {
		data, err := os.ReadFile(filepath.Join("../../testdata", name))
		if err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"openapi":"3.1.0","paths":{"/a":{"$ref":"#/components/pathItems/x"}}}`))
	f.Add([]byte("openapi: 3.0.0\npaths:\n  /a: &a\n    get: *a\n"))
	// Hostile specs: aliases repeating a long string, schemas nested past
	// the bound literally and through $refs, $ref loops with nothing in
	// between (kept small: the fuzzer mutates from here).
	f.Add([]byte(aliasStringBomb(64<<10, 80)))
	f.Add([]byte("openapi: 3.0.3\nx: &b \"" + strings.Repeat(`\x01<`, 16<<10) + "\"\ny: [*b, *b, *b]\npaths: {}\n"))
	f.Add([]byte(nestedSchemaDoc(70, `{"type":"array","items":`, `}`)))
	f.Add([]byte(nestedSchemaDoc(70, `{"type":"object","properties":{"a":`, `}}`)))
	f.Add([]byte(refChainDoc(260)))
	f.Add([]byte(`{"openapi":"3.0.3","components":{"schemas":{"C":{"$ref":"#/components/schemas/D"},"D":{"$ref":"#/components/schemas/C"},
	  "P":{"properties":{"x":{"$ref":"#/components/schemas/P/properties/x"}}}}},"paths":{"/c":{"post":{"parameters":[
	  {"name":"q","in":"query","schema":{"$ref":"#/components/schemas/P/properties/x"}}],
	  "requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/C"}}}},"responses":{}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(t.Context(), "fuzz.yaml", data, Options{})
		if err != nil {
			return
		}
		for _, e := range s.Endpoints {
			if e.ID == "" || e.spec != s {
				t.Fatalf("bad endpoint %+v", e)
			}
			e.Operation(t.Context())
			e.Describe(DescribeOptions{})
		}
	})
}

func ExampleLoad() {
	s, err := Load(context.Background(), "../../testdata/petstore-v3.yaml", Options{Name: "petstore"})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := s.Endpoints[0]
	fmt.Println(len(s.Endpoints), e.ID, e.Method, e.Path)
	// Output: 19 petstore.updatePet PUT /pet
}

// With allow_external_refs, refs to http(s) URLs are fetched when an
// operation is rebuilt, relative ones against the spec's URL; refs to
// local files are refused all the same.
func TestExternalRefsFollowedOverHTTPWhenAllowed(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "local.json")
	if err := os.WriteFile(local, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var fetched []string
	wasFetched := func(p string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(fetched, p)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetched = append(fetched, r.URL.Path)
		mu.Unlock()
		switch r.URL.Path {
		case "/api/openapi.json":
			fmt.Fprintf(w, `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{
			  "/pets":{"post":{"operationId":"addPet","requestBody":{"content":{"application/json":{"schema":{"$ref":"schemas/pet.json"}}}},
			    "responses":{"200":{"description":"ok"}}}},
			  "/local":{"post":{"operationId":"local","requestBody":{"content":{"application/json":{"schema":{"$ref":%q}}}},
			    "responses":{"200":{"description":"ok"}}}}}}`, local)
		case "/api/schemas/pet.json":
			w.Write([]byte(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	s, err := Load(t.Context(), srv.URL+"/api/openapi.json", Options{AllowExternalRefs: true})
	if err != nil {
		t.Fatal(err)
	}
	e := s.Endpoints[0]
	op, err := e.Operation(t.Context())
	if err != nil {
		t.Fatalf("addPet: %v", err)
	}
	schema := op.Op.RequestBody.Value.Content["application/json"].Schema.Value
	if schema == nil || len(schema.Required) != 1 || schema.Required[0] != "name" {
		t.Errorf("the external schema was not resolved: %+v", schema)
	}
	if !wasFetched("/api/schemas/pet.json") {
		t.Error("the external schema was never fetched")
	}
	if _, err := s.Endpoints[1].Operation(t.Context()); err == nil || !strings.Contains(err.Error(), "never local files") {
		t.Errorf("a local-file ref was followed: %v", err)
	}

	// Without the option nothing is fetched.
	mu.Lock()
	fetched = nil
	mu.Unlock()
	s, err = Load(t.Context(), srv.URL+"/api/openapi.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Endpoints[0].Operation(t.Context()); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("without allow_external_refs: %v", err)
	}
	if wasFetched("/api/schemas/pet.json") {
		t.Error("fetched an external ref without allow_external_refs")
	}
}

// An alias bomb used to expand to 20 million nodes (seconds of work)
// before it was refused; the bound now follows the document's own size.
func TestYAMLAliasBombRefusedAtOnce(t *testing.T) {
	doc := "openapi: 3.0.0\na: &a [x,x,x,x,x,x,x,x,x,x]\n"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		doc += name + ": &" + name + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 10), ",") + "]\n"
		prev = name
	}
	_, err := Parse(t.Context(), "bomb.yaml", []byte(doc), Options{})
	if err == nil || !strings.Contains(err.Error(), "too many nodes") {
		t.Fatalf("err = %v", err)
	}
	// The work done before refusing is bounded by ten times the written
	// nodes, not by the expansion: count it.
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	bw := newYAMLWriter(&n, &buf, len(doc))
	if err := bw.node(&n, 0); err != errYAMLTooBig || bw.nodes > 10*yamlbudget.TreeSize(&n)+100_001 {
		t.Errorf("expanded %d nodes (limit %d), err %v", bw.nodes, bw.limit, err)
	}
}

// Found by FuzzParse: an operation written as null panicked when it was
// rebuilt (assignment to a nil map).
func TestNullOperationSkipped(t *testing.T) {
	s := mustParse(t, "n.json", `{"openapi":"3.0.0","paths":{"/a":{"get":null,"post":{"responses":{}}},"/b":null}}`, Options{})
	if len(s.Endpoints) != 1 || s.Endpoints[0].Method != "POST" {
		t.Fatalf("endpoints = %v", ids(s))
	}
	if _, err := s.Endpoints[0].Operation(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 2 {
		t.Errorf("warnings = %q, want one per null", s.Warnings)
	}
}

// A relative server URL in a spec read from a file leaves calls nowhere to
// go: say so at load, where the operator reads it.
func TestRelativeServerFromFileWarns(t *testing.T) {
	s := mustParse(t, "rel.json", `{"openapi":"3.0.0","servers":[{"url":"/api/v3"}],"paths":{}}`, Options{})
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "set base_url") {
		t.Errorf("warnings = %q", s.Warnings)
	}
	s = mustParse(t, "rel.json", `{"openapi":"3.0.0","servers":[{"url":"/api/v3"}],"paths":{}}`, Options{BaseURL: "https://api.example.com"})
	if len(s.Warnings) != 0 {
		t.Errorf("with a base URL: warnings = %q", s.Warnings)
	}
}
