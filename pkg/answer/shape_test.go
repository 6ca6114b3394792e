package answer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// pullRequest loads GitHub's pull-request example object (testdata).
func pullRequest(t testing.TB) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "github-pull-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := DecodeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

// pullRequestPage is a GitHub list-pulls page: n copies of the example
// with their own ids, numbers and titles, encoded compactly.
func pullRequestPage(t testing.TB, n int) []byte {
	t.Helper()
	raw, err := EncodeJSON(pullRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	page := make([]any, n)
	for i := range page {
		v, err := DecodeJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		pr := v.(map[string]any)
		pr["id"] = json.Number(strconv.Itoa(1000 + i))
		pr["number"] = json.Number(strconv.Itoa(1347 + i))
		pr["title"] = fmt.Sprintf("Amazing new feature #%d", i)
		page[i] = pr
	}
	b, err := EncodeJSON(page)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t testing.TB, s string) any {
	t.Helper()
	v, err := DecodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("decode %.80q: %v", s, err)
	}
	return v
}

// checkPreview asserts what every preview promises: valid JSON within the
// budget, whose re-encoding is itself (so its size is what the answer has).
func checkPreview(t testing.TB, out json.RawMessage, budget int) any {
	t.Helper()
	if len(out) > max(budget, MinPreviewBudget) {
		t.Fatalf("preview of %d bytes over budget %d", len(out), budget)
	}
	if !json.Valid(out) || !utf8.Valid(out) {
		t.Fatalf("preview is not valid JSON: %.200s", out)
	}
	v, err := DecodeJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	again, err := EncodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, out) {
		t.Fatalf("preview re-encodes differently:\n got %.300s\nwant %.300s", again, out)
	}
	return v
}

func TestDecodeJSON(t *testing.T) {
	for _, tc := range []struct {
		in     string
		wantOK bool
	}{
		{`{"a":1}`, true},
		{" [1,2] \n", true},
		{`9007199254740993`, true},
		{`{"a":1} {"b":2}`, false},
		{`[1]]`, false},
		{`[1] x`, false},
		{``, false},
		{`{"a":`, false},
	} {
		_, err := DecodeJSON([]byte(tc.in))
		if got := err == nil; got != tc.wantOK {
			t.Errorf("DecodeJSON(%q) err = %v, want ok %v", tc.in, err, tc.wantOK)
		}
	}
	v := decode(t, `{"n":9007199254740993}`)
	if got := v.(map[string]any)["n"]; got != json.Number("9007199254740993") {
		t.Errorf("number = %#v, want json.Number 9007199254740993", got)
	}
}

func TestEncodeJSONNoHTMLEscaping(t *testing.T) {
	got, err := EncodeJSON(map[string]any{"q": "a<b>&c"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"q":"a<b>&c"}`; string(got) != want {
		t.Errorf("EncodeJSON = %s, want %s", got, want)
	}
}

func TestShapeMainArray(t *testing.T) {
	items := `[{"id":1},{"id":2},{"id":3}]`
	for _, tc := range []struct {
		name, body string
		wantPath   string
		wantLen    int
		wantOK     bool
	}{
		{"github list", items, ".", 3, true},
		{"github search", `{"total_count":3,"incomplete_results":false,"items":` + items + `}`, ".items", 3, true},
		{"stripe list", `{"object":"list","data":` + items + `,"has_more":true,"url":"/v1/charges"}`, ".data", 3, true},
		{"stripe empty list", `{"object":"list","data":[],"has_more":false,"url":"/v1/charges"}`, ".data", 0, true},
		{"slack", `{"ok":true,"members":` + items + `,"cache_ts":1498777272,"response_metadata":{"next_cursor":"dXNlcjpVMEc5V0ZYTlo="}}`, ".members", 3, true},
		{"kubernetes list", `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":` + items + `}`, ".items", 3, true},
		{"one level down", `{"status":"ok","response":{"total":3,"users":` + items + `}}`, ".response.users", 3, true},
		{"longest of two", `{"warnings":["w"],"results":` + items + `}`, ".results", 3, true},
		{"non-empty one level down beats empty on top", `{"errors":[],"response":{"users":` + items + `}}`, ".response.users", 3, true},
		{"key that is not an identifier", `{"the list":` + items + `}`, `.["the list"]`, 3, true},
		{"bare object", `{"id":1,"name":"x"}`, "", 0, false},
		{"scalar", `"text"`, "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, got, ok := MainArray(decode(t, tc.body))
			if ok != tc.wantOK || path != tc.wantPath || len(got) != tc.wantLen {
				t.Errorf("MainArray = %q, %d items, %v; want %q, %d, %v", path, len(got), ok, tc.wantPath, tc.wantLen, tc.wantOK)
			}
		})
	}
	t.Run("github pull request is a resource, not a list", func(t *testing.T) {
		// It holds arrays (labels, assignees) but 48 fields: no envelope.
		if path, _, ok := MainArray(pullRequest(t)); ok {
			t.Errorf("MainArray(pull request) = %q, want none", path)
		}
	})
}

