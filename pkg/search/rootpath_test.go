package search

import (
	"fmt"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/spec"
)

// TestFilterOnlyFindsTheRootPath: "method:GET path:/" matched every
// operation in document order, so the operation at / was past the limit.
// Filters alone list the shortest paths first.
func TestFilterOnlyFindsTheRootPath(t *testing.T) {
	var paths []string
	for i := range 30 {
		paths = append(paths, fmt.Sprintf(`"/a/b%d/c":{"get":{"operationId":"deep%d","responses":{"200":{"description":"ok"}}}}`, i, i))
	}
	paths = append(paths, `"/":{"get":{"operationId":"root","summary":"API root","responses":{"200":{"description":"ok"}}}}`)
	doc := `{"openapi":"3.0.3","info":{"title":"r","version":"1"},"paths":{` + strings.Join(paths, ",") + `}}`
	s, err := spec.Parse(t.Context(), "r.json", []byte(doc), spec.Options{Name: "r"})
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
	for _, q := range []string{"method:GET path:/", "path:/"} {
		hits, err := ix.Search(q, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].ID != "r.root" {
			t.Errorf("Search(%q) = %v, want r.root first", q, ids(hits))
		}
	}
}
