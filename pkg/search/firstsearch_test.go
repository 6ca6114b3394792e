package search

import (
	"os"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/specgate/specgate/pkg/spec"
)

// githubFull is the large spec the start-up figures are measured on.
const githubFull = "../../../shared/specs/github-full.json"

// BenchmarkFirstSearch times, in this process, what a start does before its
// first search answer on github-full: load the catalog and its index
// (bare: kin-openapi's LoadFromData of the same bytes, the reference;
// cold: an empty cache, the catalog parsed and the index built; warm: both
// read from the cache a cold start wrote), search once. Run the sub-benchmarks together: cold and warm report their ratio
// to bare from the same run, of wall time (x-bare) and of this process's
// CPU time (x-bare-cpu, steadier on a shared machine). Profile one with
//
//	go test -run '^$' -bench 'FirstSearch/warm' -cpuprofile cpu.out ./pkg/search/
//
// bench/ measures the same through the real binary over stdio.
func BenchmarkFirstSearch(b *testing.B) {
	if _, err := os.Stat(githubFull); err != nil {
		b.Skipf("%s not found: the first-search benchmark needs the shared specs", githubFull)
	}
	var bare, bareCPU time.Duration
	b.Run("bare", func(b *testing.B) {
		data, err := os.ReadFile(githubFull)
		if err != nil {
			b.Fatal(err)
		}
		start, cpu := time.Now(), cpuTime()
		for b.Loop() {
			if _, err := openapi3.NewLoader().LoadFromData(data); err != nil {
				b.Fatal(err)
			}
		}
		bare = time.Since(start) / time.Duration(b.N)
		bareCPU = (cpuTime() - cpu) / time.Duration(b.N)
	})
	for _, warm := range []bool{false, true} {
		name := "cold"
		if warm {
			name = "warm"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			src := []spec.Source{{Location: githubFull}}
			if warm {
				l, err := spec.LoadCatalog(b.Context(), src, spec.CatalogOptions{CacheDir: dir})
				if err != nil {
					b.Fatal(err)
				}
				ix, err := Build(b.Context(), l.Catalog, Options{CacheDir: dir}, nil)
				if err != nil {
					b.Fatal(err)
				}
				ix.Close()
			}
			b.ReportAllocs()
			var took, cpu time.Duration
			for b.Loop() {
				if !warm {
					b.StopTimer()
					os.RemoveAll(dir)
					b.StartTimer()
				}
				start, startCPU := time.Now(), cpuTime()
				l, err := spec.LoadCatalog(b.Context(), src, spec.CatalogOptions{CacheDir: dir})
				if err != nil {
					b.Fatal(err)
				}
				ix, err := Build(b.Context(), l.Catalog, Options{CacheDir: dir}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if cached, err := ix.FromCache(); cached != warm || err != nil {
					b.Fatalf("index from the cache: %v, %v", cached, err)
				}
				if hits, err := ix.Search("list pull requests of a repository", 5); err != nil || len(hits) == 0 {
					b.Fatalf("search: %v, %v", hits, err)
				}
				took += time.Since(start)
				cpu += cpuTime() - startCPU
				ix.Close()
			}
			if bare > 0 {
				b.ReportMetric(float64(took)/float64(b.N)/float64(bare), "x-bare")
			}
			if bareCPU > 0 {
				b.ReportMetric(float64(cpu)/float64(b.N)/float64(bareCPU), "x-bare-cpu")
			}
		})
	}
}