func TestShapePreviewGitHubPage(t *testing.T) {
	page := pullRequestPage(t, 30)
	if len(page) < 600_000 {
		t.Fatalf("page of %d bytes, want about 670 KB", len(page))
	}
	v, err := DecodeJSON(page)
	if err != nil {
		t.Fatal(err)
	}
	prFields := slices.Sorted(maps.Keys(pullRequest(t)))
	shown := map[int]int{}
	for _, budget := range []int{1024, 4096, 16 * 1024, 48_000} {
		t.Run(strconv.Itoa(budget), func(t *testing.T) {
			out, sh := PreviewJSON(v, len(page), budget)
			got := checkPreview(t, out, budget).([]any)
			t.Logf("budget %d: %d bytes, %d of %d items", budget, len(out), sh.Shown, sh.Items)
			if sh.Reason != ReasonOverBudget || sh.Bytes != len(page) || sh.Items != 30 || sh.Path != "." {
				t.Errorf("shaped = %+v", sh)
			}
			if want := prFields[:min(maxItemFields, len(prFields))]; !slices.Equal(sh.ItemFields, want) {
				t.Errorf("itemFields = %v, want the first %d of %v", sh.ItemFields, len(want), prFields)
			}
			if sh.Shown < 1 || len(got) != sh.Shown+1 {
				t.Fatalf("shown %d, preview has %d elements", sh.Shown, len(got))
			}
			if want := fmt.Sprintf("…[+%d more items]", 30-sh.Shown); got[len(got)-1] != want {
				t.Errorf("last element %v, want %q", got[len(got)-1], want)
			}
			if budget >= 4096 {
				// Each shown item has every top-level field, its own id.
				for i, it := range got[:sh.Shown] {
					pr := it.(map[string]any)
					if keys := slices.Sorted(maps.Keys(pr)); !slices.Equal(keys, prFields) {
						t.Errorf("item %d keys %v, want %v", i, keys, prFields)
					}
					if want := json.Number(strconv.Itoa(1000 + i)); pr["id"] != want {
						t.Errorf("item %d id %v, want %v", i, pr["id"], want)
					}
				}
				// Filled: what is left could not hold another item of this size.
				if free, per := budget-len(out), len(out)/sh.Shown; free > per {
					t.Errorf("%d bytes unused with items of about %d", free, per)
				}
			}
			shown[budget] = sh.Shown
		})
	}
	if shown[48_000] <= shown[16*1024] {
		t.Errorf("shows %d items at 48,000 and %d at 16 KiB, want more at 48,000", shown[48_000], shown[16*1024])
	}
}

