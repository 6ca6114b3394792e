package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/answer/answertest"
)

// redisHarness opens stores on one redis-server, each under its own prefix.
func redisHarness(t *testing.T) answertest.Harness {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	var n atomic.Int64
	// 8 goroutines of the Concurrent test, each with one answer of at most 3 KB in flight
	return answertest.Harness{Name: "redis", Overshoot: 8 << 12, Open: func(t *testing.T, maxBytes int64, ttl time.Duration, now func() time.Time) (answer.AnswerStore, func() int64) {
		s := NewAnswers(NewClient(c, fmt.Sprintf("t%d:", n.Add(1))), AnswersOptions{MaxBytes: maxBytes, TTL: ttl, Now: now})
		return s, func() int64 {
			b, err := s.Bytes(t.Context())
			if err != nil {
				t.Error(err)
			}
			return b
		}
	}}
}

func TestAnswerStoreRedis(t *testing.T) {
	answertest.RunConformance(t, redisHarness(t))
}

func newTestRedis(t testing.TB) *redis.Client {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestAnswerRedisKeys(t *testing.T) {
	c := newTestRedis(t)
	const ttl = 5 * time.Minute
	s := NewAnswers(NewClient(c, ""), AnswersOptions{TTL: ttl})
	principal := "sub|alice@example.com org:{acme}"
	body := answertest.GithubPage(30, 9)
	id := answertest.MustPut(t, s, principal, answertest.Sample(body))
	if _, err := s.Get(t.Context(), principal, id); err != nil {
		t.Fatal(err)
	}

	keys, err := c.Keys(t.Context(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	var answerKey string
	for _, k := range keys {
		if !strings.HasPrefix(k, DefaultKeyPrefix+"{ans:") {
			t.Errorf("key %q lacks the prefix", k)
		}
		if strings.Contains(k, "alice") || strings.Contains(k, "acme") {
			t.Errorf("key %q shows the principal", k)
		}
		tag := k[strings.Index(k, "{") : strings.Index(k, "}")+1]
		tags[tag] = true
		if strings.HasSuffix(k, id) {
			answerKey = k
		}
		pttl, err := c.PTTL(t.Context(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if pttl <= 0 || pttl > 2*ttl {
			t.Errorf("key %q has TTL %v", k, pttl)
		}
	}
	// one hash tag for the principal's keys, one for the index over principals
	if len(tags) != 2 || !tags["{ans:all}"] {
		t.Errorf("hash tags %v, want the principal's and {ans:all}", tags)
	}
	if answerKey == "" {
		t.Fatalf("no key holds answer %s among %q", id, keys)
	}
	if pttl := c.PTTL(t.Context(), answerKey).Val(); pttl > ttl {
		t.Errorf("the answer lives %v, past its TTL %v", pttl, ttl)
	}
	stored, err := c.StrLen(t.Context(), answerKey).Result()
	if err != nil {
		t.Fatal(err)
	}
	if stored > int64(len(body))/4 {
		t.Errorf("a %d-byte page takes %d bytes in Redis; want it deflated", len(body), stored)
	}
}

func TestAnswerRedisSharedByReplicas(t *testing.T) {
	c := newTestRedis(t)
	one := NewAnswers(NewClient(c, ""), AnswersOptions{})
	two := NewAnswers(NewClient(c, ""), AnswersOptions{})
	body := answertest.GithubPage(3, 4)
	id := answertest.MustPut(t, one, "alice", answertest.Sample(body))
	got, err := two.Get(t.Context(), "alice", id)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Body, body) {
		t.Error("the other replica read another body")
	}
}

func TestAnswerRedisPerPrincipalBound(t *testing.T) {
	c := newTestRedis(t)
	const per = 32 << 10
	s := NewAnswers(NewClient(c, ""), AnswersOptions{PerPrincipalBytes: per, MaxBytes: 1 << 20})
	var ids []string
	for i := range 20 {
		ids = append(ids, answertest.MustPut(t, s, "alice", answertest.Sample(answertest.RandomBody(4000, uint64(i)))))
		held, err := c.Get(t.Context(), s.shelf("alice").keys[2]).Int64()
		if err != nil {
			t.Fatal(err)
		}
		if held > per {
			t.Fatalf("alice holds %d bytes, over her %d", held, per)
		}
	}
	_, err := s.Get(t.Context(), "alice", ids[0])
	answertest.WantNotFound(t, err, answer.AnswerEvicted)
	if _, err := s.Get(t.Context(), "alice", ids[19]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(t.Context(), "bob", answertest.Sample(answertest.RandomBody(per, 1))); !errors.Is(err, answer.ErrAnswerTooLarge) {
		t.Errorf("an answer over the per-principal bound: err = %v", err)
	}
}

// An answer whose key Redis expired by itself (its TTL is real time) reads as expired.
func TestAnswerRedisKeyExpiredByRedis(t *testing.T) {
	c := newTestRedis(t)
	s := NewAnswers(NewClient(c, ""), AnswersOptions{})
	id := answertest.MustPut(t, s, "alice", answertest.Sample([]byte(`{"a":1}`)))
	if err := c.Del(t.Context(), s.shelf("alice").base+id).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(t.Context(), "alice", id)
	answertest.WantNotFound(t, err, answer.AnswerExpired)
	if n, _ := s.Bytes(t.Context()); n != 0 {
		t.Errorf("the store still counts %d bytes", n)
	}
}

func BenchmarkAnswerRedis(b *testing.B) {
	c := newTestRedis(b)
	s := NewAnswers(NewClient(c, ""), AnswersOptions{MaxBytes: 1 << 30})
	answertest.Bench(b, s, func() int64 {
		n, err := s.Bytes(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		return n
	})
}
