package answer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// jqPulls is a GitHub-like list of pull requests.
const jqPulls = `[
 {"number": 1347, "title": "Found a bug", "state": "open", "user": {"login": "octocat", "id": 1},
  "labels": [{"name": "bug"}, {"name": "ui"}], "draft": false, "comments": 3},
 {"number": 1348, "title": "Fix the bug", "state": "closed", "user": {"login": "hubot", "id": 2},
  "labels": [], "draft": true, "comments": 0},
 {"number": 1349, "title": "Docs", "state": "open", "user": {"login": "octocat", "id": 1},
  "labels": [{"name": "docs"}], "draft": false, "comments": 12}
]`

// decodeJQ decodes s as the invoke path does: encoding/json with UseNumber.
func decodeJQ(t testing.TB, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}

// encodeJQ is v as compact JSON with sorted keys and no HTML escaping.
func encodeJQ(t testing.TB, v any) string {
	t.Helper()
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		t.Fatalf("encode %#v: %v", v, err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func compileJQ(t testing.TB, src string) *JQ {
	t.Helper()
	q, err := CompileJQ(src)
	if err != nil {
		t.Fatalf("CompileJQ(%q): %v", src, err)
	}
	return q
}

func asJQError(t *testing.T, err error, kind JQErrorKind) *JQError {
	t.Helper()
	var je *JQError
	if !errors.As(err, &je) {
		t.Fatalf("error %v (%T), want a *JQError", err, err)
	}
	if je.Kind != kind {
		t.Fatalf("kind %v (%q), want %v", je.Kind, je.Msg, kind)
	}
	return je
}

func TestJQAllowed(t *testing.T) {
	other := `{"data": [{"id": 1}, {"id": 2}, {"id": 9007199254740993}],
	  "items": [{"metadata": {"name": "web"}}, {"metadata": {"name": "db"}}],
	  "price": 2.5, "qty": 4, "a": {"x": 1, "y": {"z": 1}}, "b": {"y": {"w": 2}},
	  "csv": [["a", 1], ["b,c", 2]], "when": "2024-05-01T10:00:00Z", "s": "<a&b>"}`
	for _, tc := range []struct {
		src, doc, want string
	}{
		{`.[] | {number, title, user: .user.login}`, jqPulls,
			`[{"number":1347,"title":"Found a bug","user":"octocat"},{"number":1348,"title":"Fix the bug","user":"hubot"},{"number":1349,"title":"Docs","user":"octocat"}]`},
		{`map(select(.state=="open")) | length`, jqPulls, `2`},
		{`.data[-1].id`, other, `9007199254740993`},
		{`[.items[] | .metadata.name]`, other, `["web","db"]`},
		{`.[0].title`, jqPulls, `"Found a bug"`},
		{`.[] | select(.number > 9999)`, jqPulls, `[]`},
		{`empty`, jqPulls, `[]`},
		{`.[0].number, .[1].number`, jqPulls, `[1347,1348]`},
		{`group_by(.user.login) | map({user: .[0].user.login, n: length})`, jqPulls,
			`[{"n":1,"user":"hubot"},{"n":2,"user":"octocat"}]`},
		{`sort_by(-.comments) | map(.number)`, jqPulls, `[1349,1347,1348]`},
		{`[.[] | .labels[].name] | unique | join(",")`, jqPulls, `"bug,docs,ui"`},
		{`reduce .[] as $p (0; . + $p.comments)`, jqPulls, `15`},
		{`[foreach .[] as $p (0; . + 1; [., $p.number])]`, jqPulls, `[[1,1347],[2,1348],[3,1349]]`},
		{`[limit(2; .[] | .number)]`, jqPulls, `[1347,1348]`},
		{`first(.[] | select(.draft)) | .number`, jqPulls, `1348`},
		{`.[] | select(.title | test("bug"; "i")) | .number`, jqPulls, `[1347,1348]`},
		{`[.[] | .title | ascii_downcase | sub("bug"; "issue")]`, jqPulls, `["found a issue","fix the issue","docs"]`},
		{`.[0] | to_entries | map(select(.value | type == "number")) | from_entries`, jqPulls, `{"comments":3,"number":1347}`},
		{`.[0] | del(.labels, .user) | keys`, jqPulls, `["comments","draft","number","state","title"]`},
		{`.[0] | with_entries(select(.key | startswith("n")))`, jqPulls, `{"number":1347}`},
		{`del(.[0].user.login, .[1], .[2]) | .[0].user`, jqPulls, `{"id":1}`},
		{`.[0].labels | del(.[0]) | map(.name)`, jqPulls, `["ui"]`},
		{`map_values(select(.draft)) | map(.number)`, jqPulls, `[1348]`},
		{`.[0].user | map_values(tostring)`, jqPulls, `{"id":"1","login":"octocat"}`},
		{`[.[] | "#\(.number): \(.title)"]`, jqPulls, `["#1347: Found a bug","#1348: Fix the bug","#1349: Docs"]`},
		{`.[1] as {number: $n, user: {login: $l}} | [$n, $l]`, jqPulls, `[1348,"hubot"]`},
		{`if .[0].draft then "draft" elif .[0].state == "open" then "open" else "other" end`, jqPulls, `"open"`},
		{`try error("boom") catch .`, jqPulls, `"boom"`},
		{`.[0].nope.deeper? // "none"`, jqPulls, `"none"`},
		{`[paths(type == "number")] | length`, jqPulls, `9`},
		{`.price * .qty`, other, `10`},
		{`.a * .b`, other, `{"x":1,"y":{"w":2,"z":1}}`},
		{`2 * 3`, other, `6`},
		{`.csv[] | @csv`, other, `["\"a\",1","\"b,c\",2"]`},
		{`.s | @html`, other, `"&lt;a&amp;b&gt;"`},
		{`.when | fromdate`, other, `1714557600`},
		{`[.data[].id] | max`, other, `9007199254740993`},
		{`.data[2].id + 1`, other, `9007199254740994`},
		{`[.data[] | select(.id == 9007199254740993)] | length`, other, `1`},
		{`.data[1e8]`, other, `null`},
		{`.data[1:1e9] | length`, other, `2`},
		{`label $out | .[] | if .number > 1347 then ., break $out else empty end | .number`, jqPulls, `1348`},
		{`[.[] | .number] | IN(1348; .[])`, jqPulls, `true`},
		{`.[] | .number | IN(1, 1348)`, jqPulls, `[false,true,false]`},
		{`any(.[]; .draft)`, jqPulls, `true`},
		{`[nan, infinite, -infinite]`, `null`, fmt.Sprintf(`[null,%v,%v]`, encodeJQ(t, math.MaxFloat64), encodeJQ(t, -math.MaxFloat64))},
	} {
		t.Run(tc.src, func(t *testing.T) {
			q := compileJQ(t, tc.src)
			got, err := q.Run(t.Context(), decodeJQ(t, tc.doc), JQLimits{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if g, w := encodeJQ(t, got), encodeJQ(t, decodeJQ(t, tc.want)); g != w {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
}

func TestJQRefused(t *testing.T) {
	for _, tc := range []struct {
		src, msg string
	}{
		{`def f: .; f`, "def is not allowed"},
		{`.a = 1`, `the = operator is not allowed`},
		{`.a |= 1`, `|= operator`},
		{`.a += 1`, `+= operator`},
		{`.a -= 1`, `-= operator`},
		{`.a *= 2`, `*= operator`},
		{`.a /= 2`, `/= operator`},
		{`.a %= 2`, `%= operator`},
		{`.a //= 2`, `//= operator`},
		{`.[1e8] = 1`, `= operator`},
		{`range(1e9)`, "range is not allowed"},
		{`[range(0; 10)]`, "range is not allowed"},
		{`[limit(3; repeat(1))]`, "repeat is not allowed"},
		{`[.[] | while(. < 10; . + 1)]`, "while is not allowed"},
		{`until(. > 10; . + 1)`, "until is not allowed"},
		{`env`, "env is not allowed"},
		{`env.HOME`, "env is not allowed"},
		{`$ENV.HOME`, "$ENV is not allowed"},
		{`{$ENV}`, "$ENV is not allowed"},
		{`input`, "input is not allowed"},
		{`[inputs]`, "inputs is not allowed"},
		{`halt`, "halt is not allowed"},
		{`halt_error(1)`, "halt_error is not allowed"},
		{`"x" * 5e8`, "string repetition"},
		{`5e8 * "x"`, "string repetition"},
		{`("x") * 5e8`, "string repetition"},
		{`"\(.a)" * 1e9`, "string repetition"},
		{`@text "x" * 1e9`, "string repetition"},
		{`setpath([1e8]; 1)`, "setpath is not allowed"},
		{`delpaths([["a"]])`, "delpaths is not allowed"},
		{`pick(.[1e8])`, "pick is not allowed"},
		{`fromstream([[1e8], 1])`, "fromstream is not allowed"},
		{`recurse`, "recurse is not allowed"},
		{`recurse(.[]?; true)`, "recurse is not allowed"},
		{`..`, ".. is not allowed"},
		{`[.. | numbers]`, ".. is not allowed"},
		{`walk(.)`, "walk is not allowed"},
		{`[range(1e9)] | implode`, "range is not allowed"},
		{`[65] | implode`, "implode is not allowed"},
		{`[[1], [2]] | transpose`, "transpose is not allowed"},
		{`combinations`, "combinations is not allowed"},
		{`debug`, "debug is not allowed"},
		{`input_filename`, "input_filename is not allowed"},
		{`format("csv")`, "format is not allowed"},
		{`@sh`, "@sh is not allowed"},
		{`_range(0; 1e9; 1)`, "_range is not allowed"},
		{`_specgate_mul(1; 2)`, "_specgate_mul is not allowed"},
		{`builtins`, "builtins is not allowed"},
		{`import "a" as a; .`, "modules"},
		{`include "a"; .`, "modules"},
		{`.[] | select(.a == ` + strings.Repeat("1 + ", 1100) + `1)`, "at most 4096"},
		{strings.Repeat("(", 100) + "." + strings.Repeat(")", 100), "nests deeper"},
		{strings.Repeat("[", 100) + "." + strings.Repeat("]", 100), "nests deeper"},
		{`.a | {b: (.c | map(.d | ` + strings.Repeat("[", 80) + strings.Repeat("]", 80) + `))}`, "nests deeper"},
		{`.[`, "does not parse"},
		{`.a |`, "does not parse"},
		{``, "empty"},
		{`$undefined`, "not defined"},
		{`nosuchfunc`, "nosuchfunc is not allowed"},
		{`length(1; 2)`, "not defined"},
	} {
		t.Run(tc.src[:min(len(tc.src), 60)], func(t *testing.T) {
			q, err := CompileJQ(tc.src)
			if q != nil {
				t.Fatalf("CompileJQ accepted %q", tc.src)
			}
			je := asJQError(t, err, JQInvalid)
			if !strings.Contains(je.Msg, tc.msg) {
				t.Errorf("message %q, want it to contain %q", je.Msg, tc.msg)
			}
			if len(je.Msg) > 200 {
				t.Errorf("message is %d bytes: %q", len(je.Msg), je.Msg)
			}
		})
	}
}

// TestJQAllowListCompiles keeps the allow-list honest: every name in it is a
// gojq builtin of some arity.
func TestJQAllowListCompiles(t *testing.T) {
	for name := range jqAllowed {
		if _, ok := jqRefused[name]; ok {
			t.Errorf("%s is both allowed and refused", name)
		}
		ok := false
		for arity := range 4 {
			src := name
			if arity > 0 {
				src += "(" + strings.Repeat(".;", arity-1) + ".)"
			}
			if _, err := CompileJQ(src); err == nil {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("%s compiles with no arity from 0 to 3", name)
		}
	}
}

func TestJQStringRepetitionAtRunTime(t *testing.T) {
	doc := decodeJQ(t, `{"s": "x", "n": 500000000}`)
	for _, src := range []string{`.s * .n`, `.n * .s`, `.s as $s | $s * 1e9`, `[.s] | .[0] * 3`} {
		t.Run(src, func(t *testing.T) {
			_, err := compileJQ(t, src).Run(t.Context(), doc, JQLimits{})
			je := asJQError(t, err, JQRuntime)
			if !strings.Contains(je.Msg, "string repetition") {
				t.Errorf("message %q", je.Msg)
			}
		})
	}
}

func TestJQRuntimeError(t *testing.T) {
	for _, tc := range []struct{ src, msg string }{
		{`.[0].title[]`, "cannot iterate over"},
		{`.[0].title - 1`, "cannot subtract"},
		{`.[0].number | ltrimstr("a")`, "cannot be applied"},
		{`error("custom")`, "custom"},
		{`.[] | error(tostring)`, "Found a bug"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			_, err := compileJQ(t, tc.src).Run(t.Context(), decodeJQ(t, jqPulls), JQLimits{})
			je := asJQError(t, err, JQRuntime)
			if !strings.Contains(je.Msg, tc.msg) {
				t.Errorf("message %q, want %q in it", je.Msg, tc.msg)
			}
		})
	}
}

func TestJQRuntimeErrorIsClipped(t *testing.T) {
	doc := strings.Repeat("y", 100000)
	_, err := compileJQ(t, `error(.)`).Run(t.Context(), doc, JQLimits{})
	je := asJQError(t, err, JQRuntime)
	if len(je.Msg) > maxJQErrorBytes+len("…") {
		t.Errorf("message is %d bytes", len(je.Msg))
	}
}

// bigJQList is n GitHub-like objects, decoded as invoke decodes them.
func bigJQList(t testing.TB, n int) any {
	t.Helper()
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"number":%d,"title":"pull %d","state":"open","user":{"login":"u%d"}}`, i, i, i%17)
	}
	b.WriteByte(']')
	return decodeJQ(t, b.String())
}

func TestJQTimeoutStopsCPUBoundFilter(t *testing.T) {
	doc := bigJQList(t, 3000)
	// 3000³ comparisons: hours of work, yielding nothing until the end.
	q := compileJQ(t, `[.[] as $a | .[] as $b | .[] | select(.number == $a.number + $b.number + 1e9)] | length`)
	start := time.Now()
	_, err := q.Run(t.Context(), doc, JQLimits{Timeout: 50 * time.Millisecond})
	took := time.Since(start)
	je := asJQError(t, err, JQTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not wrap context.DeadlineExceeded", err)
	}
	if !strings.Contains(je.Msg, "50ms") {
		t.Errorf("message %q does not name the limit", je.Msg)
	}
	// Generous for a loaded 2-core machine; without the deadline it runs for hours.
	if took > 20*time.Second {
		t.Errorf("stopped after %v", took)
	}
}

func TestJQCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := compileJQ(t, `[.[] as $a | .[] | $a] | length`).Run(ctx, bigJQList(t, 100), JQLimits{})
	asJQError(t, err, JQTimeout)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%v does not wrap context.Canceled", err)
	}
}

func TestJQTooLarge(t *testing.T) {
	doc := bigJQList(t, 2000)
	for _, tc := range []struct {
		name, src string
		lim       JQLimits
		msg       string
	}{
		// 4 million outputs; stopped at the 10,001st.
		{"outputs", `.[] as $a | .[] | [$a.number, .number]`, JQLimits{}, "more than 10000 values"},
		{"small output cap", `.[]`, JQLimits{MaxOutputs: 5}, "more than 5 values"},
		{"bytes of many outputs", `.[] as $a | .[] | $a.title`, JQLimits{MaxOutputs: math.MaxInt, MaxBytes: 1 << 20}, "over 1048576 bytes"},
		{"bytes of one output", `[.[:400][] as $a | .[:400][] | [$a, .]]`, JQLimits{MaxBytes: 1 << 20, Timeout: time.Minute}, "over 1048576 bytes"},
		// 2^40 copies of the document by reference: built in 80 steps, never walked whole.
		{"shared subtrees", strings.Repeat("[., .] | ", 40) + ".", JQLimits{}, "over 8388608 bytes"},
		// Each deep operation first checks its input's size, so none of these
		// walks or allocates the 2^40 copies in one step.
		{"shared subtrees to json", strings.Repeat("[., .] | ", 40) + "tojson | length", JQLimits{}, "grew past 64 MiB"},
		{"shared subtrees compared", strings.Repeat("{a: ., b: .} | ", 40) + ". == .", JQLimits{}, "grew past 64 MiB"},
		{"shared subtrees interpolated", strings.Repeat("[., .] | ", 40) + `"\(.)" | length`, JQLimits{}, "grew past 64 MiB"},
		{"shared subtrees formatted", strings.Repeat("[., .] | ", 40) + `@json | length`, JQLimits{}, "grew past 64 MiB"},
		{"shared subtrees sorted by", `[.[] | ` + strings.Repeat("[., .] | ", 40) + `.] | sort_by(.) | length`, JQLimits{}, "grew past 64 MiB"},
		{"shared subtrees merged", strings.Repeat("{a: ., b: .} | ", 40) + `. * . | length`, JQLimits{}, "grew past 64 MiB"},
		{"doubled strings", `tojson | ` + strings.Repeat(". + . | ", 40) + `length`, JQLimits{}, "grew past 64 MiB"},
		{"flattened", strings.Repeat("[., .] | ", 40) + `flatten | length`, JQLimits{}, "grew past 64 MiB"},
		{"identity over cap", `.`, JQLimits{MaxBytes: 1000}, "over 1000 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The caps, not the clock, must stop these: a loaded machine
			// must not turn them into timeouts.
			if tc.lim.Timeout == 0 {
				tc.lim.Timeout = time.Minute
			}
			_, err := compileJQ(t, tc.src).Run(t.Context(), doc, tc.lim)
			je := asJQError(t, err, JQTooLarge)
			if !strings.Contains(je.Msg, tc.msg) {
				t.Errorf("message %q, want %q in it", je.Msg, tc.msg)
			}
		})
	}
}

// TestJQErrorOfSharedSubtreesIsPreviewed: error(v) carries v, which gojq
// would print whole, 2^40 copies of the document here.
func TestJQErrorOfSharedSubtreesIsPreviewed(t *testing.T) {
	_, err := compileJQ(t, strings.Repeat("[., .] | ", 40)+`error(.)`).Run(t.Context(), decodeJQ(t, jqPulls), JQLimits{})
	je := asJQError(t, err, JQRuntime)
	if !strings.HasPrefix(je.Msg, "error: [[[[") || len(je.Msg) > 100 {
		t.Errorf("message %q", je.Msg)
	}
}

// TestJQMaxBytesIsExact checks the cap against the JSON the result encodes to.
func TestJQMaxBytesIsExact(t *testing.T) {
	doc := decodeJQ(t, jqPulls)
	for _, src := range []string{`.`, `.[] | .title`, `.[0]`, `[.[] | .number]`, `empty`, `"<é\u2028\n\u0001>"`, `.[0].number / 7`, `[1e-7, 1e21, 123456789012345678901234567890]`} {
		q := compileJQ(t, src)
		v, err := q.Run(t.Context(), doc, JQLimits{})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		n := len(b)
		if _, err := q.Run(t.Context(), doc, JQLimits{MaxBytes: n}); err != nil {
			t.Errorf("%s: %d bytes refused at a cap of %d: %v", src, n, n, err)
		}
		if _, err := q.Run(t.Context(), doc, JQLimits{MaxBytes: n - 1}); err == nil {
			t.Errorf("%s: %d bytes accepted at a cap of %d", src, n, n-1)
		}
	}
}

func TestJQNumbersExact(t *testing.T) {
	doc := decodeJQ(t, `{"n": 9007199254740993, "big": 123456789012345678901234567890, "f": 0.1, "neg": -9007199254740993}`)
	for _, tc := range []struct{ src, want string }{
		{`.n`, `9007199254740993`},
		{`.n + 0`, `9007199254740993`},
		{`.n - 1`, `9007199254740992`},
		{`.neg`, `-9007199254740993`},
		{`.big`, `123456789012345678901234567890`},
		{`.big + 1`, `123456789012345678901234567891`},
		{`.f`, `0.1`},
		{`[.n, .neg] | sort`, `[-9007199254740993,9007199254740993]`},
		{`.n == 9007199254740992`, `false`},
		{`{n}`, `{"n":9007199254740993}`},
		{`.n | tostring`, `"9007199254740993"`},
	} {
		t.Run(tc.src, func(t *testing.T) {
			got, err := compileJQ(t, tc.src).Run(t.Context(), doc, JQLimits{})
			if err != nil {
				t.Fatal(err)
			}
			if g := encodeJQ(t, got); g != tc.want {
				t.Errorf("got %s, want %s", g, tc.want)
			}
		})
	}
}

// TestJQConcurrentRunsLeaveTheDocumentAlone runs filters that copy and sort
// on one shared document from several goroutines, as stored answers are read.
func TestJQConcurrentRunsLeaveTheDocumentAlone(t *testing.T) {
	doc := decodeJQ(t, jqPulls)
	before := encodeJQ(t, doc)
	var qs []*JQ
	for _, src := range []string{
		`sort_by(.title)`, `map(del(.user)) | reverse`, `[.[] | .labels | sort_by(.name)]`,
		`[.[] | to_entries | sort_by(.key) | from_entries | .labels | reverse]`,
		`map(.user * {login: "x"})`, `map_values(.number)`, `del(.[0].user.login, .[1])`,
		`map(del(.labels[0]))`, `map_values(select(.draft))`, `.[0] | map_values(empty)`,
	} {
		qs = append(qs, compileJQ(t, src))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 8 {
		for _, q := range qs {
			wg.Go(func() {
				if _, err := q.Run(context.Background(), doc, JQLimits{}); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if after := encodeJQ(t, doc); after != before {
		t.Errorf("the document changed:\n%s\n%s", before, after)
	}
}

func TestJQString(t *testing.T) {
	q := compileJQ(t, "  .a * .b \n")
	if got, want := q.String(), ".a * .b"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestJQSubsetNote(t *testing.T) {
	if n := len(JQSubsetNote); n > 400 {
		t.Errorf("JQSubsetNote is %d bytes", n)
	}
	// The example in the note is itself accepted.
	i := strings.LastIndex(JQSubsetNote, "Example: ")
	compileJQ(t, JQSubsetNote[i+len("Example: "):])
}

func ExampleCompileJQ() {
	q, err := CompileJQ(`[.[] | select(.state == "open") | {number, user: .user.login}]`)
	if err != nil {
		panic(err)
	}
	d := json.NewDecoder(strings.NewReader(`[{"number": 1, "state": "open", "user": {"login": "ada"}},
		{"number": 2, "state": "closed", "user": {"login": "bob"}}]`))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		panic(err)
	}
	v, err := q.Run(context.Background(), doc, JQLimits{})
	fmt.Println(v, err)

	_, err = CompileJQ(`.title = "x"`)
	fmt.Println(err)
	// Output:
	// [map[number:1 user:ada]] <nil>
	// jq: the = operator is not allowed: assignment and update are outside the read-only subset; build a new object instead
}

// Filters run a few at a time; one that finds every slot taken waits within
// its own deadline, then says why it did not run.
func TestJQRunsAreBoundedInNumber(t *testing.T) {
	q := compileJQ(t, `length`)
	slots := NewJQSlots(2)
	var releases []func()
	for _, who := range []string{"ada", "bob"} {
		release, err := slots.Acquire(t.Context(), who)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	carol := t.Context()
	_, err := q.Run(carol, []any{1, 2}, JQLimits{Timeout: 20 * time.Millisecond, Slots: slots, Owner: "carol"})
	for _, release := range releases {
		release()
	}
	je := asJQError(t, err, JQTimeout)
	if !strings.Contains(je.Msg, "running at once") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %q", je.Msg)
	}
	got, err := q.Run(carol, []any{1, 2}, JQLimits{Slots: slots, Owner: "carol"})
	if err != nil || fmt.Sprint(got) != "2" {
		t.Errorf("with a free slot: %v, %v", got, err)
	}
}