func TestShapePreviewSinglePullRequest(t *testing.T) {
	pr := pullRequest(t)
	whole, _ := EncodeJSON(pr)
	for _, budget := range []int{1024, 8192, 16 * 1024} {
		out, sh := PreviewJSON(pr, len(whole), budget)
		got := checkPreview(t, out, budget).(map[string]any)
		if sh.Reason != ReasonOverBudget || sh.Path != "" || sh.Items != 0 {
			t.Errorf("budget %d: shaped = %+v", budget, sh)
		}
		if budget >= 8192 {
			// Deep enough to read the author and the branches.
			user, ok := got["user"].(map[string]any)
			if !ok || user["login"] != "octocat" {
				t.Errorf("budget %d: user = %v, want its login", budget, got["user"])
			}
		}
		if budget == 16*1024 && len(out) < budget*3/4 {
			t.Errorf("budget %d: preview of %d bytes, want the budget filled", budget, len(out))
		}
	}
}

func TestShapePreviewWholeWhenItFits(t *testing.T) {
	for _, body := range []string{`{"b":[1,2,{"c":"<x>"}],"a":null}`, `[]`, `"s"`, `9007199254740993`} {
		v := decode(t, body)
		want, _ := EncodeJSON(v)
		out, sh := PreviewJSON(v, len(body), 1024)
		if !bytes.Equal(out, want) || sh.Reason != "" {
			t.Errorf("PreviewJSON(%s) = %s, %+v; want %s whole", body, out, sh, want)
		}
	}
}

var (
	cutString  = regexp.MustCompile(`…\[\+(\d+) bytes\]$`)
	moreItems  = regexp.MustCompile(`^…\[\+(\d+) more items\]$`)
	moreKeys   = regexp.MustCompile(`^(\d+) more keys( \(.*\))?$`)
	objSummary = regexp.MustCompile(`^object: (\d+) keys( \(.*\))?$`)
)

func TestShapePreviewMarkers(t *testing.T) {
	long := strings.Repeat("é", 30_000) // 60,000 bytes
	manyKeys := map[string]any{}
	for i := range 500 {
		manyKeys[fmt.Sprintf("field%03d", i)] = strconv.Itoa(i) + " is a number"
	}
	deep := any("bottom")
	for range 50 {
		deep = map[string]any{"child": deep, "pad": strings.Repeat("p", 2000)}
	}
	for _, tc := range []struct {
		name  string
		v     any
		check func(t *testing.T, got any)
	}{
		{"cut string", map[string]any{"body": long}, func(t *testing.T, got any) {
			s := got.(map[string]any)["body"].(string)
			m := cutString.FindStringSubmatch(s)
			if m == nil {
				t.Fatalf("no cut marker at the end of %.40q…", s)
			}
			kept := strings.TrimSuffix(s, m[0])
			if left, _ := strconv.Atoi(m[1]); len(kept)+left != len(long) || !strings.HasPrefix(long, kept) {
				t.Errorf("kept %d bytes and says %s left out of %d", len(kept), m[1], len(long))
			}
		}},
		{"array items", map[string]any{"data": manyStrings(2000, 40)}, func(t *testing.T, got any) {
			a := got.(map[string]any)["data"].([]any)
			m := moreItems.FindStringSubmatch(a[len(a)-1].(string))
			if m == nil {
				t.Fatalf("last element %v is no items marker", a[len(a)-1])
			}
			if left, _ := strconv.Atoi(m[1]); left+len(a)-1 != 2000 || len(a) < 100 {
				t.Errorf("shows %d items and says %d more, of 2000", len(a)-1, left)
			}
		}},
		{"too many keys", manyKeys, func(t *testing.T, got any) {
			m := got.(map[string]any)
			note, _ := m["…"].(string)
			sm := moreKeys.FindStringSubmatch(note)
			if sm == nil {
				t.Fatalf("marker key holds %q", note)
			}
			if left, _ := strconv.Atoi(sm[1]); left+len(m)-1 != 500 || len(m) < 50 {
				t.Errorf("shows %d keys and says %d more, of 500", len(m)-1, left)
			}
			if m["field000"] != "0 is a number" {
				t.Errorf("field000 = %v, want the first keys shown", m["field000"])
			}
		}},
		{"deep object", deep, func(t *testing.T, got any) {
			n := 0
			for {
				m := got.(map[string]any)
				if s, ok := m["…"].(string); ok {
					if objSummary.FindStringSubmatch(s) == nil || !strings.Contains(s, "child") {
						t.Errorf("summary %q", s)
					}
					break
				}
				got = m["child"]
				n++
			}
			if n < 2 {
				t.Errorf("summarised at depth %d, want the budget used deeper", n)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := EncodeJSON(tc.v)
			out, sh := PreviewJSON(tc.v, len(b), 8192)
			got := checkPreview(t, out, 8192)
			if sh.Reason != ReasonOverBudget {
				t.Errorf("reason %q", sh.Reason)
			}
			tc.check(t, got)
		})
	}
}

func manyStrings(n, size int) []any {
	a := make([]any, n)
	for i := range a {
		a[i] = fmt.Sprintf("%0*d", size, i)
	}
	return a
}

func TestShapePreviewMarkerKeyTaken(t *testing.T) {
	m := map[string]any{"…": "theirs"}
	for i := range 300 {
		m[fmt.Sprintf("中%03d", i)] = strings.Repeat("v", 50) // after "…" in byte order
	}
	out, _ := PreviewJSON(m, 0, 2048)
	got := checkPreview(t, out, 2048).(map[string]any)
	if got["…"] != "theirs" {
		t.Errorf(`their "…" = %v`, got["…"])
	}
	if s, _ := got["…1"].(string); moreKeys.FindStringSubmatch(s) == nil {
		t.Errorf(`marker under "…1" = %q`, got["…1"])
	}
}

func TestShapePreviewNumbersStayExact(t *testing.T) {
	body := `{"id":9007199254740993,"f":1.000000000000000000001,"e":-12E+400,"pad":"` + strings.Repeat("x", 5000) + `"}`
	v := decode(t, body)
	out, _ := PreviewJSON(v, len(body), 1024)
	checkPreview(t, out, 1024)
	for _, want := range []string{`"id":9007199254740993`, `"f":1.000000000000000000001`, `"e":-12E+400`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("preview %s lacks %s", out, want)
		}
	}
}

