// Package spectest loads the specs tests need: a spec written in the test
// (Parse), one of the large real specs of the shared folder (Shared,
// skipped when the folder is absent, and SkipLarge under -race or -short),
// an endpoint of it by operationId, and a JSON body decoded as invoke
// decodes one. It is for tests only.
package spectest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/spec"
)

// Parse loads a spec from text with the given base URL.
func Parse(t testing.TB, name, doc, baseURL string) *spec.Spec {
	t.Helper()
	s, err := spec.Parse(t.Context(), name+".json", []byte(doc), spec.Options{Name: name, BaseURL: baseURL})
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return s
}

// Endpoint returns the endpoint with the given operationId.
func Endpoint(t testing.TB, s *spec.Spec, opID string) *spec.Endpoint {
	t.Helper()
	for _, e := range s.Endpoints {
		if e.OperationID == opID {
			return e
		}
	}
	t.Fatalf("no operation %s in %s", opID, s.Name)
	return nil
}

// SkipLarge skips a test that loads the large shared specs under -race
// or -short; make test runs it again without them.
func SkipLarge(t testing.TB) {
	t.Helper()
	if testing.Short() || raceDetector {
		t.Skip("loads large specs: runs without -race and -short")
	}
}

// Shared loads a spec from the shared specs folder (../../../shared/specs
// from a package two folders below the module's root), skipping the test
// when it is absent.
func Shared(t testing.TB, file, baseURL string) *spec.Spec {
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

// DecodeJSON decodes a body as invoke does (numbers stay json.Number);
// "" is nil.
func DecodeJSON(t testing.TB, s string) any {
	t.Helper()
	if s == "" {
		return nil
	}
	v, err := answer.DecodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("body %s: %v", s, err)
	}
	return v
}
