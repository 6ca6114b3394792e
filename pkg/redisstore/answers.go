package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/pkg/answer"
)

// redisEntryOverhead estimates what Redis holds for one answer besides its stored form:
// the key and its expiry, the member in the LRU set and in the size hash.
const redisEntryOverhead = 200

// trimRounds bounds how many principals one Put trims to keep the store within MaxBytes.
const trimRounds = 8

// AnswersOptions configure Answers. The zero value is useful.
type AnswersOptions struct {
	// TTL is how long an answer is kept after it was stored or last read. Zero or less:
	// 15m.
	TTL time.Duration
	// PerPrincipalBytes bounds what one principal holds; past it, that principal's least
	// recently used answers are evicted. Zero or less, or more than MaxBytes: MaxBytes.
	PerPrincipalBytes int64
	// MaxBytes bounds what all principals hold together; past it, the least recently
	// used answers of the principal holding the most are evicted. Zero or less: 64 MiB.
	MaxBytes int64
	// Now tells the time that decides idle expiry, so replicas should agree on it to
	// well under the TTL. Nil: time.Now.
	Now func() time.Time
}

// Answers is the answer.AnswerStore that several replicas share through one Redis or
// Redis Cluster, so any replica can serve read_response. Answers are stored deflated, as
// the memory store holds them (answer.EncodeStored). Keys (after the Client's prefix, in
// the scheme of the limiter's keys), where h is the first 128 bits of the SHA-256 of the
// principal, in hex, and ans:h the Redis Cluster hash tag:
//
//	{ans:h}:<id>     an answer's stored form; its TTL starts again on each read
//	{ans:h}:lru      sorted set of the principal's ids by last use (ms)
//	{ans:h}:size     hash of id to the bytes counted for it
//	{ans:h}:bytes    the bytes the principal holds
//	{ans:h}:gone     sorted set of its last 256 evicted ("v" + id) and expired ("x" + id) ids
//	{ans:all}:heavy  sorted set of principals (h) by bytes held
//	{ans:all}:seen   sorted set of principals (h) by last use (ms)
//	{ans:all}:total  the bytes all principals hold
//
// Each Put and Get is one script on the principal's slot, so the per-principal bound,
// the LRU order and the record of gone ids change atomically. The bound over all
// principals is kept by a second script on the {all} slot and, when over, a trim of the
// heaviest principal: across slots this cannot be atomic, so under concurrent Puts the
// total may pass MaxBytes for a moment, and the bytes of expired answers stay counted
// until their principal's next Put or Get (or until the principal has been idle for
// twice the TTL). An id whose answer is gone by Redis's own expiry while its LRU entry
// remains reads as "expired"; once the principal's records expire too (idle for twice
// the TTL), its old ids read as "unknown".
//
// Answers are safe for concurrent use; they start no goroutine and do not close the
// client.
type Answers struct {
	c      redis.UniversalClient
	prefix string
	ttl    time.Duration
	per    int64
	max    int64
	now    func() time.Time
}

var _ answer.AnswerStore = (*Answers)(nil)

