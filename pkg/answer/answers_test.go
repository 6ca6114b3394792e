package answer_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/answer/answertest"
)

func memoryHarness() answertest.Harness {
	return answertest.Harness{Name: "memory", Open: func(t *testing.T, maxBytes int64, ttl time.Duration, now func() time.Time) (answer.AnswerStore, func() int64) {
		s := answer.NewMemoryAnswers(answer.MemoryAnswersOptions{MaxBytes: maxBytes, TTL: ttl, Now: now})
		return s, s.Bytes
	}}
}

func TestAnswerStoreMemory(t *testing.T) {
	answertest.RunConformance(t, memoryHarness())
}

func TestAnswerIDs(t *testing.T) {
	id, key := answer.NewAnswerID()
	if len(id) != answer.AnswerIDLen || !strings.HasPrefix(id, "r_") {
		t.Fatalf("id %q", id)
	}
	got, ok := answer.ParseAnswerID(id)
	if !ok || got != key {
		t.Fatalf("parse(%q) = %x, %v; want %x", id, got, ok, key)
	}
	long := "r_" + strings.Repeat("A", 10<<10)
	if n := testing.AllocsPerRun(100, func() { answer.ParseAnswerID(long) }); n != 0 {
		t.Errorf("rejecting a 10 KB id allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { answer.ParseAnswerID(id) }); n != 0 {
		t.Errorf("parsing an id allocates %v times", n)
	}
}

func TestAnswerMemoryCountsCompressedBytes(t *testing.T) {
	s := answer.NewMemoryAnswers(answer.MemoryAnswersOptions{})
	body := answertest.GithubPage(30, 7)
	answertest.MustPut(t, s, "alice", answertest.Sample(body))
	got := s.Bytes()
	if got >= int64(len(body))/4 {
		t.Errorf("a %d-byte GitHub page counts %d bytes; want it deflated", len(body), got)
	}
	if got < int64(len(body))/100 {
		t.Errorf("a %d-byte GitHub page counts only %d bytes", len(body), got)
	}
	t.Logf("%d bytes of JSON held in %d (%.1f×)", len(body), got, float64(len(body))/float64(got))
}

func TestAnswerMemoryGoneRecordIsBounded(t *testing.T) {
	clock := answertest.NewClock()
	s := answer.NewMemoryAnswers(answer.MemoryAnswersOptions{TTL: time.Minute, Now: clock.Now})
	var first []string
	for p := range answer.GonePrincipals + 10 {
		id := answertest.MustPut(t, s, fmt.Sprint("p", p), answertest.Sample([]byte(`{}`)))
		if p == 0 {
			first = append(first, id)
		}
	}
	clock.Advance(time.Minute)
	_, err := s.Get(t.Context(), "p1", "r_"+strings.Repeat("A", 22)) // sweeps them all
	answertest.WantNotFound(t, err, answer.AnswerUnknown)
	n := answer.GoneLen(s)
	if n != answer.GonePrincipals {
		t.Errorf("the gone record keeps %d principals, want %d", n, answer.GonePrincipals)
	}
	// p0 was the first to go, so its record was dropped: its id is unknown again
	_, err = s.Get(t.Context(), "p0", first[0])
	answertest.WantNotFound(t, err, answer.AnswerUnknown)
	_, err = s.Get(t.Context(), fmt.Sprint("p", answer.GonePrincipals+9), first[0])
	answertest.WantNotFound(t, err, answer.AnswerUnknown)

	// one principal's record keeps its last GoneIDs ids
	var ids []string
	for range answer.GoneIDs + 5 {
		ids = append(ids, answertest.MustPut(t, s, "busy", answertest.Sample([]byte(`{}`))))
	}
	clock.Advance(time.Minute)
	_, err = s.Get(t.Context(), "busy", ids[0])
	answertest.WantNotFound(t, err, answer.AnswerUnknown)
	_, err = s.Get(t.Context(), "busy", ids[5])
	answertest.WantNotFound(t, err, answer.AnswerExpired)
	if s.Len() != 0 || s.Bytes() != 0 {
		t.Errorf("an empty store holds %d answers, %d bytes", s.Len(), s.Bytes())
	}
}

func TestAnswerDecodeRejectsDamage(t *testing.T) {
	blob, err := answer.EncodeStored(answertest.Sample(answertest.GithubPage(1, 3)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		blob []byte
	}{
		{"empty", nil},
		{"kind", append([]byte{9}, blob[1:]...)},
		{"cut", blob[:len(blob)-10]},
		{"head only", blob[:3]},
		{"longer", append(bytes.Clone(blob), 1, 2, 3)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := answer.DecodeStored(tt.blob); err == nil {
				t.Error("damaged blob decoded")
			}
		})
	}
}
