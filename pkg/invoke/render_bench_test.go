package invoke

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkShapeGitHubPage670KB is the latency an answer over budget adds:
// Render of a stored 30-item GitHub list-pulls page (≈670 KB) at the
// default 16 KiB budget, decoding included. The target is a median
// of 20 ms or less; ms-median reports it.
func BenchmarkShapeGitHubPage670KB(b *testing.B) {
	page := pullRequestPage(b, 30)
	a := &Answer{Endpoint: "github.pulls/list", StatusCode: 200, ContentType: "application/json; charset=utf-8", Body: page}
	opt := RenderOptions{Budget: DefaultResultBytes, ResponseID: "r_AAAAAAAAAAAAAAAAAAAAAA"}
	ctx := context.Background()
	var took []time.Duration
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		r, err := Render(ctx, a, opt)
		took = append(took, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if r.Shaped == nil || r.Shaped.Items != 30 {
			b.Fatalf("shaped %+v", r.Shaped)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(len(page))/1000, "page-KB")
}
