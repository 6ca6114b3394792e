package answer

import (
	"strconv"
	"testing"
)

// BenchmarkPreviewGitHubPage previews a 30-item GitHub list-pulls page
// (≈663 KB) at the default 16 KiB budget, decoding included, as an answer
// over budget costs.
func BenchmarkPreviewGitHubPage(b *testing.B) {
	page := pullRequestPage(b, 30)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		v, err := DecodeJSON(page)
		if err != nil {
			b.Fatal(err)
		}
		if out, sh := PreviewJSON(v, len(page), 16*1024); len(out) > 16*1024 || sh.Shown == 0 {
			b.Fatalf("preview of %d bytes showing %d items", len(out), sh.Shown)
		}
	}
}

// BenchmarkPreviewJSON is the preview alone, the body decoded once.
func BenchmarkPreviewJSON(b *testing.B) {
	page := pullRequestPage(b, 30)
	v, err := DecodeJSON(page)
	if err != nil {
		b.Fatal(err)
	}
	for _, budget := range []int{1024, 16 * 1024, 48_000} {
		b.Run("budget="+strconv.Itoa(budget), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				PreviewJSON(v, len(page), budget)
			}
		})
	}
}
