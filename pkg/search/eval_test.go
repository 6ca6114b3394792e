package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/embedtest"
	"github.com/specgate/specgate/pkg/spec"
)

// sharedSpecs is where the real specs live, relative to this package.
const sharedSpecs = "../../../shared/specs"

// evalSet is testdata/eval.json: labelled intents per spec.
type evalSet struct {
	Specs   map[string]string `json:"specs"`
	Queries []evalQuery       `json:"queries"`
}

type evalQuery struct {
	Spec  string   `json:"spec"`
	Query string   `json:"query"`
	Want  []string `json:"want"`
}

func loadEvalSet(t testing.TB) evalSet { return loadSet(t, "eval.json") }

func loadSet(t testing.TB, file string) evalSet {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var set evalSet
	if err := json.Unmarshal(data, &set); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return set
}

var (
	specCacheMu sync.Mutex
	specCache   = map[string]*spec.Catalog{}
)

// sharedCatalog loads one spec of ../shared/specs into a catalog of its
// own, skipping when the folder is absent.
func sharedCatalog(t testing.TB, file, name string) *spec.Catalog {
	t.Helper()
	if _, err := os.Stat(sharedSpecs); err != nil {
		t.Skipf("shared specs absent: %v", err)
	}
	path := filepath.Join(sharedSpecs, file)
	specCacheMu.Lock()
	defer specCacheMu.Unlock()
	key := name + "\x00" + file
	if c, ok := specCache[key]; ok {
		return c
	}
	s, err := spec.Load(t.Context(), path, spec.Options{Name: name})
	if err != nil {
		t.Fatalf("loading %s: %v", file, err)
	}
	c, err := spec.NewCatalog(s)
	if err != nil {
		t.Fatal(err)
	}
	specCache[key] = c
	return c
}

// evalReport holds the figures the issue asks for.
type evalReport struct {
	N                  int
	R1, R5, R20, MRR10 float64
	Bytes20Median      int
	Bytes20Max         int
	Misses             []string
	PerSpec            map[string][2]int // spec -> hits@5, queries
	// ByStyle holds the figures per intent style (intentStyle).
	ByStyle map[string]*styleFigures
}

// styleFigures are recall and MRR over the queries of one intent style.
type styleFigures struct {
	N                  int
	R1, R5, R20, MRR10 float64
}

func (f *styleFigures) add(rank int) {
	f.N++
	if rank == 1 {
		f.R1++
	}
	if rank >= 1 && rank <= 5 {
		f.R5++
	}
	if rank >= 1 {
		f.R20++
	}
	if rank >= 1 && rank <= 10 {
		f.MRR10 += 1 / float64(rank)
	}
}

func (f *styleFigures) String() string {
	n := float64(max(f.N, 1))
	return fmt.Sprintf("%.3f / %.3f / %.3f / %.3f", f.R1/n, f.R5/n, f.R20/n, f.MRR10/n)
}

// Intent styles, told apart by how many of the query's content words (not
// stop words, not generic verbs) the wanted endpoint's operationId, path
// or summary uses, stemmed: the style is a property of the query against
// its answer, measured, not labelled by hand.
const (
	styleKeyword    = "keyword"    // every content word is in the name or summary
	styleMixed      = "mixed"      // at least half are
	styleParaphrase = "paraphrase" // fewer than half, but some, are
	styleWordless   = "word-less"  // none is
)

var styleOrder = []string{styleKeyword, styleMixed, styleParaphrase, styleWordless}

// intentStyle classifies query against the best of its wanted endpoints.
func (ix *Index) intentStyle(query string, want []string) string {
	var stems []string
	for _, w := range splitWords(query, nil) {
		if stopWords[w] {
			continue
		}
		if v, ok := verbs[w]; ok && !v.content {
			continue
		}
		if st := stemWord(w); st != "" && !verbStems[st] {
			stems = append(stems, st)
		}
	}
	if len(stems) == 0 {
		return styleKeyword
	}
	best := 0
	for _, id := range want {
		e := ix.entries[ix.byID[id]]
		n := 0
		for _, st := range stems {
			if tid, ok := ix.terms[st]; ok && e.bits(tid)&(inName|inRes|inSum) != 0 {
				n++
			}
		}
		best = max(best, n)
	}
	switch {
	case best == len(stems):
		return styleKeyword
	case 2*best >= len(stems):
		return styleMixed
	case best > 0:
		return styleParaphrase
	}
	return styleWordless
}

