package spec

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParsePatternErrors(t *testing.T) {
	tests := []struct {
		pattern, want string
	}{
		{"", "empty pattern"},
		{"   ", "empty pattern"},
		{"tag:", "needs a tag name"},
		{"FETCH /pets", `"FETCH" is not an HTTP method`},
		{"GET pets", "must start with '/'"},
		{"/pets//x", "empty segment"},
		{"/pets/a**", "'**' must be a whole segment"},
		{"/pets /x", "no spaces"},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			_, err := ParsePattern(tt.pattern)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParsePattern(%q) = %v, want an error containing %q", tt.pattern, err, tt.want)
			}
		})
	}
}

func TestPatternMatch(t *testing.T) {
	get := &Endpoint{ID: "petstore.getPetById", Spec: "petstore", Method: "GET", Path: "/pet/{petId}", OperationID: "getPetById", Tags: []string{"Pet"}}
	del := &Endpoint{ID: "petstore.deletePet", Spec: "petstore", Method: "DELETE", Path: "/pet/{petId}", OperationID: "deletePet", Tags: []string{"pet"}}
	upload := &Endpoint{ID: "petstore.uploadFile", Spec: "petstore", Method: "POST", Path: "/pet/{petId}/uploadImage", OperationID: "uploadFile"}
	gh := &Endpoint{ID: "github.repos/list-for-org", Spec: "github", Method: "GET", Path: "/orgs/{org}/repos", OperationID: "repos/list-for-org"}
	slug := &Endpoint{ID: "binance.get_api_v3_ticker_price", Spec: "binance", Method: "GET", Path: "/api/v3/ticker/price"}
	root := &Endpoint{ID: "x.get", Spec: "x", Method: "GET", Path: "/"}

	tests := []struct {
		pattern string
		e       *Endpoint
		want    bool
	}{
		{"getPetById", get, true},
		{"getPet*", get, true},
		{"get?etById", get, true},
		{"*Pet*", del, true},
		{"deletePet", get, false},
		{"repos/*", gh, true},
		{"repos*", gh, true},
		{"get_api_v3_*", slug, true},
		{"tag:pet", get, true}, // tags compare case-insensitively
		{"TAG:PET", del, true},
		{"tag:store", get, false},
		{"GET /pet/*", get, true},
		{"get /pet/*", get, true},
		{"GET /pet/*", del, false},
		{"/pet/*", del, true},
		{"/pet/{petId}", del, true},
		{"/pet/*", upload, false}, // one segment only
		{"/pet/**", upload, true},
		{"/pet/**", get, true},
		{"/**", root, true},
		{"/**/uploadImage", upload, true},
		{"/pet/**/uploadImage", upload, true}, // ** may match zero segments... and one
		{"/pet/*/upload*", upload, true},
		{"/", root, true},
		{"/", get, false},
		{"POST /**", upload, true},
		{"DELETE /**", get, false},
		{"/orgs/*/repos", gh, true},
		{"/orgs/*", gh, false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.e.ID, func(t *testing.T) {
			p, err := ParsePattern(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Match(tt.e); got != tt.want {
				t.Errorf("%q matches %s %s (%s) = %v, want %v", tt.pattern, tt.e.Method, tt.e.Path, tt.e.ID, got, tt.want)
			}
		})
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"", "", true},
		{"*", "", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"*a", "bbba", true},
		{"?", "", false},
		{"[x]", "[x]", true}, // '[' is literal
		{"a**", "abc", true},
	}
	for _, tt := range tests {
		if got := glob(tt.pat, tt.s); got != tt.want {
			t.Errorf("glob(%q, %q) = %v, want %v", tt.pat, tt.s, got, tt.want)
		}
	}
}