func TestShapePreviewTinyBudgets(t *testing.T) {
	huge := map[string]any{}
	for i := range 5000 {
		huge[strings.Repeat("k", 100)+strconv.Itoa(i)] = manyStrings(3, 500)
	}
	longKeys := map[string]any{}
	for i := range 20 {
		longKeys[strings.Repeat("ключ", 400)+strconv.Itoa(i)] = i
	}
	envelope := map[string]any{"items": manyStrings(100, 3000)}
	for i := range 15 {
		envelope[strings.Repeat("m", 120)+strconv.Itoa(i)] = strings.Repeat("\x01", 3000)
	}
	var deep any = []any{}
	for range 10_000 {
		deep = []any{deep}
	}
	var deepObj any = "x"
	for range 10_000 {
		deepObj = map[string]any{"a": deepObj}
	}
	cases := map[string]any{
		"5000 keys":           huge,
		"long keys":           longKeys,
		"envelope":            envelope,
		"control characters":  strings.Repeat("\x00\u2028\"", 100_000),
		"invalid utf-8":       strings.Repeat("\xff", 100_000),
		"long number":         json.Number("1" + strings.Repeat("0", 5000)),
		"10,000 levels":       deep,
		"10,000 objects deep": deepObj,
		"array of arrays":     []any{manyStrings(3000, 10), manyStrings(3000, 10)},
		"wide array of maps":  []any{huge, huge},
	}
	for name, v := range cases {
		for _, budget := range []int{0, 256, 400, 1024, 1500, 4096, 48_000} {
			t.Run(fmt.Sprintf("%s/%d", name, budget), func(t *testing.T) {
				out, sh := PreviewJSON(v, 1<<20, budget)
				checkPreview(t, out, budget)
				if sh.Reason != ReasonOverBudget {
					t.Errorf("reason %q for a body over budget", sh.Reason)
				}
			})
		}
	}
}