func (r evalReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "queries %d: recall@1 %.3f  recall@5 %.3f  recall@20 %.3f  MRR@10 %.3f\n",
		r.N, r.R1, r.R5, r.R20, r.MRR10)
	fmt.Fprintf(&b, "20-hit answer as JSON: median %d bytes, largest %d bytes\n", r.Bytes20Median, r.Bytes20Max)
	var specs []string
	for s := range r.PerSpec {
		specs = append(specs, s)
	}
	sort.Strings(specs)
	for _, s := range specs {
		fmt.Fprintf(&b, "  %-18s recall@5 %d/%d\n", s, r.PerSpec[s][0], r.PerSpec[s][1])
	}
	for _, st := range styleOrder {
		if f := r.ByStyle[st]; f != nil {
			fmt.Fprintf(&b, "  style %-10s n %3d  %s (R@1 / R@5 / R@20 / MRR@10)\n", st, f.N, f)
		}
	}
	for _, m := range r.Misses {
		b.WriteString("  " + m + "\n")
	}
	return b.String()
}

// runEval indexes each spec of the set on its own, as a user loading one
// API would, and scores every query.
func runEval(t testing.TB, file string) evalReport { return runEvalWith(t, file, 0) }

// standInEmbedder embeds in process with the stand-in's vectors
// (internal/embedtest): no HTTP, no model.
type standInEmbedder struct{}

func (standInEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = embedtest.Vector(t)
	}
	return out, nil
}

// runEvalWith is runEval; with a weight above 0, each index also ranks by
// the stand-in's vectors, fused at that weight.
func runEvalWith(t testing.TB, file string, weight float64) evalReport {
	t.Helper()
	set := loadSet(t, file)
	indexes := map[string]*Index{}
	for name, file := range set.Specs {
		cat := sharedCatalog(t, file, name)
		ix, err := New(cat, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		if weight > 0 {
			if err := ix.EnableSemantic(t.Context(), cat, SemanticOptions{Embedder: standInEmbedder{}, Model: "stand-in", Weight: weight}); err != nil {
				t.Fatal(err)
			}
		}
		indexes[name] = ix
	}
	r := evalReport{PerSpec: map[string][2]int{}, ByStyle: map[string]*styleFigures{}}
	var sizes []int
	for _, q := range set.Queries {
		ix := indexes[q.Spec]
		if ix == nil {
			t.Fatalf("query %q names unknown spec %q", q.Query, q.Spec)
		}
		for _, w := range q.Want {
			if _, ok := ix.byID[w]; !ok {
				t.Fatalf("query %q wants %s, which %s does not have", q.Query, w, q.Spec)
			}
		}
		hits, err := ix.Search(q.Query, 20)
		if err != nil {
			t.Fatal(err)
		}
		answer := make([]Hit, len(hits))
		copy(answer, hits)
		data, _ := json.Marshal(answer)
		sizes = append(sizes, len(data))
		if len(data) > 4096 {
			r.Misses = append(r.Misses, fmt.Sprintf("%d bytes for 20 hits of %q", len(data), q.Query))
		}
		rank := 0
		for i, h := range hits {
			if contains(q.Want, h.ID) {
				rank = i + 1
				break
			}
		}
		r.N++
		ps := r.PerSpec[q.Spec]
		ps[1]++
		if rank == 1 {
			r.R1++
		}
		if rank >= 1 && rank <= 5 {
			r.R5++
			ps[0]++
		}
		if rank >= 1 {
			r.R20++
		}
		if rank >= 1 && rank <= 10 {
			r.MRR10 += 1 / float64(rank)
		}
		r.PerSpec[q.Spec] = ps
		style := ix.intentStyle(q.Query, q.Want)
		if r.ByStyle[style] == nil {
			r.ByStyle[style] = &styleFigures{}
		}
		r.ByStyle[style].add(rank)
		if rank != 1 {
			top := ""
			if len(hits) > 0 {
				top = hits[0].ID
			}
			r.Misses = append(r.Misses, fmt.Sprintf("rank %2d  %-50q want %s, top %s", rank, q.Query, q.Want[0], top))
		}
	}
	n := float64(r.N)
	r.R1 /= n
	r.R5 /= n
	r.R20 /= n
	r.MRR10 /= n
	sort.Ints(sizes)
	r.Bytes20Median = sizes[len(sizes)/2]
	r.Bytes20Max = sizes[len(sizes)-1]
	return r
}

// TestEval holds search to the recall targets on the labelled
// intents; run with -v for the report.
func TestEval(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("loads large specs: runs without -race and -short")
	}
	r := runEval(t, "eval.json")
	t.Logf("eval report (testdata/eval.json)\n%s", r)
	check := func(name string, got, want float64) {
		if got < want {
			t.Errorf("%s = %.3f, want ≥ %.2f", name, got, want)
		}
	}
	check("recall@20", r.R20, 0.95)
	check("recall@5", r.R5, 0.80)
	check("recall@1", r.R1, 0.50)
	if r.Bytes20Max > 4096 {
		t.Errorf("largest 20-hit answer is %d bytes, want ≤ 4096", r.Bytes20Max)
	}
	if r.N < 60 {
		t.Errorf("eval set has %d queries, want ≥ 60", r.N)
	}
}

