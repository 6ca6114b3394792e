package paging

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/specgate/specgate/pkg/spec"
)

// parseSpec loads a spec from text with the given base URL.
func parseSpec(t testing.TB, name, doc, baseURL string) *spec.Spec {
	t.Helper()
	s, err := spec.Parse(t.Context(), name+".json", []byte(doc), spec.Options{Name: name, BaseURL: baseURL})
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return s
}

// endpoint returns the endpoint with the given operationId.
func endpoint(t testing.TB, s *spec.Spec, opID string) *spec.Endpoint {
	t.Helper()
	for _, e := range s.Endpoints {
		if e.OperationID == opID {
			return e
		}
	}
	t.Fatalf("no operation %s in %s", opID, s.Name)
	return nil
}

// skipLargeSpecs skips a test that loads the large shared specs under
// -race or -short; make test runs it again without them.
func skipLargeSpecs(t testing.TB) {
	t.Helper()
	if testing.Short() || raceDetector {
		t.Skip("loads large specs: runs without -race and -short")
	}
}

// sharedSpec loads a spec from ../../../shared/specs, skipping when absent.
func sharedSpec(t testing.TB, file, baseURL string) *spec.Spec {
	t.Helper()
	path := filepath.Join("..", "..", "..", "shared", "specs", file)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not present", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Parse(t.Context(), path, data, spec.Options{BaseURL: baseURL})
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	return s
}
