package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/spec"
)

// approveFunc turns approve_writes (global, per spec, per endpoint) and each
// spec's approve patterns into the server's question: does a call of this
// endpoint ask the user first? Nil when nothing asks. A pattern that does
// not parse is reported naming its key.
func approveFunc(cfg *config.Config) (func(*spec.Endpoint) bool, error) {
	patterns := map[string][]spec.Pattern{}
	// By the name endpoints carry, which for a spec without name: is its
	// file's (config.SpecByName knows only the written names).
	specs := map[string]*config.Spec{}
	asks := cfg.ApproveWrites
	var errs []string
	for i := range cfg.Specs {
		sc := &cfg.Specs[i]
		specs[specName(*sc)] = sc
		if sc.ApproveWrites != nil && *sc.ApproveWrites {
			asks = true
		}
		for _, ov := range sc.Endpoints {
			if ov.ApproveWrites != nil && *ov.ApproveWrites {
				asks = true
			}
		}
		for j, raw := range sc.Approve {
			p, err := spec.ParsePattern(raw)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s.approve[%d]: %v", curationKey(i, sc), j, err))
				continue
			}
			patterns[specName(*sc)] = append(patterns[specName(*sc)], p)
			asks = true
		}
	}
	if len(errs) > 0 {
		return nil, &config.Error{File: cfg.Source, Problems: errs}
	}
	if !asks {
		return nil, nil
	}
	return func(e *spec.Endpoint) bool {
		for _, p := range patterns[e.Spec] {
			if p.Match(e) {
				return true
			}
		}
		return !e.Safe() && cfg.ApprovesWrites(specs[e.Spec], e.ID, e.OperationID)
	}, nil
}

// approvalKey is the key that signs approval requestStates: approvals.key;
// else, with a Redis store, one key the replicas share there (the first to
// start writes it); else nil, and the server makes one of its own. If Redis
// cannot be reached, this replica's own key is used and a round trip begun
// on another replica is refused (not_approved): the safe failure.
func approvalKey(ctx context.Context, cfg *config.Config, log *slog.Logger) []byte {
	if k := cfg.Approvals.Key.Reveal(); k != "" {
		return []byte(k)
	}
	var c redis.UniversalClient
	switch cfg.Store.Backend {
	case config.BackendRedis:
		if opts, err := redis.ParseURL(cfg.Store.RedisURL.Reveal()); err == nil {
			c = redis.NewClient(opts)
		}
	case config.BackendRedisCluster:
		if opts, err := redis.ParseClusterURL(cfg.Store.RedisURL.Reveal()); err == nil {
			c = redis.NewClusterClient(opts)
		}
	}
	if c == nil {
		return nil
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	fresh := make([]byte, 32)
	rand.Read(fresh) // never fails (crypto/rand)
	key := cfg.Store.KeyPrefix + "approvals:key"
	if err := c.SetNX(ctx, key, hex.EncodeToString(fresh), 0).Err(); err != nil {
		log.Warn("approvals key not shared through the store: approvals are checked by this replica only", "err", err)
		return nil
	}
	shared, err := c.Get(ctx, key).Result()
	if err != nil || len(shared) < 32 {
		log.Warn("approvals key not read from the store: approvals are checked by this replica only", "err", err)
		return nil
	}
	return []byte(shared)
}
