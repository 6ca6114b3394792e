package spec

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// snapshot renders everything a spec's endpoints and components hold,
// the fields JSON leaves out included.
func snapshot(t *testing.T, s *Spec) string {
	t.Helper()
	var b strings.Builder
	for _, e := range s.Endpoints {
		j, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteString("\x00" + e.About + "\x00" + e.Glossary + "\x00")
		b.Write(e.raw)
		b.WriteString("\n")
	}
	for _, sec := range []string{"schemas", "responses", "parameters", "examples", "requestBodies", "headers", "securitySchemes", "links", "callbacks", "pathItems"} {
		names, ok := s.componentNames(sec)
		if !ok {
			continue
		}
		sort.Strings(names)
		b.WriteString("\n" + sec + ":")
		for _, name := range names {
			raw, ok := s.Component(sec, name)
			if !ok {
				t.Fatalf("component %s/%s listed but not found", sec, name)
			}
			b.WriteString("\n" + name + "\x00")
			b.Write(raw)
		}
	}
	return b.String()
}

// operations renders the rebuilt operation of every step-th endpoint, as
// inspect and calls see it, or the error rebuilding it gives.
func operations(t *testing.T, s *Spec, step int) []string {
	t.Helper()
	out := make([]string, len(s.Endpoints))
	for i, e := range s.Endpoints {
		if i%step != 0 {
			continue
		}
		op, err := hydrate(t.Context(), e, true)
		if err != nil {
			out[i] = "error: " + err.Error()
			continue
		}
		j, err := json.Marshal(op.Doc)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(j)
	}
	return out
}

// checkPack packs s and requires the same values after, and the same
// rebuilt operations, of every endpoint or, on a large spec, 20 of them.
func checkPack(t *testing.T, s *Spec, file string) {
	t.Helper()
	step := max(1, len(s.Endpoints)/20)
	before, ops := snapshot(t, s), operations(t, s, step)
	s.pack()
	if s.Components != nil {
		t.Error("the components stayed uncompressed")
	}
	if after := snapshot(t, s); after != before {
		t.Fatalf("packing changed the catalog of %s", file)
	}
	for i, op := range operations(t, s, step) {
		if op != ops[i] {
			t.Fatalf("packing changed the rebuilt operation %s:\nbefore %.300s\nafter  %.300s", s.Endpoints[i].ID, ops[i], op)
		}
	}
	if len(s.Endpoints) < 2 {
		return
	}
	// Values share one allocation: growing one must not write into the next.
	a, b := s.Endpoints[0], s.Endpoints[1]
	next := string(b.raw)
	_ = append(a.raw, "xxxxxxxx"...)
	if string(b.raw) != next {
		t.Fatal("an append to one operation's JSON overwrote the next")
	}
}

func TestPackKeepsEveryValue(t *testing.T) {
	for _, f := range []string{"petstore-v3.yaml", "petstore-v2.json", "auth-kinds.yaml", "paging.yaml", "uber-v2.json"} {
		t.Run(f, func(t *testing.T) {
			file := filepath.Join("../../testdata", f)
			s, err := Load(t.Context(), file, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkPack(t, s, file)
		})
	}
}

func TestPackKeepsEveryValueOfTheSharedCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(sharedSpecs, "*"))
	if len(files) == 0 {
		t.Skip("shared spec corpus not present")
	}
	if raceDetector {
		t.Skip("loads large specs: runs without -race")
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".md") {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := Load(t.Context(), f, Options{})
			if err != nil {
				t.Skipf("does not load (TestSharedCorpus covers that): %v", err)
			}
			checkPack(t, s, f)
		})
	}
}

// TestCacheKeepsComponentsPacked: the cache keeps the components as
// compressed once on the cold load; a warm load reads them back as they
// were, with the same values and rebuilt operations as a spec loaded
// without a cache.
func TestCacheKeepsComponentsPacked(t *testing.T) {
	for _, f := range []string{"petstore-v3.yaml", "auth-kinds.yaml", "paging.yaml", "uber-v2.json"} {
		t.Run(f, func(t *testing.T) {
			file := filepath.Join("../../testdata", f)
			plain, err := Load(t.Context(), file, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, wantOps := snapshot(t, plain), operations(t, plain, 1)
			c := Cache{Dir: t.TempDir()}
			for _, warm := range []bool{false, true} {
				res, err := c.Load(t.Context(), file, Options{})
				if err != nil || res.FromCache != warm {
					t.Fatalf("load (warm %v): from cache %v, %v", warm, res.FromCache, err)
				}
				if res.Spec.Components != nil {
					t.Errorf("warm %v: the components are held uncompressed", warm)
				}
				if got := snapshot(t, res.Spec); got != want {
					t.Fatalf("warm %v: the catalog differs from one loaded without a cache", warm)
				}
				for i, op := range operations(t, res.Spec, 1) {
					if op != wantOps[i] {
						t.Fatalf("warm %v: rebuilt operation %s differs:\nwant %.300s\ngot  %.300s", warm, plain.Endpoints[i].ID, wantOps[i], op)
					}
				}
			}
		})
	}
}