// NewAnswers returns an answer store on c.
func NewAnswers(c *Client, opts AnswersOptions) *Answers {
	s := &Answers{c: c.rdb, prefix: c.prefix, ttl: opts.TTL, per: opts.PerPrincipalBytes, max: opts.MaxBytes, now: opts.Now}
	if s.ttl <= 0 {
		s.ttl = answer.DefaultAnswerTTL
	}
	if s.max <= 0 {
		s.max = answer.DefaultAnswerBytes
	}
	if s.per <= 0 || s.per > s.max {
		s.per = s.max
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// shelf names one principal's keys: base+id for an answer, keys for the script.
type redisShelf struct {
	h    string
	base string
	keys []string // lru, size, bytes, gone
}

func (s *Answers) shelf(principal string) redisShelf {
	sum := sha256.Sum256([]byte(principal))
	return s.shelfOf(hex.EncodeToString(sum[:16]))
}

func (s *Answers) shelfOf(h string) redisShelf {
	base := key(s.prefix, "ans:"+h, "")
	return redisShelf{h: h, base: base, keys: []string{base + "lru", base + "size", base + "bytes", base + "gone"}}
}

func (s *Answers) indexKeys() []string {
	return []string{key(s.prefix, "ans:all", "heavy"), key(s.prefix, "ans:all", "seen"), key(s.prefix, "ans:all", "total")}
}

// ms is t in milliseconds since the epoch; d in whole milliseconds, at least 1.
func ms(t time.Time) int64 { return t.UnixMilli() }

func msOf(d time.Duration) int64 { return max(1, d.Milliseconds()) }

// keep is how long a principal's records live after its last Put or Get: long enough to
// tell an expired id from an unknown one for a while.
func (s *Answers) keep() int64 { return 2 * msOf(s.ttl) }

// Put stores a for principal, evicting the principal's oldest answers past
// PerPrincipalBytes and then, past MaxBytes, the oldest of the principals holding the
// most. An answer larger than PerPrincipalBytes is refused with answer.ErrAnswerTooLarge. Once
// the answer is stored, Put returns its id even when keeping MaxBytes failed.
func (s *Answers) Put(ctx context.Context, principal string, a *answer.Answer) (string, error) {
	blob, err := answer.EncodeStored(a)
	if err != nil {
		return "", err
	}
	cost := int64(len(blob)) + redisEntryOverhead
	if cost > s.per {
		return "", fmt.Errorf("%w: %d bytes compressed, a principal may hold %d", answer.ErrAnswerTooLarge, cost, s.per)
	}
	id := answer.NewID()
	sh := s.shelf(principal)
	now := ms(s.now())
	held, err := answerPutScript.Run(ctx, s.c, append(sh.keys, sh.base+id),
		sh.base, now, msOf(s.ttl), s.keep(), answer.GoneIDs, id, blob, cost, s.per).Int64()
	if err != nil {
		return "", fmt.Errorf("response store: %w", err)
	}
	_ = s.balance(ctx, sh.h, held, now, id) // best effort: the answer is stored
	return id, nil
}

// balance records that principal h holds held bytes and, while all principals hold more
// than MaxBytes, trims the one holding the most, never evicting keepID.
func (s *Answers) balance(ctx context.Context, h string, held, now int64, keepID string) error {
	for round := 0; ; round++ {
		v, err := answerIndexScript.Run(ctx, s.c, s.indexKeys(), h, held, now, s.keep()).Slice()
		if err != nil {
			return err
		}
		total, _ := v[0].(int64)
		if total <= s.max || len(v) < 3 || round == trimRounds {
			return nil
		}
		top, _ := v[1].(string)
		topHeld, err := strconv.ParseInt(fmt.Sprint(v[2]), 10, 64)
		if err != nil {
			return err
		}
		sh := s.shelfOf(top)
		after, err := answerTrimScript.Run(ctx, s.c, sh.keys,
			sh.base, now, msOf(s.ttl), s.keep(), answer.GoneIDs, max(topHeld-(total-s.max), 0), keepID).Int64()
		if err != nil {
			return err
		}
		if after == topHeld {
			return nil // nothing it may evict: only the answer just stored is left
		}
		h, held = top, after
	}
}

// Get returns principal's answer with id and counts it as used: its TTL starts again.
func (s *Answers) Get(ctx context.Context, principal, id string) (*answer.Answer, error) {
	if !answer.ValidID(id) {
		return nil, answer.NotFound(id, answer.AnswerUnknown)
	}
	sh := s.shelf(principal)
	now := ms(s.now())
	v, err := answerGetScript.Run(ctx, s.c, append(sh.keys, sh.base+id),
		sh.base, now, msOf(s.ttl), s.keep(), answer.GoneIDs, id).Slice()
	if err != nil {
		return nil, fmt.Errorf("response store: %w", err)
	}
	if len(v) != 3 {
		return nil, fmt.Errorf("response store: unexpected reply of %d values", len(v))
	}
	held, _ := v[2].(int64)
	switch v[0] {
	case "ok":
		blob, _ := v[1].(string)
		// the principal is still active: keep it in the index
		_ = s.c.ZAddXX(ctx, s.indexKeys()[1], redis.Z{Score: float64(now), Member: sh.h}).Err()
		return answer.DecodeStored([]byte(blob))
	case "expired":
		_ = s.balance(ctx, sh.h, held, now, "") // its bytes were dropped
		return nil, answer.NotFound(id, answer.AnswerExpired)
	case "evicted":
		return nil, answer.NotFound(id, answer.AnswerEvicted)
	case "unknown":
		return nil, answer.NotFound(id, answer.AnswerUnknown)
	}
	return nil, errors.New("response store: unexpected reply")
}

// Bytes reports the bytes all principals hold, as the store counts them.
func (s *Answers) Bytes(ctx context.Context) (int64, error) {
	n, err := s.c.Get(ctx, s.indexKeys()[2]).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// answerShelfLua is shared by the scripts on one principal's slot.
// KEYS: lru, size, bytes, gone. ARGV: base, now (ms), ttl (ms), keep (ms), gone cap.
// Evicted answers' keys are built from base: undeclared, but on the same slot (hash tag).
const answerShelfLua = `
local lru, size, bytes, gone = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local base, now, ttl, keep, goneCap = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local function held()
  return tonumber(redis.call('GET', bytes) or '0')
end
local function drop(id, why)
  local c = tonumber(redis.call('HGET', size, id) or '0')
  redis.call('DEL', base .. id)
  redis.call('ZREM', lru, id)
  redis.call('HDEL', size, id)
  redis.call('DECRBY', bytes, c)
  redis.call('ZADD', gone, now, why .. id)
end
local function sweep()
  local old = redis.call('ZRANGEBYSCORE', lru, '-inf', now - ttl, 'LIMIT', 0, 64)
  for _, id in ipairs(old) do drop(id, 'x') end
end
local function finish()
  redis.call('ZREMRANGEBYRANK', gone, 0, -(goneCap + 1))
  for _, k in ipairs(KEYS) do
    if k ~= KEYS[5] then redis.call('PEXPIRE', k, keep) end
  end
end
`

// answerPutScript sweeps the principal's expired answers, evicts its least recently used
// ones until the new one fits its bound, and stores it. KEYS[5]: the answer's key.
// ARGV[6..]: id, stored form, cost, bound. Reply: the bytes the principal holds.
var answerPutScript = redis.NewScript(answerShelfLua + `
local id, blob, cost, bound = ARGV[6], ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9])
sweep()
while held() + cost > bound do
  local v = redis.call('ZRANGE', lru, 0, 0)[1]
  if not v then break end
  drop(v, 'v')
end
redis.call('SET', KEYS[5], blob, 'PX', ttl)
redis.call('ZADD', lru, now, id)
redis.call('HSET', size, id, cost)
local n = redis.call('INCRBY', bytes, cost)
finish()
return n
`)

// answerGetScript reads one answer and starts its TTL again, or says why it cannot.
// KEYS[5]: the answer's key. ARGV[6]: id. Reply: status, stored form or "", bytes held.
var answerGetScript = redis.NewScript(answerShelfLua + `
local id = ARGV[6]
local used = redis.call('ZSCORE', lru, id)
if used then
  local blob = false
  if tonumber(used) + ttl > now then blob = redis.call('GET', KEYS[5]) end
  if blob then
    redis.call('PEXPIRE', KEYS[5], ttl)
    redis.call('ZADD', lru, now, id)
    finish()
    return {'ok', blob, held()}
  end
  drop(id, 'x')
  finish()
  return {'expired', '', held()}
end
if redis.call('ZSCORE', gone, 'v' .. id) then return {'evicted', '', 0} end
if redis.call('ZSCORE', gone, 'x' .. id) then return {'expired', '', 0} end
return {'unknown', '', 0}
`)

// answerTrimScript sweeps a principal's expired answers and evicts its least recently
// used ones, sparing one id, until it holds no more than a target.
// ARGV[6..]: target, id to spare. Reply: the bytes the principal holds.
var answerTrimScript = redis.NewScript(answerShelfLua + `
local target, spare = tonumber(ARGV[6]), ARGV[7]
sweep()
while held() > target do
  local ids = redis.call('ZRANGE', lru, 0, 1)
  local v = ids[1]
  if v == spare then v = ids[2] end
  if not v then break end
  drop(v, 'v')
end
finish()
return held()
`)

// answerIndexScript records what one principal holds, forgets principals idle past
// keep (their keys have expired), and reports the total and the heaviest principal.
// KEYS: heavy, seen, total. ARGV: h, bytes held, now (ms), keep (ms).
// Reply: total, and when any principal holds bytes, the heaviest and its bytes.
var answerIndexScript = redis.NewScript(`
local heavy, seen, totalKey = KEYS[1], KEYS[2], KEYS[3]
local h, b, now, keep = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local total = tonumber(redis.call('GET', totalKey) or '0')
for _, p in ipairs(redis.call('ZRANGEBYSCORE', seen, '-inf', now - keep, 'LIMIT', 0, 32)) do
  if p ~= h then
    total = total - tonumber(redis.call('ZSCORE', heavy, p) or '0')
    redis.call('ZREM', heavy, p)
    redis.call('ZREM', seen, p)
  end
end
total = total - tonumber(redis.call('ZSCORE', heavy, h) or '0') + b
if b > 0 then
  redis.call('ZADD', heavy, b, h)
  redis.call('ZADD', seen, now, h)
else
  redis.call('ZREM', heavy, h)
  redis.call('ZREM', seen, h)
end
if total < 0 then total = 0 end
redis.call('SET', totalKey, total, 'PX', keep)
redis.call('PEXPIRE', heavy, keep)
redis.call('PEXPIRE', seen, keep)
local top = redis.call('ZREVRANGE', heavy, 0, 0, 'WITHSCORES')
if top[1] then return {total, top[1], top[2]} end
return {total}
`)