func TestShapePreviewText(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        []byte
		budget    int
		wantWhole bool
	}{
		{"fits", []byte("hello <world>"), 1024, true},
		{"two-byte runes", bytes.Repeat([]byte("é"), 5000), 1024, false},
		{"four-byte runes", bytes.Repeat([]byte("😀"), 5000), 2000, false},
		{"escapes", bytes.Repeat([]byte("\"\n\x01\u2028"), 2000), 1024, false},
		{"invalid utf-8", append(bytes.Repeat([]byte("a\xffé"), 3000), 0xe2, 0x82), 1500, false},
		{"invalid utf-8 fits", []byte("a\xff\xfeb"), 1024, true},
		{"budget under the minimum", bytes.Repeat([]byte("x"), 5000), 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, sh := PreviewText(tc.in, tc.budget)
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8: %q", got)
			}
			enc, _ := EncodeJSON(got)
			if len(enc) > max(tc.budget, MinPreviewBudget) {
				t.Errorf("encoded %d bytes over budget %d", len(enc), tc.budget)
			}
			if sh.Bytes != len(tc.in) {
				t.Errorf("bytes %d, want %d", sh.Bytes, len(tc.in))
			}
			replaced := strings.ToValidUTF8(string(tc.in), "\uFFFD")
			if tc.wantWhole {
				if got != validText(tc.in) || sh.Reason != "" {
					t.Errorf("got %q %+v, want it whole", got, sh)
				}
				return
			}
			m := cutString.FindStringSubmatch(got)
			if m == nil || sh.Reason != ReasonOverBudget {
				t.Fatalf("no cut marker: %q… %+v", got[max(0, len(got)-40):], sh)
			}
			kept := strings.TrimSuffix(got, m[0])
			left, _ := strconv.Atoi(m[1])
			// The kept head is the input's own head, invalid bytes replaced.
			src := string(tc.in[:len(tc.in)-left])
			if kept != validText([]byte(src)) || !strings.HasPrefix(replaced, strings.ToValidUTF8(src, "\uFFFD")) {
				t.Errorf("head %.40q… is not the first %d bytes of the input", kept, len(tc.in)-left)
			}
			if len(enc) < max(tc.budget, MinPreviewBudget)-20 {
				t.Errorf("encoded %d bytes, want the budget %d filled", len(enc), tc.budget)
			}
		})
	}
}

func ExamplePreviewJSON() {
	// A Stripe list page of 40 charges, 13 KB, for a 1 KiB budget.
	var b strings.Builder
	b.WriteString(`{"object":"list","has_more":true,"url":"/v1/charges","data":[`)
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"ch_%d","amount":%d,"metadata":{"order":"%d"},"description":"%s"}`,
			i, 9007199254740993+i, i, strings.Repeat("lorem ipsum ", 20))
	}
	b.WriteString("]}")
	v, err := DecodeJSON([]byte(b.String()))
	if err != nil {
		panic(err)
	}
	out, sh := PreviewJSON(v, b.Len(), 1024)
	summary, _ := EncodeJSON(sh)
	fmt.Println(string(summary))
	preview, _ := DecodeJSON(out)
	data := preview.(map[string]any)["data"].([]any)
	first, _ := EncodeJSON(data[0])
	fmt.Println(len(out) <= 1024, string(first))
	fmt.Println(data[len(data)-1])
	// Output:
	// {"reason":"over_budget","bytes":13002,"items":40,"shown":5,"itemFields":["amount","description","id","metadata"],"path":".data"}
	// true {"amount":9007199254740993,"description":"lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lore…[+176 bytes]","id":"ch_0","metadata":{"order":"0"}}
	// …[+35 more items]
}

func TestShapePreviewValuesNotFromDecodeJSON(t *testing.T) {
	type row struct {
		ID   int     `json:"id"`
		Note string  `json:"note"`
		F    float64 `json:"f"`
	}
	rows := make([]row, 300)
	for i := range rows {
		rows[i] = row{ID: i, Note: strings.Repeat("n", 100), F: 0.1}
	}
	for _, v := range []any{rows, map[string]any{"data": rows, "f": 1.5}, 1.5} {
		out, _ := PreviewJSON(v, 0, 2048)
		checkPreview(t, out, 2048)
	}
}
