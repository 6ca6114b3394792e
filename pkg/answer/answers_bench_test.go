package answer

import (
	"context"
	"testing"
)

// benchPage is a GitHub-shaped list of pull requests of at least 670 KB, the size of a
// page of 30 real ones.
func benchPage() []byte {
	for n := 30; ; n++ {
		if b := githubPage(n, 42); len(b) >= 670_000 {
			return b
		}
	}
}

// benchAnswerStore measures Put and Get of one 670 KB answer in s and reports the bytes
// it counts per answer stored (held/op) against the body's size (stored-ratio).
func benchAnswerStore(b *testing.B, s AnswerStore, held func() int64) {
	ctx := context.Background()
	body := benchPage()
	a := sampleAnswer(body)
	b.Run("Put", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		before := held()
		for b.Loop() {
			if _, err := s.Put(ctx, "bench", a); err != nil {
				b.Fatal(err)
			}
		}
		if n := b.N; n > 0 {
			per := float64(held()-before) / float64(n)
			if per > 0 { // else the store evicted as it went; see the Get run's figure
				b.ReportMetric(per, "held/op")
				b.ReportMetric(per/float64(len(body)), "stored-ratio")
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		id, err := s.Put(ctx, "bench-get", a)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			got, err := s.Get(ctx, "bench-get", id)
			if err != nil {
				b.Fatal(err)
			}
			if len(got.Body) != len(body) {
				b.Fatalf("got %d bytes, want %d", len(got.Body), len(body))
			}
		}
	})
}

func BenchmarkAnswerMemory(b *testing.B) {
	s := NewMemoryAnswers(MemoryAnswersOptions{MaxBytes: 1 << 30})
	benchAnswerStore(b, s, s.Bytes)
}
