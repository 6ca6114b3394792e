package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/redisstore"
)

// redisClient is the one Redis connection cfg.Store asks for: nil with backend memory,
// else a client on store.redis_url (a Redis Cluster with backend redis_cluster) whose
// keys start with store.key_prefix. The limiter's store, the answer store and the
// approvals share it; it lives as long as the process.
func redisClient(cfg *config.Config) (*redisstore.Client, error) {
	if cfg.Store.Backend != config.BackendRedis && cfg.Store.Backend != config.BackendRedisCluster {
		return nil, nil
	}
	return redisstore.Dial(cfg.Store.RedisURL.Reveal(), cfg.Store.Backend == config.BackendRedisCluster, cfg.Store.KeyPrefix)
}

// newStore returns the shared limiter store on rc: nil when rc is (backend memory),
// else a redisstore.Store with store.fallback_share and store.timeout. Redis being unreachable is not an
// error: the store starts degraded and each replica runs on its fallback share until
// Redis answers. The caller closes the store after the limiter's last use.
func newStore(ctx context.Context, cfg *config.Config, rc *redisstore.Client, log *slog.Logger, onError func()) (*redisstore.Store, error) {
	if rc == nil {
		return nil, nil
	}
	logRedisTo(log)
	return redisstore.New(ctx, redisstore.Options{
		Client:        rc,
		FallbackShare: cfg.Store.FallbackShare,
		Timeout:       time.Duration(cfg.Store.Timeout),
		OnError:       onError,
		Logger:        log,
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
