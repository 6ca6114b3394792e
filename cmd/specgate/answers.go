package main

import (
	"time"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/redisstore"
	"github.com/specgate/specgate/pkg/runs"
)

// newRunStore returns where run records live: in Redis when the answers
// are (rc set), so that any replica answers script_result; else in memory.
func newRunStore(rc *redisstore.Client) runs.Store {
	if rc != nil {
		return redisstore.NewRuns(rc)
	}
	return nil
}

// newAnswers returns the store of upstream answers that read_response
// reads: in memory, or in Redis on rc (store.backend redis or
// redis_cluster; each principal's answers on one hash slot) so that any
// replica can serve read_response.
func newAnswers(cfg *config.Config, rc *redisstore.Client) answer.AnswerStore {
	if rc != nil {
		return redisstore.NewAnswers(rc, redisstore.AnswersOptions{
			TTL:      time.Duration(cfg.ResponseTTL),
			MaxBytes: int64(cfg.ResponseStoreBytes),
		})
	}
	return answer.NewMemoryAnswers(answer.MemoryAnswersOptions{
		MaxBytes: int64(cfg.ResponseStoreBytes),
		TTL:      time.Duration(cfg.ResponseTTL),
	})
}
