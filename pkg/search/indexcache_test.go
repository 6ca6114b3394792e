package search

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/specgate/specgate/pkg/spec"
)

// fixtureCatalog loads one spec of the repository's testdata.
func fixtureCatalog(t testing.TB, file string) *spec.Catalog {
	t.Helper()
	s, err := spec.Load(t.Context(), filepath.Join("../../testdata", file), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := spec.NewCatalog(s)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// newIndex is New that fails the test on an error and closes the index
// at its end.
func newIndex(t testing.TB, cat *spec.Catalog, opts Options) *Index {
	t.Helper()
	ix, err := New(cat, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// cacheQueries are the queries answers are compared on: every intent of
// the eval sets (most name no endpoint of a fixture, which still ranks
// something), and filters.
func cacheQueries(t testing.TB) []string {
	var qs []string
	for _, file := range []string{"eval.json", "holdout.json", "honest.json"} {
		for _, q := range loadSet(t, file).Queries {
			qs = append(qs, q.Query)
		}
	}
	return append(qs, "method:GET", "method:DELETE pet", "tag:pets list", "path:/repos pull requests",
		"list all pets", "create a user", "get the authenticated user", "delete a thing by id")
}

// answers is every answer of ix to qs, and the similar endpoints of its
// first endpoints.
func answers(t testing.TB, ix *Index, qs []string) map[string][]Hit {
	t.Helper()
	out := map[string][]Hit{}
	for _, q := range qs {
		hits, err := ix.Search(q, 20)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		out[q] = hits
	}
	for _, e := range ix.entries[:min(len(ix.entries), 20)] {
		out["similar "+e.hit.ID] = ix.Similar(e.hit.ID, 10)
	}
	return out
}

func fromCache(t testing.TB, ix *Index) bool {
	t.Helper()
	ok, err := ix.FromCache()
	if err != nil {
		t.Errorf("cache problem: %v", err)
	}
	return ok
}

// TestIndexCacheSameAnswers builds each catalog's index afresh, caches
// it, reads it back, and compares the answers to many queries: the index
// read from the cache answers exactly as the one built, scores included.
func TestIndexCacheSameAnswers(t *testing.T) {
	cats := map[string]func(testing.TB) *spec.Catalog{}
	for _, f := range []string{"petstore-v3.yaml", "petstore-v2.json", "uber-v2.json", "paging.yaml", "auth-kinds.yaml"} {
		cats[f] = func(t testing.TB) *spec.Catalog { return fixtureCatalog(t, f) }
	}
	shared := []string{"k8s.json", "discord.json"}
	if !testing.Short() && !raceDetector {
		shared = append(shared, "github-full.json", "openai.yaml")
	}
	for _, f := range shared {
		cats[f] = func(t testing.TB) *spec.Catalog { return sharedCatalog(t, f, strings.TrimSuffix(f, filepath.Ext(f))) }
	}
	qs := cacheQueries(t)
	for name, load := range cats {
		t.Run(name, func(t *testing.T) {
			cat := load(t)
			dir := t.TempDir()
			fresh := newIndex(t, cat, Options{})
			built := newIndex(t, cat, Options{CacheDir: dir})
			if fromCache(t, built) {
				t.Fatal("first index came from an empty cache")
			}
			cached := newIndex(t, cat, Options{CacheDir: dir})
			if !fromCache(t, cached) {
				t.Fatal("second index was built again")
			}
			want := answers(t, built, qs)
			if diff := cmp.Diff(want, answers(t, cached, qs)); diff != "" {
				t.Errorf("cached index answers differently (-built +cached):\n%s", diff)
			}
			if diff := cmp.Diff(want, answers(t, fresh, qs)); diff != "" {
				t.Errorf("an index built without the cache answers differently (-cached +fresh):\n%s", diff)
			}
		})
	}
}

// TestBuildsAnswerAlike: two builds of one catalog answer alike, hits of
// equal score in the same order (bleve's batch hands zap its documents in
// map order, which numbered them differently from one build to the next,
// and bleve cuts its candidates among equal scores by that number: few
// candidates make that cut in every answer).
func TestBuildsAnswerAlike(t *testing.T) {
	qs := cacheQueries(t)
	for _, f := range []string{"petstore-v3.yaml", "uber-v2.json", "paging.yaml"} {
		cat := fixtureCatalog(t, f)
		want := answers(t, newIndex(t, cat, Options{Candidates: 2}), qs)
		for range 4 {
			if diff := cmp.Diff(want, answers(t, newIndex(t, cat, Options{Candidates: 2}), qs)); diff != "" {
				t.Fatalf("%s: another build answers differently:\n%s", f, diff)
			}
		}
	}
}

// cacheFiles lists the index cache files of dir.
func cacheFiles(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "index", "*.idx"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestIndexCacheInvalidation: another catalog, or options that shape the
// build, is another file, never the cached index of the first.
func TestIndexCacheInvalidation(t *testing.T) {
	dir := t.TempDir()
	cat := fixtureCatalog(t, "petstore-v3.yaml")
	newIndex(t, cat, Options{CacheDir: dir})
	changed := strings.Replace(petsSpec, "List all pets", "List every pet", 1)
	s, err := spec.Parse(t.Context(), "pets.json", []byte(changed), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pets, err := spec.NewCatalog(s)
	if err != nil {
		t.Fatal(err)
	}
	orig := petsIndex(t, Options{CacheDir: dir})
	for _, tc := range []struct {
		name string
		cat  *spec.Catalog
		opts Options
	}{
		{"description length", cat, Options{CacheDir: dir, DescriptionLen: 40}},
		{"summary length", cat, Options{CacheDir: dir, SummaryLen: 20}},
		{"changed summary", pets, Options{CacheDir: dir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := newIndex(t, tc.cat, tc.opts)
			if fromCache(t, ix) {
				t.Fatal("read the cached index of another catalog or options")
			}
			if !fromCache(t, newIndex(t, tc.cat, tc.opts)) {
				t.Error("not cached for the next start")
			}
		})
	}
	hits, err := newIndex(t, pets, Options{CacheDir: dir}).Search("list every pet", 1)
	if err != nil || len(hits) == 0 || hits[0].Summary != "List every pet" {
		t.Errorf("changed catalog answers %v, %v", hits, err)
	}
	if again := petsIndex(t, Options{CacheDir: dir}); !fromCache(t, again) || fromCache(t, orig) {
		t.Error("the first catalog's index is not read back from its own file")
	}
	if got := len(cacheFiles(t, dir)); got != 5 {
		t.Errorf("%d cache files, want 5", got)
	}
}

// TestIndexCacheCorrupt: a truncated file, a flipped byte anywhere, a
// file of another catalog under this one's name, or garbage, is reported,
// rebuilt and rewritten, and the answers are the ones of a sound cache.
func TestIndexCacheCorrupt(t *testing.T) {
	cat := fixtureCatalog(t, "uber-v2.json")
	other := fixtureCatalog(t, "petstore-v3.yaml")
	qs := cacheQueries(t)
	dir := t.TempDir()
	want := answers(t, newIndex(t, cat, Options{CacheDir: dir}), qs)
	files := cacheFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	file := files[0]
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	otherDir := t.TempDir()
	newIndex(t, other, Options{CacheDir: otherDir})
	foreign, err := os.ReadFile(cacheFiles(t, otherDir)[0])
	if err != nil {
		t.Fatal(err)
	}
	flip := func(at int) []byte {
		b := append([]byte(nil), good...)
		b[at] ^= 0x10
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"truncated header", good[:10]},
		{"truncated", good[:len(good)/2]},
		{"last byte cut", good[:len(good)-1]},
		{"flipped magic", flip(0)},
		{"flipped checksum", flip(len(indexMagic) + 3)},
		{"flipped payload", flip(len(good) / 3)},
		{"flipped segment", flip(len(good) - 100)},
		{"flipped last byte", flip(len(good) - 1)},
		{"another catalog's", foreign},
		{"garbage", []byte(strings.Repeat("not an index ", 100))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(file, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			ix := newIndex(t, cat, Options{CacheDir: dir})
			if ok, err := ix.FromCache(); ok || err == nil {
				t.Fatalf("FromCache() = %v, %v; want false and the reason", ok, err)
			}
			if diff := cmp.Diff(want, answers(t, ix, qs)); diff != "" {
				t.Errorf("rebuilt index answers differently:\n%s", diff)
			}
			if !fromCache(t, newIndex(t, cat, Options{CacheDir: dir})) {
				t.Error("the rebuilt index was not cached again")
			}
		})
	}
}

// TestIndexCacheUnwritable: a cache directory that cannot be made only
// means no cache.
func TestIndexCacheUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		ix := petsIndex(t, Options{CacheDir: filepath.Join(file, "cache")})
		if ok, err := ix.FromCache(); ok || err == nil {
			t.Fatalf("FromCache() = %v, %v; want false and why nothing was written", ok, err)
		}
		if hits, err := ix.Search("list pets", 1); err != nil || len(hits) == 0 || hits[0].ID != "pets.listPets" {
			t.Errorf("search: %v, %v", hits, err)
		}
	}
}

// TestIndexCacheSemantic: semantic search works on an index read from the
// cache, with the answers of the index it was cached from.
func TestIndexCacheSemantic(t *testing.T) {
	cat := fixtureCatalog(t, "uber-v2.json")
	dir := t.TempDir()
	sem := SemanticOptions{Embedder: standInEmbedder{}, Model: "stand-in", Weight: 0.5}
	built := newIndex(t, cat, Options{CacheDir: dir})
	cached := newIndex(t, cat, Options{CacheDir: dir})
	if !fromCache(t, cached) {
		t.Fatal("second index was built again")
	}
	for _, ix := range []*Index{built, cached} {
		if err := ix.EnableSemantic(t.Context(), cat, sem); err != nil {
			t.Fatal(err)
		}
	}
	if st := cached.Semantic(); st.Endpoints != cat.Len() {
		t.Fatalf("semantic status %+v, want %d endpoints", st, cat.Len())
	}
	qs := cacheQueries(t)
	if diff := cmp.Diff(answers(t, built, qs), answers(t, cached, qs)); diff != "" {
		t.Errorf("semantic answers differ (-built +cached):\n%s", diff)
	}
}

// buildDigestWant pins what New derives from buildFixture. The index cache
// trusts a file whose key matches, and the key covers the endpoints, the
// options, the thesaurus tables and the libraries, but not this package's
// code: when a change to the build (splitting, stemming, field bits, idf)
// makes this test fail, bump indexFormat, so that no start reads an index
// the old code built, and set buildDigestWant to the new digest.
const buildDigestWant = "39a0a732017ece39"

// buildFixture is a small catalog built by hand, so that only this
// package's code shapes its index.
func buildFixture(t testing.TB) *spec.Catalog {
	t.Helper()
	long := "Lists the pull requests of a repository, open ones first. " + strings.Repeat("Draft pull requests are listed too, with their reviewers and labels; archived repositories answer with an empty list. ", 3) +
		"Mergeability is computed lazily by a background job."
	s := &spec.Spec{Name: "fixture", Endpoints: []*spec.Endpoint{
		{ID: "fixture.pulls/list", Spec: "fixture", Method: "GET", Path: "/repos/{owner}/{repo}/pulls", OperationID: "pulls/list",
			Description: long, Tags: []string{"pulls"}, Params: []spec.Param{{Name: "owner", In: "path"}, {Name: "per_page", In: "query"}}},
		{ID: "fixture.deletePet", Spec: "fixture", Method: "DELETE", Path: "/pets/{petId}", OperationID: "deletePet",
			Summary: "Delete a pet", Tags: []string{"pets"}, Params: []spec.Param{{Name: "petId", In: "path"}}},
		{ID: "fixture.listPets", Spec: "fixture", Method: "GET", Path: "/pets", OperationID: "listPets",
			Summary: "List all pets in the store", Description: "Returns every pet, paged.", Tags: []string{"pets"}},
		{ID: "fixture.users/get-authenticated", Spec: "fixture", Method: "GET", Path: "/user", OperationID: "users/get-authenticated",
			Summary: "Get the authenticated user", Tags: []string{"users"}},
		{ID: "fixture.createRepoWebhook", Spec: "fixture", Method: "POST", Path: "/repos/{owner}/{repo}/hooks", OperationID: "createRepoWebhook",
			Summary: "Create a repository webhook", Description: "Webhooks notify a URL of events; configuration takes a secret."},
	}}
	cat, err := spec.NewCatalog(s)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// TestIndexFormatPinned: see buildDigestWant.
func TestIndexFormatPinned(t *testing.T) {
	ix := newIndex(t, buildFixture(t), Options{})
	if !slices.Contains(ix.ownOnly, true) {
		t.Error("the fixture has no word only the rest of a description has")
	}
	h := sha256.New()
	stems := make([]string, len(ix.terms))
	for st, id := range ix.terms {
		stems[id] = st
	}
	for id, st := range stems {
		// idf to 9 digits: a fused multiply-add on some CPUs may move
		// the last bit.
		fmt.Fprintf(h, "%s %.9g %t %d\n", st, ix.idf[id], ix.ownOnly[id], ix.inBleve[id])
	}
	for _, e := range ix.entries {
		fields := slices.Clone(e.fields)
		slices.SortFunc(fields, func(a, b termField) int { return int(a.id - b.id) })
		fmt.Fprintf(h, "%+v %v %d %t %t %v\n", e.hit, e.name, e.act, e.item, e.plainSum, fields)
	}
	if got := hex.EncodeToString(h.Sum(nil)[:8]); got != buildDigestWant {
		t.Errorf("the index build derives something else from the same endpoints (digest %s, want %s): bump indexFormat and set buildDigestWant", got, buildDigestWant)
	}
}

// FuzzDecodeIndex: a payload that passed its checksum is still decoded
// with every count and term id checked, so no payload panics.
func FuzzDecodeIndex(f *testing.F) {
	cat := buildFixture(f)
	dir := f.TempDir()
	ix, err := New(cat, Options{CacheDir: dir})
	if err != nil {
		f.Fatal(err)
	}
	ix.Close()
	file := cacheFiles(f, dir)[0]
	payload, err := readIndexFile(file)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(payload)
	f.Add(payload[:len(payload)/2])
	f.Add([]byte{})
	name := filepath.Base(file)
	f.Fuzz(func(t *testing.T, payload []byte) {
		ix := &Index{opts: Options{SummaryLen: 90}}
		if _, err := decodeIndex(ix, payload, name, cat.Endpoints()); err == nil && len(ix.entries) != cat.Len() {
			t.Errorf("decoded %d entries of %d", len(ix.entries), cat.Len())
		}
	})
}