// TestSearchLatency reports the median latency over the github-full
// intents (run with -v); BenchmarkSearch is the precise figure.
func TestSearchLatency(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("loads large specs: runs without -race and -short")
	}
	ix, queries := githubIndex(t)
	var ds []time.Duration
	for range 5 {
		for _, q := range queries {
			start := time.Now()
			if _, err := ix.Search(q, 20); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	t.Logf("github-full search latency over %d searches: median %v, p90 %v", len(ds), ds[len(ds)/2], ds[len(ds)*9/10])
}

func githubIndex(t testing.TB) (*Index, []string) {
	t.Helper()
	set := loadEvalSet(t)
	cat := sharedCatalog(t, set.Specs["github-full"], "github-full")
	ix, err := New(cat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	var queries []string
	for _, q := range set.Queries {
		if q.Spec == "github-full" {
			queries = append(queries, q.Query)
		}
	}
	return ix, queries
}

// BenchmarkSearch measures one search of 20 hits on github-full (1,223
// operations), cycling through the labelled intents.
func BenchmarkSearch(b *testing.B) {
	ix, queries := githubIndex(b)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	took := make([]time.Duration, 0, 1024)
	cpu0 := cpuTime()
	for b.Loop() {
		start := time.Now()
		if _, err := ix.Search(queries[i%len(queries)], 20); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		i++
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(i), "cpu-µs/op")
	// The target is a median under 1 ms: one slow search on a busy machine
	// moves the mean, not the median.
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "µs-median")
}

// BenchmarkNew measures building the index for github-full, which is on
// the start-up path.
func BenchmarkNew(b *testing.B) {
	set := loadEvalSet(b)
	cat := sharedCatalog(b, set.Specs["github-full"], "github-full")
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		ix, err := New(cat, Options{})
		if err != nil {
			b.Fatal(err)
		}
		ix.Close()
		n++
	}
	// CPU time is the steadier figure on a shared machine, where wall
	// time also counts waiting for a core.
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(n), "cpu-ms/op")
}

// cpuTime returns the CPU time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEval prints the eval report; its timing is not the point.
func BenchmarkEval(b *testing.B) {
	var r evalReport
	for b.Loop() {
		r = runEval(b, "eval.json")
	}
	b.ReportMetric(r.R1, "recall@1")
	b.ReportMetric(r.R5, "recall@5")
	b.ReportMetric(r.R20, "recall@20")
	b.ReportMetric(r.MRR10, "MRR@10")
	b.ReportMetric(float64(r.Bytes20Max), "bytes/20hits")
	b.Logf("eval report (testdata/eval.json)\n%s", r)
}

// TestHoldout reports, without failing on recall, the figures for the
// held-out intents that were never used to tune the ranking.
func TestHoldout(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("loads large specs: runs without -race and -short")
	}
	r := runEval(t, "holdout.json")
	t.Logf("held-out report (testdata/holdout.json)\n%s", r)
	if r.Bytes20Max > 4096 {
		t.Errorf("largest 20-hit answer is %d bytes, want ≤ 4096", r.Bytes20Max)
	}
}

// TestHoldout2 reports, without failing on recall, the figures for the
// second held-out set (testdata/holdout2.json), written and measured
// before the ranking changes that holdout.json's misses led to.
func TestHoldout2(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("loads large specs: runs without -race and -short")
	}
	r := runEval(t, "holdout2.json")
	t.Logf("second held-out report (testdata/holdout2.json)\n%s", r)
	if r.Bytes20Max > 4096 {
		t.Errorf("largest 20-hit answer is %d bytes, want ≤ 4096", r.Bytes20Max)
	}
}

