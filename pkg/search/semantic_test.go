package search

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/specgate/specgate/internal/embedtest"
	"github.com/specgate/specgate/pkg/spec"
)

func petstoreIndex(t testing.TB) (*spec.Catalog, *Index) {
	t.Helper()
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
	t.Cleanup(func() { ix.Close() })
	return cat, ix
}

func standIn(t testing.TB) *embedtest.Server {
	t.Helper()
	srv, err := embedtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func rankOf(hits []Hit, id string) int {
	for i, h := range hits {
		if h.ID == id {
			return i + 1
		}
	}
	return 0
}

// noWordShared are intents that share no word (nor stem) with the endpoint
// they mean; the stand-in's synonym groups relate them.
var noWordShared = []struct{ q, want string }{
	{"get rid of an animal", "petstore.deletePet"},
	{"look at a person", "petstore.getUserByName"},
	{"erase a person", "petstore.deleteUser"},
	{"modify an animal", "petstore.updatePet"},
}

func TestSemanticFindsIntentsSharingNoWord(t *testing.T) {
	cat, plain := petstoreIndex(t)
	_, hybrid := petstoreIndex(t)
	srv := standIn(t)
	if err := hybrid.EnableSemantic(t.Context(), cat, SemanticOptions{
		Embedder: &HTTPEmbedder{URL: srv.URL, Model: "stand-in"}, Model: "stand-in",
	}); err != nil {
		t.Fatal(err)
	}
	if st := hybrid.Semantic(); !st.On || st.Endpoints != cat.Len() || st.Dimensions != embedtest.Dims {
		t.Fatalf("status %+v", st)
	}
	lexicalMisses := 0
	for _, c := range noWordShared {
		ep, _ := cat.Lookup(c.want)
		text := strings.ToLower(EndpointText(ep))
		for _, w := range strings.Fields(c.q) {
			if len(w) > 2 && strings.Contains(text, w) {
				t.Fatalf("%q shares %q with %s", c.q, w, c.want)
			}
		}
		lex, err := plain.Search(c.q, 5)
		if err != nil {
			t.Fatal(err)
		}
		if rankOf(lex, c.want) != 1 {
			lexicalMisses++
		}
		t.Logf("%q: lexical rank %d", c.q, rankOf(lex, c.want))
		hits, err := hybrid.Search(c.q, 5)
		if err != nil {
			t.Fatal(err)
		}
		r := rankOf(hits, c.want)
		if r == 0 {
			t.Errorf("%q: %s not in the top 5 with embeddings: %v", c.q, c.want, ids(hits))
		}
		t.Logf("%q: hybrid rank %d", c.q, r)
	}
	if lexicalMisses == 0 {
		t.Errorf("the lexical ranking put every intent first: the cases test nothing")
	}
}

// Without embeddings, or while they are off, answers are the lexical ones.
func TestSemanticOffIsLexical(t *testing.T) {
	cat, plain := petstoreIndex(t)
	_, down := petstoreIndex(t)
	srv := standIn(t)
	srv.SetMode(embedtest.Fail)
	err := down.EnableSemantic(t.Context(), cat, SemanticOptions{Embedder: &HTTPEmbedder{URL: srv.URL, Model: "m"}, Model: "m"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("EnableSemantic against a failing endpoint: %v", err)
	}
	st := down.Semantic()
	if st.On || !strings.Contains(st.Reason, "HTTP 500") {
		t.Fatalf("status %+v", st)
	}
	for _, q := range []string{"find pet by id", "delete an order", "get rid of an animal", "method:GET pets", "user login"} {
		want, err1 := plain.Search(q, 10)
		got, err2 := down.Search(q, 10)
		if !reflect.DeepEqual(want, got) || !errors.Is(err1, err2) {
			t.Errorf("%q: off %v (%v), lexical %v (%v)", q, ids(got), err2, ids(want), err1)
		}
	}
}

func TestSemanticCache(t *testing.T) {
	cat, ix := petstoreIndex(t)
	srv := standIn(t)
	dir := t.TempDir()
	opts := SemanticOptions{Embedder: &HTTPEmbedder{URL: srv.URL, Model: "m1"}, Model: "m1", CacheDir: dir}
	if err := ix.EnableSemantic(t.Context(), cat, opts); err != nil {
		t.Fatal(err)
	}
	first := srv.Inputs.Load()
	if first != int64(cat.Len()) {
		t.Fatalf("first start embedded %d texts, want %d", first, cat.Len())
	}
	// A second start reads every vector from the cache: only queries go out.
	_, again := petstoreIndex(t)
	if err := again.EnableSemantic(t.Context(), cat, opts); err != nil {
		t.Fatal(err)
	}
	if n := srv.Inputs.Load(); n != first {
		t.Fatalf("second start embedded %d texts", n-first)
	}
	if st := again.Semantic(); st.Cached != cat.Len() || !st.On {
		t.Fatalf("status %+v", st)
	}
	if _, err := again.Search("get rid of an animal", 5); err != nil {
		t.Fatal(err)
	}
	if n := srv.Inputs.Load(); n != first+1 {
		t.Fatalf("a search embedded %d texts, want its query only", n-first)
	}
	again.Search("get rid of an animal", 5)
	if n := srv.Inputs.Load(); n != first+1 {
		t.Fatalf("a repeated query was embedded again")
	}
	// Another model has vectors of its own.
	_, other := petstoreIndex(t)
	opts2 := opts
	opts2.Embedder, opts2.Model = &HTTPEmbedder{URL: srv.URL, Model: "m2"}, "m2"
	if err := other.EnableSemantic(t.Context(), cat, opts2); err != nil {
		t.Fatal(err)
	}
	if st := other.Semantic(); st.Cached != 0 {
		t.Fatalf("another model read %d cached vectors", st.Cached)
	}
	// A corrupt file is embedded again, and said so.
	files, _ := filepath.Glob(filepath.Join(dir, "vectors", "*.vec"))
	if len(files) != 2 {
		t.Fatalf("cache files %v", files)
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		data[len(data)/2] ^= 0xff
		os.WriteFile(f, data, 0o644)
	}
	var logs bytes.Buffer
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	_, fresh := petstoreIndex(t)
	before := srv.Inputs.Load()
	if err := fresh.EnableSemantic(t.Context(), cat, opts); err != nil {
		t.Fatal(err)
	}
	if n := srv.Inputs.Load() - before; n != int64(cat.Len()) {
		t.Fatalf("after corruption embedded %d, want %d", n, cat.Len())
	}
	if !strings.Contains(logs.String(), "checksum mismatch") {
		t.Fatalf("log: %s", logs.String())
	}
	// ... and the rewritten file serves the next start.
	_, next := petstoreIndex(t)
	opts.Logger = nil
	if err := next.EnableSemantic(t.Context(), cat, opts); err != nil || next.Semantic().Cached != cat.Len() {
		t.Fatalf("after rewrite: %v %+v", err, next.Semantic())
	}
}

// An endpoint that misbehaves while serving gives lexical answers, is
// reported, and is used again once it answers.
func TestSemanticEndpointFaults(t *testing.T) {
	cat, plain := petstoreIndex(t)
	for _, c := range []struct {
		mode   embedtest.Mode
		reason string
	}{
		{embedtest.Fail, "HTTP 500"},
		{embedtest.Limited, "rate limited"},
		{embedtest.WrongDims, "dimensions"},
		{embedtest.FewerVecs, "0 vectors for 1 inputs"},
		{embedtest.NotJSON, "not the expected JSON"},
		{embedtest.NaN, "not the expected JSON"},
		{embedtest.Hang, "no answer within"},
	} {
		t.Run(reason(c.mode), func(t *testing.T) {
			_, ix := petstoreIndex(t)
			srv := standIn(t)
			var mu sync.Mutex
			now := time.Unix(1_000_000, 0)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			if err := ix.EnableSemantic(t.Context(), cat, SemanticOptions{
				Embedder: &HTTPEmbedder{URL: srv.URL, Model: "m", Now: clock}, Model: "m",
				Timeout: 100 * time.Millisecond, Now: clock,
			}); err != nil {
				t.Fatal(err)
			}
			srv.SetMode(c.mode)
			q := "find pets by status"
			want, _ := plain.Search(q, 10)
			got, err := ix.Search(q, 10)
			if err != nil || !reflect.DeepEqual(ids(got), ids(want)) {
				t.Fatalf("search while faulty: %v %v, want lexical %v", ids(got), err, ids(want))
			}
			st := ix.Semantic()
			if st.On || !strings.Contains(st.Reason, c.reason) {
				t.Fatalf("status %+v, want off for %q", st, c.reason)
			}
			// Within RetryAfter the endpoint is left alone.
			n := srv.Requests.Load()
			ix.Search("another query", 10)
			if srv.Requests.Load() != n {
				t.Fatalf("a failed endpoint was asked again at once")
			}
			srv.SetMode(embedtest.OK)
			mu.Lock()
			now = now.Add(31 * time.Second)
			mu.Unlock()
			if _, err := ix.Search("get rid of an animal", 10); err != nil {
				t.Fatal(err)
			}
			if st := ix.Semantic(); !st.On {
				t.Fatalf("not back on: %+v", st)
			}
		})
	}
}

func reason(m embedtest.Mode) string {
	return [...]string{"ok", "500", "429", "wrong-dims", "fewer", "nan", "hang", "not-json", "dims8"}[m]
}

func TestSemanticWrongModelDimensions(t *testing.T) {
	cat, ix := petstoreIndex(t)
	srv := standIn(t)
	srv.SetMode(embedtest.FewerVecs)
	err := ix.EnableSemantic(t.Context(), cat, SemanticOptions{Embedder: &HTTPEmbedder{URL: srv.URL, Model: "m"}, Model: "m"})
	if err == nil || !strings.Contains(err.Error(), "vectors for") {
		t.Fatalf("fewer vectors than inputs at load: %v", err)
	}
}

func TestSemanticBadQueries(t *testing.T) {
	cat, ix := petstoreIndex(t)
	srv := standIn(t)
	if err := ix.EnableSemantic(t.Context(), cat, SemanticOptions{Embedder: &HTTPEmbedder{URL: srv.URL, Model: "m"}, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		strings.Repeat("pets and orders ", 700), // 10 KB
		"🐶🐱🔥",
		"supprimer un animal de compagnie",
		"ペットを探す",
		"method:GET 🐶",
	} {
		if _, err := ix.Search(q, 10); err != nil {
			t.Errorf("%.40q: %v", q, err)
		}
	}
	for _, in := range srv.Texts() {
		if len(in) > maxQueryBytes+len("... ") && !strings.Contains(in, "\n") {
			t.Errorf("a query of %d bytes was sent", len(in))
		}
	}
	if !ix.Semantic().On {
		t.Fatalf("bad queries turned semantic search off: %+v", ix.Semantic())
	}
}

func TestHTTPEmbedderKeyStaysOut(t *testing.T) {
	srv := standIn(t)
	const key = "sk-embed-SECRET-123"
	e := &HTTPEmbedder{URL: srv.URL, Model: "m", APIKey: key}
	if _, err := e.Embed(t.Context(), []string{"hello"}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Authorizations(); len(got) != 1 || got[0] != "Bearer "+key {
		t.Fatalf("authorization %q", got)
	}
	srv.SetMode(embedtest.Fail)
	_, err := e.Embed(t.Context(), []string{"hello"})
	if err == nil || strings.Contains(err.Error(), key) {
		t.Fatalf("error %v", err)
	}
	bad := &HTTPEmbedder{URL: "http://user:" + key + "@127.0.0.1:1/v1/embeddings", Model: "m"}
	if _, err := bad.Embed(t.Context(), []string{"x"}); err == nil || strings.Contains(err.Error(), key) {
		t.Fatalf("error %v", err)
	}
}

// The stand-in's 429 blocks the endpoint for its Retry-After.
func TestHTTPEmbedderHonoursRetryAfter(t *testing.T) {
	srv := standIn(t)
	srv.SetMode(embedtest.Limited)
	e := &HTTPEmbedder{URL: srv.URL, Model: "m"}
	_, err := e.Embed(t.Context(), []string{"x"})
	var rl *RateLimitedError
	if !errors.As(err, &rl) || rl.Wait != time.Second {
		t.Fatalf("first: %v", err)
	}
	_, err = e.Embed(t.Context(), []string{"x"})
	if !errors.As(err, &rl) || srv.Requests.Load() != 1 {
		t.Fatalf("second call went out (%d requests): %v", srv.Requests.Load(), err)
	}
}

// flaky fails its first calls, then embeds with the stand-in's vectors.
type flaky struct {
	mu    sync.Mutex
	fails int
	calls int
}

func (f *flaky) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *flaky) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fails > 0 {
		f.fails--
		return nil, errors.New("connection refused")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = embedtest.Vector(t)
	}
	return out, nil
}

// An endpoint down at start is retried in the background, backing off,
// and semantic search comes on when it answers.
func TestSemanticRetriedAfterFailedStart(t *testing.T) {
	cat, ix := petstoreIndex(t) // bleve's workers live outside the bubble
	synctest.Test(t, func(t *testing.T) {
		f := &flaky{fails: 2}
		// what the bubble started ends in it
		defer func() { ix.sem.Swap(nil).close() }()
		if err := ix.EnableSemantic(t.Context(), cat, SemanticOptions{Embedder: f, Model: "m"}); err == nil {
			t.Fatal("no error for a failed start")
		}
		if ix.Semantic().On {
			t.Fatal("on after a failed start")
		}
		time.Sleep(5 * time.Second) // the first retry, which fails too
		synctest.Wait()
		if ix.Semantic().On || f.count() != 2 {
			t.Fatalf("after 5s: calls %d, %+v", f.count(), ix.Semantic())
		}
		time.Sleep(10 * time.Second) // the second retry, after twice the wait
		synctest.Wait()
		if st := ix.Semantic(); !st.On || st.Endpoints != cat.Len() {
			t.Fatalf("after 15s: calls %d, %+v", f.count(), st)
		}
	})
}

func TestCompounds(t *testing.T) {
	cat, ix := petstoreIndex(t)
	_ = cat
	got := ix.compounds([]string{"petorder", "usern", "ame", "store", "zzzqqq"})
	want := []string{"pet", "order", "username", "store", "zzzqqq"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("compounds %v, want %v", got, want)
	}
}

// Compound words read the same in the query as in the index, written
// together or apart.
func TestCompoundsOnGitHub(t *testing.T) {
	if raceDetector {
		t.Skip("loads a large spec: runs without -race")
	}
	ix, _ := githubIndex(t)
	for _, q := range []string{"list the stargazers of a repository", "list the star gazers of a repository", "list the stargazer s of a repo"} {
		hits, err := ix.Search(q, 5)
		if err != nil {
			t.Fatal(err)
		}
		if r := rankOf(hits, "github-full.activity/list-stargazers-for-repo"); r == 0 {
			t.Errorf("%q: %v", q, ids(hits))
		}
	}
}

// On GitHub's 1,223 endpoints: an intent the lexical ranking leaves out of
// its top 5 reaches the top with the stand-in's vectors.
func TestSemanticOnGitHub(t *testing.T) {
	if raceDetector {
		t.Skip("loads a large spec: runs without -race")
	}
	plain, _ := githubIndex(t)
	hybrid, _ := githubIndex(t)
	cat := sharedCatalog(t, "github-full.json", "github-full")
	if err := hybrid.EnableSemantic(t.Context(), cat, SemanticOptions{Embedder: standInEmbedder{}, Model: "stand-in"}); err != nil {
		t.Fatal(err)
	}
	const q, want = "erase a ticket remark", "github-full.issues/delete-comment"
	lex, _ := plain.Search(q, 5)
	hyb, _ := hybrid.Search(q, 5)
	if rankOf(lex, want) != 0 || rankOf(hyb, want) == 0 {
		t.Fatalf("%q: lexical %v, hybrid %v", q, ids(lex), ids(hyb))
	}
}

// Filters hold for the endpoints the vector side brings as for bleve's.
func TestSemanticKeepsFilters(t *testing.T) {
	cat, ix := petstoreIndex(t)
	srv := standIn(t)
	if err := ix.EnableSemantic(t.Context(), cat, SemanticOptions{Embedder: &HTTPEmbedder{URL: srv.URL, Model: "m"}, Model: "m", Weight: 5}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"method:DELETE look at an animal", "tag:store an animal", "path:/user a purchase"} {
		hits, err := ix.Search(q, 20)
		if err != nil || len(hits) == 0 {
			t.Fatalf("%q: %v %v", q, ids(hits), err)
		}
		keep := ParseQuery(q).matcher()
		for _, h := range hits {
			if !keep(&h) {
				t.Errorf("%q: %s %s %s %v passed the filter", q, h.ID, h.Method, h.Path, h.Tags)
			}
		}
	}
}

// Lookups made from endpoint ids (suggestions, "did you mean") stay
// lexical: they cost no trip to the embeddings endpoint.
func TestLexicalLookupsSendNothing(t *testing.T) {
	cat, ix := petstoreIndex(t)
	srv := standIn(t)
	if err := ix.EnableSemantic(t.Context(), cat, SemanticOptions{Embedder: &HTTPEmbedder{URL: srv.URL, Model: "m"}, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	n := srv.Requests.Load()
	if hits := ix.Similar("petstore.getPetById", 5); len(hits) == 0 {
		t.Fatal("no similar endpoints")
	}
	if hits, err := ix.Lexical("get pet by id", 5); err != nil || len(hits) == 0 {
		t.Fatalf("lexical: %v %v", hits, err)
	}
	if got := srv.Requests.Load() - n; got != 0 {
		t.Fatalf("%d embeddings requests for lookups by id", got)
	}
	if _, err := ix.Search("get pet by id", 5); err != nil || srv.Requests.Load() == n {
		t.Fatalf("a search sent no query to embed (%v)", err)
	}
}
