package spec

import (
	"strings"
	"testing"
)

// TestOwnWords: the words the spec says of an operation's parts, from its
// parameters, its answer's fields and its tag.
func TestOwnWords(t *testing.T) {
	s, err := Load(t.Context(), "../../testdata/petstore-v3.yaml", Options{Name: "petstore"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCatalog(s)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := c.Lookup("petstore.getPetById")
	if !ok {
		t.Fatal("no getPetById")
	}
	got := e.OwnWords()
	for _, want := range []string{"ID of pet to return", "pet status in the store", "Everything about your Pets"} {
		if !strings.Contains(got, want) {
			t.Errorf("OwnWords() = %q, want it to hold %q", got, want)
		}
	}
	if len(got) > GlossaryMax {
		t.Errorf("OwnWords() is %d bytes, want ≤ %d", len(got), GlossaryMax)
	}
	// Loaded again, the words are the same (field order is sorted, not a
	// map's).
	s2, err := Load(t.Context(), "../../testdata/petstore-v3.yaml", Options{Name: "petstore"})
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := NewCatalog(s2)
	e2, _ := c2.Lookup("petstore.getPetById")
	if e2.OwnWords() != got {
		t.Errorf("OwnWords differs between loads:\n%q\n%q", got, e2.OwnWords())
	}
}
