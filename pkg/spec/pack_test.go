package spec

import (
	"encoding/json"
	"path/filepath"
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
	j, err := json.Marshal(s.Components) // keys sorted
	if err != nil {
		t.Fatal(err)
	}
	b.Write(j)
	return b.String()
}

func checkPack(t *testing.T, s *Spec, file string) {
	t.Helper()
	before := snapshot(t, s)
	s.pack()
	if after := snapshot(t, s); after != before {
		t.Fatalf("packing changed the catalog of %s", file)
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
