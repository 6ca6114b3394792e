package mcpserver

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzBoundHeaders: whatever headers an upstream sends, an answer repeats
// few of them, each cut short, within maxHeaderBytes, and says how many it
// left out.
func FuzzBoundHeaders(f *testing.F) {
	f.Add("location", strings.Repeat("l", 1<<20), 3, 20_000)
	f.Add("x-ratelimit-foo", "v", 40, 1999)
	f.Add("content-type", "application/json; \xff\xfe", 1, 1)
	f.Fuzz(func(t *testing.T, name, value string, size, n int) {
		size, n = int(uint(size)%(256<<10)), int(uint(n)%2000)
		h := map[string]string{name: value, "content-type": strings.Repeat("c", size)}
		for i := range n {
			h["x-ratelimit-h"+strings.Repeat("x", i%70)+string(rune('a'+i%26))+strconv.Itoa(i)] = strings.Repeat("v", i%600)
		}
		out := boundHeaders(h, maxHeaderBytes)
		omitted := out["x-specgate-omitted-headers"]
		total := 0
		for k, v := range out {
			if k == "x-specgate-omitted-headers" {
				continue
			}
			if _, sent := h[k]; !sent || len(k) > 64 || len(v) > maxHeaderValue+32 {
				t.Fatalf("header %q: %d bytes", k, len(v))
			}
			total += len(k) + len(v)
		}
		if len(out) > maxHeaders+1 || total > maxHeaderBytes {
			t.Fatalf("%d headers, %d bytes", len(out), total)
		}
		shown := len(out)
		if omitted != "" {
			shown--
		}
		if left := len(h) - shown; left > 0 && omitted != strconv.Itoa(left) {
			t.Fatalf("%d left out, omitted says %q", left, omitted)
		}
		if b, err := json.Marshal(out); err != nil || !utf8.Valid(b) {
			t.Fatalf("headers do not encode as valid UTF-8: %v", err)
		}
	})
}
