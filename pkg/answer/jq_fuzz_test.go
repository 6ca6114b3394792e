package answer

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzCompileJQ feeds arbitrary filters to CompileJQ: it never panics, and a
// filter it accepts runs on a small document within its limits, failing only
// with a *JQError of a run-time kind.
func FuzzCompileJQ(f *testing.F) {
	for _, seed := range []string{
		`.`, `.[] | {number, title, user: .user.login}`, `map(select(.state=="open")) | length`,
		`[.[] | .labels[].name] | unique | join(",")`, `reduce .[] as $p (0; . + $p.comments)`,
		`[foreach .[] as $p (0; . + 1; [., $p.number])]`, `.[0] | to_entries | from_entries`,
		`[.[] | "#\(.number): \(.title)"]`, `.[1] as {number: $n} | $n`, `try error("x") catch .`,
		`[paths] | length`, `.[0].number * .[1].number`, `.[0].title * 2`, `[.[] | @csv "\([.number])"]`,
		`[., .] | [., .] | [., .] | tojson`, `[limit(5; .[] as $a | .[] | [$a, .])]`, `label $f | .[] | ., break $f`,
		`def f: .; f`, `.a = 1`, `range(1e9)`, `"x" * 5e8`, `..`, `$ENV`, `input`, `[.[] | sub("(?<x>.)"; "\(.x)")]`,
		`.[] | test("^F")`, `[.[] | tojson] | add | [scan(".")] | length`, `[.[].title | gsub(""; "-")]`,
		`[.[].title | splits("")]`, `.[0].title | [match("(?<a>.)(?<b>\d)?"; "g")]`, `[.[] | tojson | explode] | length`, `tostream`, `getpath(["a", 1e9])`, `.[1e9:]`, `[.[] | .number] | bsearch(1348)`,
	} {
		f.Add(seed)
	}
	doc := decodeJQ(f, jqPulls)
	lim := JQLimits{Timeout: 50 * time.Millisecond, MaxOutputs: 100, MaxBytes: 64 << 10}
	f.Fuzz(func(t *testing.T, src string) {
		q, err := CompileJQ(src)
		if err != nil {
			var je *JQError
			if !errors.As(err, &je) || je.Kind != JQInvalid || q != nil {
				t.Fatalf("CompileJQ(%q) = %v, %v", src, q, err)
			}
			return
		}
		start := time.Now()
		v, err := q.Run(t.Context(), doc, lim)
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("%q ran for %v", src, took)
		}
		if err != nil {
			var je *JQError
			if !errors.As(err, &je) || je.Kind == JQInvalid || strings.Contains(je.Msg, "internal error") {
				t.Fatalf("Run(%q): %v", src, err)
			}
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("Run(%q) = %#v, which does not encode: %v", src, v, err)
		}
		if len(b) > lim.MaxBytes {
			t.Fatalf("Run(%q) is %d bytes, over the cap", src, len(b))
		}
		if a, ok := v.([]any); ok && len(a) > lim.MaxOutputs {
			// One output may itself be a long array; several are at most MaxOutputs.
			if _, err := q.Run(t.Context(), doc, JQLimits{Timeout: lim.Timeout, MaxOutputs: 1, MaxBytes: lim.MaxBytes}); err == nil {
				return
			}
			t.Fatalf("Run(%q) yields %d values, over the cap", src, len(a))
		}
	})
}
