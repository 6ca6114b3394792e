package spec

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLoadCatalog(t *testing.T) {
	petstore := filepath.Join("../../testdata", "petstore-v3.yaml")
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	deletes, err := NewFilter(Curation{Key: "specs[pets]", Exclude: []string{"DELETE /**"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		sources      []Source
		wantErr      error  // errors.Is
		wantErrText  string // contained in the error
		wantLen      int
		wantFailures []string
	}{
		{name: "one spec", sources: []Source{{Location: petstore}}, wantLen: 19},
		{name: "curated", sources: []Source{{Location: petstore, Options: Options{Name: "pets"}, Filter: deletes}}, wantLen: 16},
		{name: "a failure is reported and skipped",
			sources:      []Source{{Location: petstore}, {Location: missing, Options: Options{Name: "gone"}}},
			wantLen:      19,
			wantFailures: []string{"gone"}},
		{name: "a required failure fails the catalog",
			sources:     []Source{{Location: petstore}, {Location: missing, Options: Options{Name: "gone"}, Required: true}},
			wantErrText: "required spec gone: "},
		{name: "none loads", sources: []Source{{Location: missing}}, wantErr: ErrNoSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := LoadCatalog(t.Context(), tt.sources, CatalogOptions{})
			if tt.wantErr != nil || tt.wantErrText != "" {
				if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.wantErrText) {
					t.Fatalf("err = %v, want %v %q", err, tt.wantErr, tt.wantErrText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Catalog.Len(); got != tt.wantLen {
				t.Errorf("catalog holds %d endpoints, want %d", got, tt.wantLen)
			}
			var failed []string
			for _, f := range l.Failures {
				failed = append(failed, f.Spec)
			}
			if strings.Join(failed, ",") != strings.Join(tt.wantFailures, ",") {
				t.Errorf("failures %v, want %v", failed, tt.wantFailures)
			}
		})
	}
}

func TestLoadCatalogUsesTheCache(t *testing.T) {
	dir := t.TempDir()
	src := []Source{{Location: filepath.Join("../../testdata", "petstore-v3.yaml")}}
	for i, want := range []string{"cached=false", "cached=true"} {
		var logs bytes.Buffer
		l, err := LoadCatalog(t.Context(), src, CatalogOptions{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if l.Catalog.Len() != 19 {
			t.Errorf("load %d: %d endpoints, want 19", i, l.Catalog.Len())
		}
		if !strings.Contains(logs.String(), `msg="spec loaded" spec=petstore-v3 endpoints=19 excluded=0 `+want) {
			t.Errorf("load %d: log lacks %s:\n%s", i, want, logs.String())
		}
	}
	// A source that must not be cached is parsed every time.
	src[0].NoCache = true
	var logs bytes.Buffer
	if _, err := LoadCatalog(t.Context(), src, CatalogOptions{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "cached=false") {
		t.Errorf("a NoCache source came from the cache:\n%s", logs.String())
	}
}

func TestCacheFileKeyIsTheContentKey(t *testing.T) {
	file := filepath.Join("../../testdata", "petstore-v3.yaml")
	data, err := Read(t.Context(), file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := Cache{Dir: t.TempDir()}
	got, ok := c.fileKey(file, Options{Name: "p"}, time.Now())
	if want := c.key(file, data, Options{Name: "p"}); !ok || got != want {
		t.Errorf("fileKey = %q, %t; key of the bytes = %q", got, ok, want)
	}
	if _, ok := c.fileKey(file, Options{MaxBytes: 10}, time.Now()); ok {
		t.Error("a file over MaxBytes got a key")
	}
}

// A spec read from a pipe (a shell's <(curl ...)) can be read once only:
// the cache must not read it to hash it first.
func TestCacheLoadsASpecFromAPipe(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("../../testdata", "petstore-v3.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "spec.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(data)
		f.Close()
	}()
	res, err := Cache{Dir: t.TempDir()}.Load(t.Context(), fifo, Options{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.Spec.Endpoints); got != 19 {
		t.Errorf("%d endpoints, want 19", got)
	}
}
