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
//	{run:h}:list          sorted set of the principal's newest run ids (at most
//	                      runs.MaxListed) by start (ms); its TTL is never shorter than
//	                      that of a record in it, so it expires with the last of them
//
// The keys of one principal share a slot, so a record, its alive key and the
// list are written in one MULTI on Redis Cluster too.
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

// list is the key of principal's sorted set of run ids. No run id is
// "list", so it names no record.
func (s *Runs) list(principal string) string { return s.base(principal, "list") }

// extendScript sets KEYS[1]'s TTL to ARGV[1] ms unless it is already
// longer: one record saved with a short keep must not cut the list under
// another record kept longer. (PEXPIRE's GT needs Redis 7.)
var extendScript = redis.NewScript(`if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('pexpire', KEYS[1], ARGV[1])
end
return 0`)

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
		l := s.list(r.Principal)
		p.ZAdd(ctx, l, redis.Z{Score: float64(r.Started.UnixMilli()), Member: r.ID})
		p.ZRemRangeByRank(ctx, l, 0, -runs.MaxListed-1)
		extendScript.Eval(ctx, p, []string{l}, msOf(keep))
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

// List implements runs.Store: the newest ids of principal's list whose
// record is still kept (an id whose record expired leaves the list here).
func (s *Runs) List(ctx context.Context, principal string, limit int) ([]runs.Stored, error) {
	limit = min(limit, runs.MaxListed)
	if limit <= 0 {
		return nil, nil
	}
	l := s.list(principal)
	ids, err := s.c.ZRevRange(ctx, l, 0, int64(limit-1)).Result()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	recs := make([]*redis.StringCmd, len(ids))
	alive := make([]*redis.IntCmd, len(ids))
	_, err = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			k := s.base(principal, id)
			recs[i], alive[i] = p.Get(ctx, k), p.Exists(ctx, k+":alive")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]runs.Stored, 0, len(ids))
	var gone []any
	for i, id := range ids {
		blob, err := recs[i].Bytes()
		if errors.Is(err, redis.Nil) {
			gone = append(gone, id)
			continue
		}
		if err == nil {
			// a failed EXISTS must not make a running run read as lost
			err = alive[i].Err()
		}
		if err != nil {
			return nil, err
		}
		out = append(out, runs.Stored{ID: id, Blob: blob, Alive: alive[i].Val() == 1})
	}
	if len(gone) > 0 {
		_ = s.c.ZRem(ctx, l, gone...).Err() // the next listing tries again
	}
	return out, nil
}
