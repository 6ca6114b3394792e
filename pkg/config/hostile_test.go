package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// aliasBombConfig is a config of one size-byte string aliased n times, each
// alias an entry of a spec's exclude list.
func aliasBombConfig(size, n int) string {
	var b strings.Builder
	b.WriteString("specs:\n  - name: x\n    location: x.yaml\n    include: [&s ")
	b.WriteString(strings.Repeat("a", size))
	b.WriteString("]\n    exclude:\n")
	for range n {
		b.WriteString("      - *s\n")
	}
	return b.String()
}

// A 1 MB config of one 1 MiB string aliased 2,000 times ran out of memory
// after 36.6 s at 2 GB: the strict decode expanded every alias. The alias
// budget of specs now refuses it before that decode.
func TestParseAliasBombOfLongStringRefused(t *testing.T) {
	doc := aliasBombConfig(1<<20, 2000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := parseWith(t, doc, nil)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "aliases repeat too much text") {
		t.Fatalf("err = %v, want the alias text refused", err)
	}
	if len(err.Error()) > 300 {
		t.Errorf("a %d-byte error; it should be one short line", len(err.Error()))
	}
	// Expanded, the aliases are 2 GiB; refused, the work is a few copies of
	// the document.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("allocated %d MiB refusing a %d KiB config", alloc>>20, len(doc)>>10)
	}

	// A few aliases of a short string, as real configs use them, still load.
	c := mustParse(t, aliasBombConfig(20, 5), nil)
	if got := len(c.Specs[0].Exclude); got != 5 {
		t.Errorf("exclude has %d entries, want the 5 aliases", got)
	}
}

func TestValidatePatternBounds(t *testing.T) {
	many := "specs:\n  - name: x\n    location: x.yaml\n    include:\n" + strings.Repeat("      - getPet\n", MaxPatterns+1)
	long := fmt.Sprintf("specs:\n  - name: x\n    location: x.yaml\n    exclude: [%q]\n", strings.Repeat("a", MaxPatternBytes+1))
	for _, tt := range []struct{ name, yaml, want string }{
		{"too many", many, fmt.Sprintf("specs[x].include: has %d patterns; at most %d are allowed", MaxPatterns+1, MaxPatterns)},
		{"too long", long, fmt.Sprintf("specs[x].exclude[0]: is %d bytes long; a pattern may have at most %d", MaxPatternBytes+1, MaxPatternBytes)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := mustParse(t, tt.yaml, nil).Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("a %d-byte error echoes the patterns", len(err.Error()))
			}
		})
	}
	ok := "specs:\n  - name: x\n    location: x.yaml\n    include:\n" + strings.Repeat("      - getPet\n", MaxPatterns)
	if err := mustParse(t, ok, nil).Validate(); err != nil && strings.Contains(err.Error(), "patterns") {
		t.Errorf("%d patterns refused: %v", MaxPatterns, err)
	}
}
