package invoke

import (
	"testing"
)

func BenchmarkPrepare(b *testing.B) {
	s := parseSpec(b, "pets", petDoc, "http://api.example.test/api/v1")
	get := endpoint(b, s, "getPet")
	put := endpoint(b, s, "updatePet")
	c := New(Options{})
	ctx := b.Context()
	b.Run("query+header+cookie", func(b *testing.B) {
		args := Args{Parameters: map[string]any{"petId": "p1", "verbose": true, "limit": 5, "X-Trace": "abc", "session": "s"}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Prepare(ctx, get, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json body", func(b *testing.B) {
		args := Args{Parameters: map[string]any{"petId": "p1"}, RequestBody: map[string]any{"name": "Rex", "age": 3, "tags": []any{"a", "b"}}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Prepare(ctx, put, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("form body", func(b *testing.B) {
		args := Args{Parameters: map[string]any{"petId": "p1"}, RequestBody: map[string]any{"name": "Rex", "age": 3, "tags": []any{"a", "b"}}, ContentType: "application/x-www-form-urlencoded"}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Prepare(ctx, put, args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
