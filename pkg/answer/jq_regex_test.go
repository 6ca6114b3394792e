package answer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/itchyny/gojq"
)

// gojqRun runs src with gojq as it is, outside the subset, for comparison:
// the outputs, or the error text of the first error.
func gojqRun(t *testing.T, src string, v any) (any, string) {
	t.Helper()
	q, err := gojq.Parse(src)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		t.Fatalf("compile %q: %v", src, err)
	}
	var out []any
	iter := code.Run(v)
	for {
		x, ok := iter.Next()
		if !ok {
			break
		}
		if e, isErr := x.(error); isErr {
			return nil, e.Error()
		}
		out = append(out, x)
	}
	if len(out) == 1 {
		return out[0], ""
	}
	if out == nil {
		out = []any{}
	}
	return out, ""
}

// The regular expression functions run on a linear match of specgate's own;
// they answer exactly as gojq's builtins do.
func TestJQRegexAsGojq(t *testing.T) {
	inputs := []string{
		`"Found a bug, fixed the BUG; bugfix"`,
		`"día: añadir ñandú, ∑ 12 € 345"`,
		`"a,b,,c"`,
		`""`,
		`"aaa"`,
		"\"caf\\u00e9 \\ud83d\\ude00 x\"",
		`"line one\nline two\nthree"`,
	}
	filters := []string{
		`[match("bug"; "gi") | {offset, length, string}]`,
		`[match("(?<word>[a-zñ]+)(\\d)?"; "g")]`,
		`[match("")]`,
		`[match(""; "g")]`,
		`[match("a*"; "g")]`,
		`[match("\\b"; "g") | .offset]`,
		`[match(["b.g", "gi"])]`,
		`[match("x$"; "m")]`,
		`[capture("(?<a>\\w)(?<b>\\w)?")]`,
		`[capture("(?<a>\\w)(?<n>\\d)?"; "g")]`,
		`[scan("[aeiouñ]")]`,
		`[scan("(\\w)(\\w)"; "g")]`,
		`[scan(""; "g")]`,
		`[splits(", *")]`,
		`[splits("")]`,
		`split(",+"; null)`,
		`split(""; "g")`,
		`sub("(?<x>[a-z])"; "<\(.x)>")`,
		`sub("b"; "B"; "gi")`,
		`gsub("(?<x>[aeiou])"; "[\(.x)]")`,
		`gsub(""; "-")`,
		`gsub("\\s+"; " ")`,
		`gsub("(?<l>.)"; "\(.l)\(.l)"; "m")`,
		`[test("BUG"), test("bug"; "i"), test(["^l", "g"])]`,
		`[match("("; "g")]`,
		`[match("a"; "q")]`,
		`[match(1)]`,
	}
	for _, in := range inputs {
		doc := decodeJQ(t, in)
		for _, src := range filters {
			want, wantErr := gojqRun(t, src, doc)
			got, err := compileJQ(t, src).Run(t.Context(), doc, JQLimits{})
			if wantErr != "" {
				if err == nil {
					t.Errorf("%s on %s: got %s, gojq fails with %q", src, in, encodeJQ(t, got), wantErr)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s on %s: %v, gojq gives %s", src, in, err, encodeJQ(t, want))
				continue
			}
			if g, w := encodeJQ(t, got), encodeJQ(t, want); g != w {
				t.Errorf("%s on %s:\n got %s\nwant %s", src, in, g, w)
			}
		}
	}
	// Non-string input fails as in gojq.
	for _, src := range []string{`match("a")`, `[scan("a")]`, `sub("a"; "b")`} {
		if _, err := compileJQ(t, src).Run(t.Context(), decodeJQ(t, `{"a": 1}`), JQLimits{}); err == nil {
			t.Errorf("%s on an object did not fail", src)
		}
	}
}

// A regular expression call runs inside one builtin, where the deadline is
// not looked at: a global match counts code points in one pass (gojq's own
// took minutes for scan(".") over 670 KB), stops past maxJQMatches, and an
// expression too costly for the string's length is refused before it runs
// (Go took 45 s for test("[a-z]{0,1000}x") over 1 MiB).
func TestJQRegexOverLongStringsIsBounded(t *testing.T) {
	long := strings.Repeat("é", 200_000) // 400 KB
	for _, tc := range []struct {
		src  string
		doc  any
		fail string // empty: succeeds
	}{
		{`[match("é+"; "g")] | length`, long, ""},
		{`[scan("éé"; "g")] | length`, strings.Repeat("é", 10_000), ""},
		{`[splits("x")] | length`, long, ""},
		{`test("x$")`, long, ""},
		{`[scan(".")] | length`, long, "more than 10000 times"},
		{`[match(""; "g")] | length`, long, "more than 10000 times"},
		{`gsub("."; "x")`, long, "more than 10000 times"},
		{`[splits("")] | length`, long, "more than 10000 times"},
		{`[scan("é{1000}")] | length`, long, "too costly"},
		{`test("[a-z]{0,1000}x")`, strings.Repeat("a", 1<<20), "too costly"},
		{`test("a")`, strings.Repeat("a", 2<<20), "up to 1048576 bytes"},
		{`explode | length`, strings.Repeat("a", 2<<20), "up to 1048576 bytes"},
		{`split("") | length`, strings.Repeat("a", 2<<20), "up to 1048576 bytes"},
		{`indices("a") | length`, strings.Repeat("a", 2<<20), "up to 1048576 bytes"},
		{`test(.)`, strings.Repeat("a", 5000), "at most 4096"},
	} {
		start := time.Now()
		_, err := compileJQ(t, tc.src).Run(t.Context(), tc.doc, JQLimits{Timeout: 10 * time.Second})
		took := time.Since(start)
		if tc.fail == "" && err != nil {
			t.Errorf("%s: %v", tc.src, err)
		}
		if tc.fail != "" {
			if je := asJQError(t, err, JQRuntime); !strings.Contains(je.Msg, tc.fail) {
				t.Errorf("%s: %q does not say %q", tc.src, je.Msg, tc.fail)
			}
		}
		// Generous for a loaded machine; unbounded, these took minutes.
		if took > 3*time.Second {
			t.Errorf("%s took %v", tc.src, took)
		}
	}
}

// Paths of a value whose subtrees are shared are as many as its JSON's
// leaves: they are refused like any deep operation on a value that large.
func TestJQPathsOfSharedTreesAreBounded(t *testing.T) {
	doc := bigJQList(t, 30)
	for _, src := range []string{
		`reduce .[] as $x (.; [., .]) | [paths] | length`,
		`reduce .[] as $x (.; [., .]) | [tostream] | length`,
	} {
		_, err := compileJQ(t, src).Run(t.Context(), doc, JQLimits{Timeout: 10 * time.Second})
		asJQError(t, err, JQTooLarge)
	}
}

// sub and gsub build their result under the value bound like + does.
func TestJQRegexReplacementIsBounded(t *testing.T) {
	doc := decodeJQ(t, `{"title": "`+strings.Repeat("ab", 100)+`", "big": "`+strings.Repeat("x", 1<<20)+`"}`)
	// About 1.4 s of work before the bound trips; the time limit is far
	// above it so that a loaded machine still sees the size refusal.
	_, err := compileJQ(t, `.big as $b | .title | gsub(""; $b + $b + $b + $b + $b + $b + $b + $b)`).Run(t.Context(), doc, JQLimits{Timeout: 2 * time.Minute})
	je := asJQError(t, err, JQTooLarge)
	if !strings.Contains(je.Msg, "64 MiB") {
		t.Errorf("message %q", je.Msg)
	}
}

func TestJQRegexHelpersNotCallable(t *testing.T) {
	for _, src := range []string{`_specgate_match("a"; null; false)`, `_match("a"; null; false)`, `[1] | _captures`} {
		if _, err := CompileJQ(src); err == nil {
			t.Errorf("%s compiled", src)
		}
	}
}

// The definitions are parsed once and shared by every filter compiled, at
// once too (the race detector watches this one).
func TestJQRegexDefinitionsShared(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			q, err := CompileJQ(`[.[] | .title | scan("[a-z]+")] | length`)
			if err != nil {
				t.Error(err)
				return
			}
			if v, err := q.Run(context.Background(), decodeJQ(t, jqPulls), JQLimits{}); err != nil || fmt.Sprint(v) != "7" {
				t.Errorf("run %d: %v, %v", i, v, err)
			}
		})
	}
	wg.Wait()
}
