package search

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/specgate/specgate/pkg/spec"
)

// petsSpec is a tiny API in the shapes real specs use: camelCase and
// GitHub-style ids, item and collection paths, a missing summary.
const petsSpec = `{
  "openapi": "3.0.3",
  "info": {"title": "Pets", "version": "1"},
  "paths": {
    "/pets": {
      "get": {"operationId": "listPets", "summary": "List all pets", "tags": ["pets"],
        "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}}],
        "responses": {"200": {"description": "ok"}}},
      "post": {"operationId": "createPet", "summary": "Create a pet", "tags": ["pets"],
        "responses": {"201": {"description": "ok"}}}
    },
    "/pets/{petId}": {
      "parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "string"}}],
      "get": {"operationId": "showPetById", "summary": "Info for a specific pet", "tags": ["pets"],
        "responses": {"200": {"description": "ok"}}},
      "delete": {"operationId": "deletePet", "summary": "Delete a pet", "tags": ["pets"],
        "responses": {"204": {"description": "ok"}}}
    },
    "/user": {
      "get": {"operationId": "users/get-authenticated", "summary": "Get the authenticated user", "tags": ["users"],
        "responses": {"200": {"description": "ok"}}}
    },
    "/repos/{owner}/{repo}/pulls": {
      "get": {"operationId": "pulls/list", "tags": ["pulls"],
        "description": "Lists the **pull requests** of a [repository](https://example.com). Draft ones included.\n\nMore detail here.",
        "responses": {"200": {"description": "ok"}}}
    }
  }
}`

