package yamlbudget

import (
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestCheck(t *testing.T) {
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		laughs += name + ": &" + name + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+", ", 10), ", ") + "]\n"
		prev = name
	}
	long := "s: &s " + strings.Repeat("a", 1<<20) + "\nl: [" + strings.TrimSuffix(strings.Repeat("*s, ", 20), ", ") + "]\n"
	for _, tt := range []struct {
		name, doc string
		want      error
	}{
		{"plain", "a: 1\nb: [x, y]\n", nil},
		{"a few aliases", "a: &a {k: v}\nb: *a\nc: {<<: *a, m: n}\n", nil},
		{"billion laughs", laughs, ErrTooManyNodes},
		{"long string aliased", long, ErrAliasBytes},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var root yaml.Node
			if err := yaml.Unmarshal([]byte(tt.doc), &root); err != nil {
				t.Fatal(err)
			}
			if err := Check(&root, len(tt.doc)); !errors.Is(err, tt.want) {
				t.Errorf("Check = %v, want %v", err, tt.want)
			}
		})
	}
}
