package main

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/config"
)

// newAnswers returns the store of upstream answers that read_response
// reads: in memory, or in Redis with store.backend redis or redis_cluster
// (each principal's answers on one hash slot) so that any replica can
// serve read_response. The returned close func releases its
// Redis connection.
func newAnswers(cfg *config.Config) (answer.AnswerStore, func(), error) {
	var c redis.UniversalClient
	switch cfg.Store.Backend {
	case config.BackendRedis:
		opts, err := redis.ParseURL(cfg.Store.RedisURL.Reveal())
		if err != nil {
			// The message of ParseURL may hold the URL's password.
			return nil, nil, fmt.Errorf("store.redis_url is not a redis:// URL")
		}
		c = redis.NewClient(opts)
	case config.BackendRedisCluster:
		opts, err := redis.ParseClusterURL(cfg.Store.RedisURL.Reveal())
		if err != nil {
			return nil, nil, fmt.Errorf("store.redis_url is not a redis:// cluster URL")
		}
		c = redis.NewClusterClient(opts)
	}
	if c != nil {
		store := answer.NewRedisAnswers(c, answer.RedisAnswersOptions{
			Prefix:   cfg.Store.KeyPrefix,
			TTL:      time.Duration(cfg.ResponseTTL),
			MaxBytes: int64(cfg.ResponseStoreBytes),
		})
		return store, func() { c.Close() }, nil
	}
	return answer.NewMemoryAnswers(answer.MemoryAnswersOptions{
		MaxBytes: int64(cfg.ResponseStoreBytes),
		TTL:      time.Duration(cfg.ResponseTTL),
	}), func() {}, nil
}
