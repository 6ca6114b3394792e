package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/ratelimit/redisstore"
)

// newStore returns the shared limiter store that cfg.Store asks for: nil with backend
// memory, else a redisstore.Store on store.redis_url (a Redis Cluster with backend
// redis_cluster) with store.key_prefix and store.fallback_share. Redis being unreachable
// is not an error: the store starts degraded and each replica runs on its fallback share
// until Redis answers. The caller closes the store after the limiter's last use.
func newStore(ctx context.Context, cfg *config.Config, log *slog.Logger, onError func()) (*redisstore.Store, error) {
	if cfg.Store.Backend != config.BackendRedis && cfg.Store.Backend != config.BackendRedisCluster {
		return nil, nil
	}
	return redisstore.New(ctx, redisstore.Options{
		URL:           cfg.Store.RedisURL.Reveal(),
		Cluster:       cfg.Store.Backend == config.BackendRedisCluster,
		KeyPrefix:     cfg.Store.KeyPrefix,
		FallbackShare: cfg.Store.FallbackShare,
		// a lease must outlive the longest call, or a slow call stops counting in flight
		LeaseTTL: max(redisstore.DefaultLeaseTTL, 2*time.Duration(cfg.CallTimeout)),
		OnError:  onError,
		Logger:   log,
	})
}

// sharedStore is st as a ratelimit.Store: nil (memory) when st is nil, never an interface
// holding a nil pointer.
func sharedStore(st *redisstore.Store) ratelimit.Store {
	if st == nil {
		return nil
	}
	return st
}
