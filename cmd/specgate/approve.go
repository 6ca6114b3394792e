package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/redisstore"
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

// approvalStore is where the replicas share approvals: the key that signs
// requestStates (approvals.key, else one the first replica writes in the
// Redis store) and the record of states spent, so an approval is good for
// one call on any replica. With a memory store, or approvals.key and no
// Redis, each process keeps its own; if Redis cannot be reached at start,
// this replica's own key is used and a round trip begun on another replica
// is refused (not_approved): the safe failure. rc is the process's one
// Redis connection (nil with a memory store).
func approvalStore(ctx context.Context, cfg *config.Config, rc *redisstore.Client, log *slog.Logger) (key []byte, spend func(context.Context, string, time.Duration) (bool, error)) {
	if k := cfg.Approvals.Key.Reveal(); k != "" {
		key = []byte(k)
	}
	if rc == nil {
		return key, nil
	}
	spend = func(ctx context.Context, id string, ttl time.Duration) (bool, error) {
		return rc.SpendOnce(ctx, id, ttl+time.Minute)
	}
	if key != nil {
		return key, spend
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	fresh := make([]byte, 32)
	rand.Read(fresh) // never fails (crypto/rand)
	shared, err := rc.SharedKey(wctx, hex.EncodeToString(fresh))
	if err != nil {
		log.Warn("approvals key not shared through the store: approvals are checked by this replica only", "err", err)
		return nil, spend
	}
	if len(shared) < 32 {
		log.Warn("approvals key not read from the store: approvals are checked by this replica only")
		return nil, spend
	}
	return []byte(shared), spend
}
