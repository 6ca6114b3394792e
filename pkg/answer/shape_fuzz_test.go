package answer

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzPreviewJSON previews any body DecodeJSON accepts under any budget:
// the preview is valid JSON of at most max(budget, MinPreviewBudget)
// bytes that re-encodes to itself, and a whole preview is the body's own
// encoding.
func FuzzPreviewJSON(f *testing.F) {
	for _, seed := range []string{
		`{"object":"list","data":[{"id":1,"name":"a"},{"id":2}],"has_more":true}`,
		`[1,"two",{"three":[3,3,3]},null,true,9007199254740993]`,
		`{"ok":true,"members":[{"profile":{"real_name":"x"}}],"response_metadata":{"next_cursor":""}}`,
		`{"response":{"users":[{"a":"` + strings.Repeat("é", 600) + `"}]}}`,
		`"` + strings.Repeat(`\u0000\u2028"<>`, 400) + `"`,
		`{"…":1,"…1":[` + strings.Repeat(`{"k":"v"},`, 200) + `{}]}`,
		strings.Repeat("[", 500) + strings.Repeat("]", 500),
		`-1.5e+300`,
	} {
		f.Add([]byte(seed), 1024)
		f.Add([]byte(seed), 0)
	}
	f.Fuzz(func(t *testing.T, body []byte, budget int) {
		v, err := DecodeJSON(body)
		if err != nil {
			return
		}
		budget %= 64 * 1024 // beyond the largest budget nothing new happens
		out, sh := PreviewJSON(v, len(body), budget)
		if limit := max(budget, MinPreviewBudget); len(out) > limit {
			t.Fatalf("preview of %d bytes over %d", len(out), limit)
		}
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("invalid preview %q", out)
		}
		back, err := DecodeJSON(out)
		if err != nil {
			t.Fatal(err)
		}
		again, err := EncodeJSON(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("preview re-encodes differently:\n%q\n%q", out, again)
		}
		if sh.Reason == "" {
			whole, err := EncodeJSON(v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(whole, out) {
				t.Fatalf("whole preview %q differs from the body %q", out, whole)
			}
		}
		if sh.Shown > sh.Items {
			t.Fatalf("shows %d of %d items", sh.Shown, sh.Items)
		}
	})
}

// FuzzPreviewText cuts any bytes under any budget: valid UTF-8 whose JSON
// string fits, the head of the input with invalid bytes replaced.
func FuzzPreviewText(f *testing.F) {
	for _, seed := range []string{"hello", strings.Repeat("é", 2000), "a\xff\xfe\xe2\x82", strings.Repeat("\x00\"\n", 1000)} {
		f.Add([]byte(seed), 1024)
	}
	f.Fuzz(func(t *testing.T, body []byte, budget int) {
		budget %= 64 * 1024
		got, sh := PreviewText(body, budget)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 %q", got)
		}
		enc, err := EncodeJSON(got)
		if err != nil {
			t.Fatal(err)
		}
		if limit := max(budget, MinPreviewBudget); len(enc) > limit {
			t.Fatalf("encoded %d bytes over %d", len(enc), limit)
		}
		head := got
		if sh.Reason != "" {
			m := cutString.FindStringIndex(got)
			if m == nil {
				t.Fatalf("cut without marker: %q", got)
			}
			head = got[:m[0]]
		}
		if !strings.HasPrefix(validText(body), head) {
			t.Fatalf("%q is not the head of the input", head)
		}
	})
}