// TestHonest reports, without failing on recall, the figures for
// testdata/honest.json: tasks written per API from what it is for, before
// its spec was read, and labelled afterwards; never used to tune anything.
// The hybrid figure uses the stand-in embedder (internal/embedtest), a
// hashing bag of words with a few synonym groups, not a language model.
func TestHonest(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("loads large specs: runs without -race and -short")
	}
	lex := runEvalWith(t, "honest.json", 0)
	t.Logf("honest set, lexical\n%s", lex)
	hyb := runEvalWith(t, "honest.json", DefaultWeight)
	t.Logf("honest set, hybrid with the stand-in embedder\n%s", hyb)
	if lex.N < 100 {
		t.Errorf("honest set has %d queries, want at least 100", lex.N)
	}
}

// BenchmarkHonest reports recall on the honest set, lexical and hybrid
// (stand-in embedder); its timing is not the point.
func BenchmarkHonest(b *testing.B) {
	for _, weight := range []float64{0, DefaultWeight} {
		name := "lexical"
		if weight > 0 {
			name = "hybrid-standin"
		}
		b.Run(name, func(b *testing.B) {
			var r evalReport
			for b.Loop() {
				r = runEvalWith(b, "honest.json", weight)
			}
			b.ReportMetric(r.R1, "recall@1")
			b.ReportMetric(r.R5, "recall@5")
			b.ReportMetric(r.R20, "recall@20")
			b.ReportMetric(r.MRR10, "MRR@10")
		})
	}
}

// BenchmarkSearchSemantic measures one search of 20 hits on github-full
// with semantic search on, the query's vector already in the LRU: the
// lexical ranking, the cosine over every endpoint vector and the fusion,
// without the embeddings call. It reports the median and the memory the
// endpoint vectors take.
func BenchmarkSearchSemantic(b *testing.B) {
	set := loadEvalSet(b)
	cat := sharedCatalog(b, set.Specs["github-full"], "github-full")
	ix, queries := githubIndex(b)
	if err := ix.EnableSemantic(b.Context(), cat, SemanticOptions{Embedder: standInEmbedder{}, Model: "stand-in"}); err != nil {
		b.Fatal(err)
	}
	for _, q := range queries {
		ix.Search(q, 20) // the query vectors into the LRU
	}
	var ds []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, err := ix.Search(queries[i%len(queries)], 20); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
		i++
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "ms-median")
	v := ix.sem.Load().vecs.Load()
	b.ReportMetric(float64(len(v.data)*4)/(1<<20), "vector-MB")
	b.ReportMetric(float64(v.dims), "dims")
}

// TestSearchReport prints, for every labelled set, lexical and hybrid
// (stand-in embedder), the figures the README's search section gives:
// go test -run TestSearchReport -v ./pkg/search/
func TestSearchReport(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("loads large specs: runs without -race and -short")
	}
	var b strings.Builder
	b.WriteString("\n| set | ranking | n | R@1 | R@5 | R@20 | MRR@10 | 20-hit bytes median / max |\n|---|---|---|---|---|---|---|---|\n")
	var styles strings.Builder
	styles.WriteString("\n| set | ranking | style | n | R@1 / R@5 / R@20 / MRR@10 |\n|---|---|---|---|---|\n")
	for _, file := range []string{"eval.json", "holdout.json", "holdout2.json", "honest.json"} {
		for _, weight := range []float64{0, DefaultWeight} {
			mode := "lexical"
			if weight > 0 {
				mode = "hybrid (stand-in)"
			}
			r := runEvalWith(t, file, weight)
			fmt.Fprintf(&b, "| %s | %s | %d | %.3f | %.3f | %.3f | %.3f | %d / %d |\n",
				file, mode, r.N, r.R1, r.R5, r.R20, r.MRR10, r.Bytes20Median, r.Bytes20Max)
			for _, st := range styleOrder {
				if f := r.ByStyle[st]; f != nil {
					fmt.Fprintf(&styles, "| %s | %s | %s | %d | %s |\n", file, mode, st, f.N, f)
				}
			}
			if r.Bytes20Max > 4096 {
				t.Errorf("%s %s: largest 20-hit answer is %d bytes, want ≤ 4096", file, mode, r.Bytes20Max)
			}
		}
	}
	t.Log(b.String() + styles.String())
}