func petsIndex(t testing.TB, opts Options) *Index {
	t.Helper()
	s, err := spec.Parse(t.Context(), "pets.json", []byte(petsSpec), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := spec.NewCatalog(s)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := New(cat, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func TestSearchFirstHit(t *testing.T) {
	ix := petsIndex(t, Options{})
	tests := []struct {
		query string
		want  string
	}{
		{"remove a pet", "pets.deletePet"},
		{"kill pet", "pets.deletePet"},
		{"list pets", "pets.listPets"},
		{"show all pets", "pets.listPets"},
		{"fetch a pet", "pets.showPetById"},
		{"add a new pet", "pets.createPet"},
		{"who am I", "pets.users/get-authenticated"},
		{"list pull requests", "pets.pulls/list"},
		{"PRs of a repo", "pets.pulls/list"},
		{"method:DELETE pet", "pets.deletePet"},
		{"path:/pets/ fetch pet", "pets.showPetById"},
		{"tag:users", "pets.users/get-authenticated"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			hits, err := ix.Search(tt.query, 5)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) == 0 || hits[0].ID != tt.want {
				t.Errorf("Search(%q) = %v, want %s first", tt.query, ids(hits), tt.want)
			}
		})
	}
}

func TestSearchFilters(t *testing.T) {
	ix := petsIndex(t, Options{})
	tests := []struct {
		query string
		want  []string // in any order
	}{
		{"method:get", []string{"pets.listPets", "pets.showPetById", "pets.users/get-authenticated", "pets.pulls/list"}},
		{"method:POST method:DELETE", []string{"pets.createPet", "pets.deletePet"}},
		{"tag:PETS method:GET", []string{"pets.listPets", "pets.showPetById"}},
		{"spec:pets path:/repos", []string{"pets.pulls/list"}},
		{"spec:other", nil},
		{"path:/pets/{petId}", []string{"pets.showPetById", "pets.deletePet"}},
		{"pet method:DELETE", []string{"pets.deletePet"}},
		{`tag:"pulls" requests`, []string{"pets.pulls/list"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			hits, err := ix.Search(tt.query, 50)
			if err != nil {
				t.Fatal(err)
			}
			got := ids(hits)
			if diff := cmp.Diff(sorted(tt.want), sorted(got)); diff != "" {
				t.Errorf("Search(%q) ids (-want +got):\n%s", tt.query, diff)
			}
		})
	}
}

func sorted(xs []string) []string {
	out := append([]string(nil), xs...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func TestSearchHitFields(t *testing.T) {
	ix := petsIndex(t, Options{})
	hits, err := ix.Search("pull requests", 1)
	if err != nil {
		t.Fatal(err)
	}
	got := hits[0]
	got.Score = 0
	want := Hit{
		ID:      "pets.pulls/list",
		Method:  "GET",
		Path:    "/repos/{owner}/{repo}/pulls",
		Summary: "Lists the pull requests of a repository.", // first sentence, markup gone
		Spec:    "pets",
		Tags:    []string{"pulls"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hit (-want +got):\n%s", diff)
	}
	data, _ := json.Marshal(hits[0])
	if strings.Contains(string(data), "core") {
		t.Errorf("score leaked into JSON: %s", data)
	}
}

func TestSearchEmptyQuery(t *testing.T) {
	ix := petsIndex(t, Options{})
	for _, q := range []string{"", "   "} {
		if _, err := ix.Search(q, 5); !errors.Is(err, ErrEmptyQuery) {
			t.Errorf("Search(%q) error = %v, want ErrEmptyQuery", q, err)
		}
	}
	// Only stop words: no error, nothing found.
	hits, err := ix.Search("the of a", 5)
	if err != nil || len(hits) != 0 {
		t.Errorf("Search(stop words) = %v, %v; want no hits, no error", ids(hits), err)
	}
}

func TestSearchLimitAndOrder(t *testing.T) {
	ix := petsIndex(t, Options{})
	hits, err := ix.Search("pet", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) > DefaultLimit {
		t.Errorf("limit 0 gave %d hits, want ≤ %d", len(hits), DefaultLimit)
	}
	for i := 1; i < len(hits); i++ {
		a, b := hits[i-1], hits[i]
		if a.Score < b.Score || a.Score == b.Score && a.ID > b.ID {
			t.Errorf("hits out of order at %d: %s (%v) before %s (%v)", i, a.ID, a.Score, b.ID, b.Score)
		}
	}
	// Filter-only answers have equal scores: the shortest paths first
	// (/pets and /user), then by id.
	hits, err = ix.Search("method:GET", 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"pets.listPets", "pets.users/get-authenticated"}, ids(hits)); diff != "" {
		t.Errorf("filter-only order (-want +got):\n%s", diff)
	}
	// The same query answers the same way every time.
	first, _ := ix.Search("list pets", 10)
	for range 5 {
		again, _ := ix.Search("list pets", 10)
		if diff := cmp.Diff(ids(first), ids(again)); diff != "" {
			t.Fatalf("answers differ between runs:\n%s", diff)
		}
	}
}

func TestSimilar(t *testing.T) {
	ix := petsIndex(t, Options{})
	got := ids(ix.Similar("pets.deletePet", 2))
	if len(got) == 0 || len(got) > 2 {
		t.Fatalf("Similar = %v, want 1 or 2 hits", got)
	}
	for _, id := range got {
		if id == "pets.deletePet" {
			t.Errorf("Similar returned the endpoint itself: %v", got)
		}
	}
	if got[0] != "pets.showPetById" && got[0] != "pets.listPets" && got[0] != "pets.createPet" {
		t.Errorf("Similar first = %s, want another pets endpoint", got[0])
	}
	if ix.Similar("pets.nope", 3) != nil {
		t.Error("Similar of an unknown id is not nil")
	}
}

func TestParseQuery(t *testing.T) {
	tests := []struct {
		in   string
		want Query
	}{
		{"list pull requests", Query{Text: "list pull requests"}},
		{"method:get tag:Issues close issue", Query{Text: "close issue", Methods: []string{"GET"}, Tags: []string{"issues"}}},
		{"spec:github path:/repos/{owner}", Query{Specs: []string{"github"}, PathPrefixes: []string{"/repos/{owner}"}}},
		{`tag:"pull requests" list`, Query{Text: "list", Tags: []string{"pull requests"}}},
		{"see https://example.com now", Query{Text: "see https://example.com now"}},
		{"method: GET", Query{Text: "GET"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ParseQuery(tt.in)); diff != "" {
				t.Errorf("ParseQuery(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
	q := Query{Text: "list", Tags: []string{"pull requests"}, Methods: []string{"GET"}}
	if diff := cmp.Diff(q, ParseQuery(q.String())); diff != "" {
		t.Errorf("ParseQuery(String()) round trip (-want +got):\n%s", diff)
	}
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"listCoreV1NamespacedPod", []string{"list", "core", "v1", "namespaced", "pod"}},
		{"pulls/list-review-comments", []string{"pulls", "list", "review", "comments"}},
		{"GetCustomersCustomerTaxIdsId", []string{"get", "customers", "customer", "tax", "ids", "id"}},
		{"get_my_user", []string{"get", "my", "user"}},
		{"HTTPServerError", []string{"http", "server", "error"}},
		{"users-28-day", []string{"users", "28", "day"}},
		{"v2beta1", []string{"v2", "beta", "1"}},
		{"", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, splitWords(tt.in, nil)); diff != "" {
			t.Errorf("splitWords(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestPathWords(t *testing.T) {
	tests := []struct {
		path     string
		words    []string
		last     string
		wantItem bool
	}{
		{"/repos/{owner}/{repo}/pulls", []string{"repos", "pulls"}, "pulls", false},
		{"/v1/customers/{customer}", []string{"v1", "customers"}, "customers", true},
		{"/2010-04-01/Accounts/{AccountSid}/Calls/{Sid}.json", []string{"2010", "04", "01", "accounts", "calls"}, "Calls", true},
		{"/users/@me", []string{"users", "me"}, "@me", false},
		{"/version/", []string{"version"}, "version", false},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.words, pathWords(tt.path, nil)); diff != "" {
			t.Errorf("pathWords(%q) (-want +got):\n%s", tt.path, diff)
		}
		last, item := resourceSegments(tt.path)
		if last != tt.last || item != tt.wantItem {
			t.Errorf("resourceSegments(%q) = %q, %v; want %q, %v", tt.path, last, item, tt.last, tt.wantItem)
		}
	}
}

func TestOneLine(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"Get a  **pet**\nby id", 90, "Get a pet by id"},
		{"See [the docs](https://x.y/z) for `more`", 90, "See the docs for more"},
		{"Create a new outgoing call to phones, SIP-enabled endpoints", 30, "Create a new outgoing call to…"},
	}
	for _, tt := range tests {
		if got := oneLine(tt.in, tt.max); got != tt.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestFitSummaries(t *testing.T) {
	mk := func() []Hit {
		var hits []Hit
		for i := range 20 {
			hits = append(hits, Hit{
				ID:      "github-full.actions/delete-repo-secret-" + string(rune('a'+i)),
				Method:  "DELETE",
				Path:    "/repos/{owner}/{repo}/actions/secrets/{secret_name}",
				Summary: "Deletes a secret in a repository using the secret name, which is a long line of words",
				Spec:    "github-full",
				Tags:    []string{"actions"},
			})
		}
		return hits
	}
	for _, budget := range []int{6000, 4000, 3600, 100} {
		hits := mk()
		fitSummaries(hits, make([]bool, len(hits)), budget)
		data, _ := json.Marshal(hits)
		fixed := mk()
		for i := range fixed {
			fixed[i].Summary = ""
		}
		floor, _ := json.Marshal(fixed)
		if len(data) > max(budget, len(floor)) {
			t.Errorf("budget %d: answer is %d bytes", budget, len(data))
		}
		if budget == 6000 && hits[0].Summary != mk()[0].Summary {
			t.Errorf("budget %d: summary cut although it fits: %q", budget, hits[0].Summary)
		}
		if budget == 4000 && (hits[0].Summary == "" || !strings.HasSuffix(hits[0].Summary, "…")) {
			t.Errorf("budget %d: summary %q, want a shortened one", budget, hits[0].Summary)
		}
	}
	// Summaries that only repeat the id go first.
	hits := mk()
	plain := make([]bool, len(hits))
	for i := range plain {
		plain[i] = i%2 == 0
	}
	fitSummaries(hits, plain, 4200)
	if hits[0].Summary != "" || hits[1].Summary == "" {
		t.Errorf("plain summary kept or informative one dropped: %q, %q", hits[0].Summary, hits[1].Summary)
	}
}

func TestJSONStrLen(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote`, "a<b>&c", "tab\there", "ünï…"} {
		data, _ := json.Marshal(s)
		if got := jsonStrLen(s); got != len(data) {
			t.Errorf("jsonStrLen(%q) = %d, want %d", s, got, len(data))
		}
	}
	h := Hit{ID: "a.b", Method: "GET", Path: "/x/{y}", Summary: "S <b>", Spec: "a", Tags: []string{"t", "u"}}
	data, _ := json.Marshal(h)
	if got := jsonSize(h); got != len(data) {
		t.Errorf("jsonSize = %d, want %d (%s)", got, len(data), data)
	}
}

// FuzzSearch feeds arbitrary queries: no panic, no error but
// ErrEmptyQuery, never more hits than asked.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{"list pets", "method:", `tag:"`, "path:/pets spec:pets", "ünï {x}", "who am i"} {
		f.Add(s)
	}
	ix := petsIndex(f, Options{})
	f.Fuzz(func(t *testing.T, q string) {
		hits, err := ix.Search(q, 3)
		if err != nil && !errors.Is(err, ErrEmptyQuery) {
			t.Fatalf("Search(%q): %v", q, err)
		}
		if len(hits) > 3 {
			t.Fatalf("Search(%q) gave %d hits", q, len(hits))
		}
	})
}

// When ids and paths alone fill the budget, tags go, last hit first, so
// the answer still fits.
func TestFitSummariesDropsTagsWhenIDsAndPathsFill(t *testing.T) {
	hits := make([]Hit, 20)
	plain := make([]bool, 20)
	for i := range hits {
		hits[i] = Hit{
			ID:      "twilio.ListAvailablePhoneNumberLocal" + strings.Repeat("x", i),
			Method:  "GET",
			Path:    "/2010-04-01/Accounts/{AccountSid}/AvailablePhoneNumbers/{CountryCode}/Local.json",
			Summary: "List the local phone numbers available in a country, filtered by area code",
			Spec:    "twilio",
			Tags:    []string{"Api20100401AvailablePhoneNumberLocal"},
		}
	}
	fitSummaries(hits, plain, 200*len(hits))
	data, _ := json.Marshal(hits)
	if len(data) > 4000 {
		t.Fatalf("%d bytes for 20 hits, want ≤ 4000", len(data))
	}
	if len(hits[0].Tags) == 0 {
		t.Errorf("the first hit lost its tags before the last ones did")
	}
}

// TestFindPetByIDIsAGet is the README's first query: "by id" used to be
// dropped as noise, so "find" read as a search and findPetsByStatus and
// findPetsByTags came before getPetById.
func TestFindPetByIDIsAGet(t *testing.T) {
	for _, file := range []string{"../../specs/petstore.yaml", "../../testdata/petstore-v3.yaml", "../../testdata/petstore-v2.json"} {
		t.Run(file, func(t *testing.T) {
			s, err := spec.Load(t.Context(), file, spec.Options{Name: "petstore"})
			if err != nil {
				t.Fatal(err)
			}
			cat, err := spec.NewCatalog(s)
			if err != nil {
				t.Fatal(err)
			}
			ix, err := New(cat, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			for _, q := range []string{"find pet by id", "find a pet by its id", "get pet by id"} {
				hits, err := ix.Search(q, 3)
				if err != nil {
					t.Fatal(err)
				}
				if len(hits) == 0 || hits[0].ID != "petstore.getPetById" {
					t.Errorf("search %q = %v, want petstore.getPetById first", q, ids(hits))
				}
			}
		})
	}
}

func TestSearchPhrasings(t *testing.T) {
	ix := petsIndex(t, Options{})
	ctx := t.Context()
	single, err := ix.Search("delete a pet", 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the same phrasing twice is the single ranking", func(t *testing.T) {
		got, err := ix.SearchPhrasings(ctx, ParseQuery("delete a pet"), []string{"delete a pet"}, 5)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ids(single), ids(got)); diff != "" {
			t.Errorf("(-single +fused):\n%s", diff)
		}
	})
	t.Run("an alternative finds what the first phrasing misses", func(t *testing.T) {
		first, _ := ix.Search("bin the critter", 5)
		if len(first) > 0 && first[0].ID == "pets.deletePet" {
			t.Fatalf("the first phrasing alone finds deletePet: the case tests nothing")
		}
		got, err := ix.SearchPhrasings(ctx, ParseQuery("bin the critter"), []string{"", "delete a pet", "remove pet"}, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || got[0].ID == "" || got[0].ID != "pets.deletePet" {
			t.Errorf("got %v, want pets.deletePet first", ids(got))
		}
	})
	t.Run("ties go to the first phrasing's order", func(t *testing.T) {
		a, b, c := scored{e: ix.entries[0], n: 0}, scored{e: ix.entries[1], n: 1}, scored{e: ix.entries[2], n: 2}
		got := fuseRanks([][]scored{{a, b}, {b, a}, {c}})
		var order []int
		for _, s := range got {
			order = append(order, s.n)
		}
		if want := []int{0, 1, 2}; !cmp.Equal(order, want) {
			t.Errorf("fused order %v, want %v", order, want)
		}
	})
	t.Run("an alternative keeps the first's filters", func(t *testing.T) {
		got, err := ix.SearchPhrasings(ctx, ParseQuery("method:GET pets"), []string{"remove a pet"}, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got {
			if h.Method != "GET" {
				t.Errorf("%s %s in an answer filtered to GET", h.Method, h.ID)
			}
		}
	})
	t.Run("more than MaxAlternatives are ignored", func(t *testing.T) {
		alts := []string{"list pets", "list pets", "list pets", "delete a pet"}
		got, err := ix.SearchPhrasings(ctx, ParseQuery("list pets"), alts, 10)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ix.Search("list pets", 10)
		if diff := cmp.Diff(ids(want), ids(got)); diff != "" {
			t.Errorf("(-single +fused):\n%s", diff)
		}
	})
}

// TestOwnWordsFindParaphrases: a word the spec uses only for an
// operation's parts (a parameter's, an answer field's, a tag's
// description) finds that operation; the names' words rank as before.
func TestOwnWordsFindParaphrases(t *testing.T) {
	const doc = `{
  "openapi": "3.0.3", "info": {"title": "Parcels", "version": "1"},
  "tags": [{"name": "labels", "description": "Printable postage stickers."}],
  "paths": {
    "/shipments/{id}": {"get": {"operationId": "getShipment", "summary": "Get a shipment",
      "parameters": [{"name": "id", "in": "path", "required": true, "description": "The courier's waybill number.", "schema": {"type": "string"}}],
      "responses": {"200": {"description": "ok"}}}},
    "/shipments": {"get": {"operationId": "listShipments", "summary": "List shipments",
      "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "array",
        "items": {"type": "object", "properties": {"eta": {"type": "string", "description": "Estimated arrival of the parcel."}}}}}}}}}},
    "/labels": {"post": {"operationId": "createLabel", "summary": "Create a label", "tags": ["labels"],
      "responses": {"201": {"description": "ok"}}}}
  }
}`
	s, err := spec.Parse(t.Context(), "parcels.json", []byte(doc), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := spec.NewCatalog(s)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := New(cat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, c := range []struct{ q, want string }{
		{"look up a waybill", "parcels.getShipment"},
		{"estimated arrival", "parcels.listShipments"},
		{"make a postage sticker", "parcels.createLabel"},
		{"list shipments", "parcels.listShipments"},
		{"get a shipment", "parcels.getShipment"},
	} {
		hits, err := ix.Search(c.q, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].ID != c.want {
			t.Errorf("search %q = %v, want %s first", c.q, ids(hits), c.want)
		}
	}
}

// TestSpecNameIsAName: the spec's name is indexed with no field bit; it
// was once counted among the words only an operation's own words have,
// so "petstore" was split into "pet store" and "store" read as a create.
func TestSpecNameIsAName(t *testing.T) {
	s, err := spec.Load(t.Context(), "../../testdata/petstore-v3.yaml", spec.Options{Name: "petstore"})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := spec.NewCatalog(s)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := New(cat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	// What a not_found's suggestions look up for petstore.getPetByID.
	hits, err := ix.Lexical("petstore getPetByID", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].ID != "petstore.getPetById" {
		t.Errorf("suggestions %v, want petstore.getPetById first", ids(hits))
	}
	if id := ix.terms["petstor"]; ix.ownOnly[id] {
		t.Errorf("the spec's name counts as an own word")
	}
}
