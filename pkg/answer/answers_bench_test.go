package answer_test

import (
	"testing"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/answer/answertest"
)

func BenchmarkAnswerMemory(b *testing.B) {
	s := answer.NewMemoryAnswers(answer.MemoryAnswersOptions{MaxBytes: 1 << 30})
	answertest.Bench(b, s, s.Bytes)
}
