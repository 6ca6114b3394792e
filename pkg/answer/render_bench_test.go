package answer

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkShapeGitHubPage670KB is the latency an answer over budget adds:
// a stored 30-item GitHub list-pulls page (≈670 KB) decoded and fitted,
// with the envelope around it, into the default 16 KiB answer, as invoke
// and read_response do it (NewView, then Fit, which renders previews until
// the whole answer fits). The target is a median of 20 ms or less;
// ms-median reports it, previews the renders Fit made per answer.
func BenchmarkShapeGitHubPage670KB(b *testing.B) {
	page := pullRequestPage(b, 30)
	a := &Answer{Endpoint: "github.pulls/list", StatusCode: 200, ContentType: "application/json; charset=utf-8", Body: page}
	opt := RenderOptions{Budget: DefaultResultBytes, ResponseID: "r_AAAAAAAAAAAAAAAAAAAAAA"}
	ctx := context.Background()
	var took []time.Duration
	renders := 0
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		w, err := NewView(ctx, a, opt)
		if err != nil {
			b.Fatal(err)
		}
		env := &testEnvelope{Status: 200, Headers: map[string]string{"content-type": a.ContentType}, ID: opt.ResponseID}
		out, r := w.Fit(DefaultResultBytes, func(r *Reply) []byte {
			renders++
			return env.encode(r)
		})
		took = append(took, time.Since(start))
		if r.Shaped == nil || r.Shaped.Items != 30 || len(out) > DefaultResultBytes {
			b.Fatalf("%d bytes, shaped %+v", len(out), r.Shaped)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(renders-len(took))/float64(len(took)), "previews")
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(len(page))/1000, "page-KB")
}
