package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/pkg/runs"
)

// Runs keeps run records (runs.Store) in Redis, so that any replica answers
// for a run another replica runs. Keys (after the Client's prefix), run:h
// the principal's hash tag, as answers have:
//
//	{run:h}:<id>          the record's stored form, kept while the run runs and after it ended
//	{run:h}:<id>:alive    set while the run runs, with the lost rule's TTL: Redis's clock
//	                      decides when a run whose replica died is lost, not a replica's
//	{run:h}:<id>:cancel   set when a cancel was asked on any replica
//
// The keys of one run share a slot, so a record and its alive key are
// written in one MULTI on Redis Cluster too.
type Runs struct {
	c      redis.UniversalClient
	prefix string
}

var _ runs.Store = (*Runs)(nil)

// NewRuns returns the run store on c.
func NewRuns(c *Client) *Runs { return &Runs{c: c.rdb, prefix: c.prefix} }

func (s *Runs) base(principal, id string) string {
	sum := sha256.Sum256([]byte(principal))
	return key(s.prefix, "run:"+hex.EncodeToString(sum[:16]), id)
}

// Save implements runs.Store.
func (s *Runs) Save(ctx context.Context, r *runs.Record, blob []byte, alive, keep time.Duration) error {
	k := s.base(r.Principal, r.ID)
	_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k, blob, keep)
		if r.Status == runs.Running {
			p.Set(ctx, k+":alive", "1", alive)
		} else {
			p.Del(ctx, k+":alive")
		}
		return nil
	})
	return err
}

// Load implements runs.Store.
func (s *Runs) Load(ctx context.Context, principal, id string) ([]byte, bool, error) {
	k := s.base(principal, id)
	var rec *redis.StringCmd
	var alive *redis.IntCmd
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		rec = p.Get(ctx, k)
		alive = p.Exists(ctx, k+":alive")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, false, err
	}
	blob, err := rec.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, runs.ErrNotFound
	}
	if err != nil {
		return nil, false, err
	}
	return blob, alive.Val() == 1, nil
}

// RequestCancel implements runs.Store.
func (s *Runs) RequestCancel(ctx context.Context, principal, id string, keep time.Duration) error {
	return s.c.Set(ctx, s.base(principal, id)+":cancel", "1", keep).Err()
}

// CancelRequested implements runs.Store.
func (s *Runs) CancelRequested(ctx context.Context, principal, id string) (bool, error) {
	n, err := s.c.Exists(ctx, s.base(principal, id)+":cancel").Result()
	return n == 1, err
}
