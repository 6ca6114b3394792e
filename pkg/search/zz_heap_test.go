package search

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/specgate/specgate/pkg/spec"
)

func TestZZHeap(t *testing.T) {
	dir := t.TempDir()
	src := []spec.Source{{Location: githubFull}}
	if _, err := spec.LoadCatalog(t.Context(), src, spec.CatalogOptions{CacheDir: dir}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	l, _ := spec.LoadCatalog(t.Context(), src, spec.CatalogOptions{CacheDir: dir})
	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	ix, _ := Build(t.Context(), l.Catalog, Options{}, nil)
	ix.Search("list pull requests of a repository", 5)
	runtime.GC()
	var m2 runtime.MemStats
	runtime.ReadMemStats(&m2)
	t.Logf("heap in use: base %.1f MB, +catalog %.1f MB, +index %.1f MB; peak-ish sys %.1f MB", float64(m0.HeapInuse)/1e6, float64(m1.HeapInuse-m0.HeapInuse)/1e6, float64(m2.HeapInuse-m1.HeapInuse)/1e6, float64(m2.HeapSys)/1e6)
	f, _ := os.Create("/tmp/perfwork/heap.prof")
	pprof.WriteHeapProfile(f)
	f.Close()
	runtime.KeepAlive(ix)
	runtime.KeepAlive(l)
}