func loadPetstore(t *testing.T) *Spec {
	t.Helper()
	s, err := Load(t.Context(), "../../testdata/petstore-v3.yaml", Options{Name: "petstore"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keptIDs(s *Spec) []string {
	var out []string
	for _, e := range s.Endpoints {
		out = append(out, strings.TrimPrefix(e.ID, s.Name+"."))
	}
	return out
}

func TestFilterApply(t *testing.T) {
	s := loadPetstore(t)
	f, err := NewFilter(Curation{
		Key:      "specs[petstore]",
		ReadOnly: true,
		Include:  []string{"tag:pet", "GET /store/*", "tag:nosuch"},
		Exclude:  []string{"findPetsByTags", "POST /**"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := f.Apply(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"findPetsByStatus", "getPetById", "getInventory"}
	if got := keptIDs(s); !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if rep.Total != 19 || rep.Kept != 3 || rep.Excluded() != 16 {
		t.Errorf("report total %d kept %d excluded %d", rep.Total, rep.Kept, rep.Excluded())
	}
	gotRules := map[string][2]int{}
	for _, r := range rep.Rules {
		gotRules[r.Key] = [2]int{r.Kept, r.Removed}
	}
	wantRules := map[string][2]int{
		"specs[petstore].read_only":  {0, 11},
		"specs[petstore].include[0]": {3, 0}, // the pet GETs
		"specs[petstore].include[1]": {1, 0}, // GET /store/inventory
		"specs[petstore].include[2]": {0, 0},
		"specs[petstore].exclude[0]": {0, 1},
		"specs[petstore].exclude[1]": {0, 0}, // read_only removed every POST first
	}
	for k, w := range wantRules {
		if gotRules[k] != w {
			t.Errorf("%s kept/removed = %v, want %v", k, gotRules[k], w)
		}
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], `specs[petstore].include[2]: no endpoint has tag "nosuch" (tags: pet, store, user)`) {
		t.Errorf("warnings = %q", rep.Warnings)
	}
	for id, want := range map[string]string{
		"petstore.deletePet":      "specs[petstore].read_only",
		"petstore.loginUser":      "no pattern of specs[petstore].include selects it",
		"petstore.findPetsByTags": `specs[petstore].exclude[0] ("findPetsByTags")`,
	} {
		if got := s.Excluded[id]; !strings.Contains(got, want) {
			t.Errorf("Excluded[%s] = %q, want it to contain %q", id, got, want)
		}
	}
	cat, err := NewCatalog(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cat.Lookup("petstore.deletePet"); ok {
		t.Error("an excluded endpoint is in the catalog")
	}
	if why, ok := cat.Excluded("petstore.deletePet"); !ok || !strings.Contains(why, "read_only") {
		t.Errorf("Catalog.Excluded = %q, %v", why, ok)
	}
	if _, ok := cat.Excluded("petstore.getPetById"); ok {
		t.Error("a served endpoint is reported excluded")
	}
}

func TestFilterRuleMatchingNothingWarns(t *testing.T) {
	s := loadPetstore(t)
	f, err := NewFilter(Curation{Exclude: []string{"PATCH /**", "deletePet"}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := f.Apply(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0] != `exclude[0]: "PATCH /**" matches no endpoint` {
		t.Errorf("warnings = %q", rep.Warnings)
	}
	if rep.Kept != 18 || len(s.Endpoints) != 18 {
		t.Errorf("kept %d", rep.Kept)
	}
}

func TestFilterErrorsNameTheKey(t *testing.T) {
	_, err := NewFilter(Curation{Key: "specs[stripe]", Include: []string{"tag:a", "tag:b", "FETCH /x"}, Exclude: []string{""}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`specs[stripe].include[2]: "FETCH /x": "FETCH" is not an HTTP method`, `specs[stripe].exclude[0]: "": empty pattern`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}

	tests := []struct {
		name string
		c    Curation
		key  string
	}{
		{"include selects nothing", Curation{Key: "specs[p]", Include: []string{"nothing*"}}, "specs[p].include"},
		{"exclude removes all", Curation{Key: "specs[p]", Exclude: []string{"/**"}}, "specs[p].exclude"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadPetstore(t)
			f, err := NewFilter(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Apply(s)
			var ce *CurationError
			if !errors.As(err, &ce) || ce.Key != tt.key {
				t.Fatalf("Apply = %v, want a CurationError on %s", err, tt.key)
			}
			if len(s.Endpoints) != 19 {
				t.Error("a failed curation changed the spec")
			}
		})
	}
}

func TestFilterNilKeepsAll(t *testing.T) {
	s := loadPetstore(t)
	var f *Filter
	rep, err := f.Apply(s)
	if err != nil || rep.Kept != 19 || s.Excluded != nil {
		t.Errorf("nil filter: %v %+v", err, rep)
	}
}

func TestStatedLimit(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want *StatedLimit
	}{
		{"extensions at top", `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"x-ratelimit-limit":100,"x-ratelimit-window":"1m","paths":{}}`,
			&StatedLimit{Requests: 100, Window: time.Minute, Source: "x-ratelimit-limit"}},
		{"extensions in info, window in seconds", `{"openapi":"3.0.3","info":{"title":"t","version":"1","x-ratelimit-limit":"5,000","x-ratelimit-period":3600},"paths":{}}`,
			&StatedLimit{Requests: 5000, Window: time.Hour, Source: "x-ratelimit-limit"}},
		{"one object", `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"x-ratelimit":{"limit":10,"window":"1s"},"paths":{}}`,
			&StatedLimit{Requests: 10, Window: time.Second, Source: "x-ratelimit-limit"}},
		{"description", `{"openapi":"3.0.3","info":{"title":"t","version":"1","description":"Welcome. Be nice.\n\nYou may send up to 100 requests per minute per key."},"paths":{}}`,
			&StatedLimit{Requests: 100, Window: time.Minute, Source: "info.description"}},
		{"description with a count of units", `{"openapi":"3.0.3","info":{"title":"t","version":"1","description":"Limited to 1,000 calls every 15 minutes."},"paths":{}}`,
			&StatedLimit{Requests: 1000, Window: 15 * time.Minute, Source: "info.description"}},
		{"a count without a window", `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"x-ratelimit-limit":100,"paths":{}}`, nil},
		{"none", `{"openapi":"3.0.3","info":{"title":"t","version":"1","description":"An API."},"paths":{}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(t.Context(), "t.json", []byte(tt.doc), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := s.StatedLimit
			if (got == nil) != (tt.want == nil) {
				t.Fatalf("StatedLimit = %+v, want %+v", got, tt.want)
			}
			if got != nil && (got.Requests != tt.want.Requests || got.Window != tt.want.Window || got.Source != tt.want.Source) {
				t.Errorf("StatedLimit = %+v, want %+v", got, tt.want)
			}
		})
	}
}
