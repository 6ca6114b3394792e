package main

import (
	"context"
	"time"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// newStore returns the shared limiter store that cfg.Store asks for: nil with backend
// memory, else a RedisStore on store.redis_url with store.key_prefix and
// store.fallback_share. Redis being unreachable is not an error: the store starts
// degraded and each replica runs on its fallback share until Redis answers. The caller
// closes the store (after the limiter's last use) and passes it as ratelimit.Options.Store
// (a nil *RedisStore there means memory) and as ratelimit.WindowOptions.Store.
func newStore(ctx context.Context, cfg *config.Config, onError func()) (*ratelimit.RedisStore, error) {
	if cfg.Store.Backend != config.BackendRedis {
		return nil, nil
	}
	return ratelimit.NewRedisStore(ctx, ratelimit.RedisOptions{
		URL:           cfg.Store.RedisURL.Reveal(),
		KeyPrefix:     cfg.Store.KeyPrefix,
		FallbackShare: cfg.Store.FallbackShare,
		// a lease must outlive the longest call, or a slow call stops counting in flight
		LeaseTTL: max(ratelimit.DefaultLeaseTTL, 2*time.Duration(cfg.CallTimeout)),
		OnError:  onError,
	})
}
