package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of RedisOptions.
const (
	DefaultKeyPrefix     = "specgate:"
	DefaultFallbackShare = 0.34
	DefaultRedisTimeout  = 250 * time.Millisecond
	DefaultProbeInterval = 500 * time.Millisecond
	DefaultLeaseTTL      = 2 * time.Minute
)

// RedisOptions configure a RedisStore. The zero value talks to redis://127.0.0.1:6379/0.
type RedisOptions struct {
	// Client is the Redis to use; the store does not close it. Nil: a client is made from
	// URL and closed by Close.
	Client redis.UniversalClient
	// URL is used when Client is nil: redis://, rediss:// or unix://, as go-redis parses
	// it. Empty: redis://127.0.0.1:6379/0.
	URL string
	// KeyPrefix starts every key the store writes. Empty: "specgate:".
	KeyPrefix string
	// FallbackShare is the part of each budget one replica uses while Redis is
	// unreachable: floor(share × limit), at least 1; cooldowns and minimum intervals
	// stretch by 1/share. In (0, 1]. Zero: 0.34, so three replicas stay within a budget.
	FallbackShare float64
	// Timeout bounds each call to Redis; past it, the store is degraded until a probe
	// answers. Zero: 250ms.
	Timeout time.Duration
	// ProbeInterval is how often a degraded store pings Redis. Zero: 500ms.
	ProbeInterval time.Duration
	// LeaseTTL is how long a concurrency lease lives when its call is never released (a
	// replica that crashed); it should exceed the longest call. Zero: 2m.
	LeaseTTL time.Duration
	// OnError, when not nil, is called after each failed call to Redis (for
	// a metric); it must not block.
	OnError func()
}

// RedisStore is the Store that several replicas share through one Redis: one Lua script
// per admission checks and charges every limit of the call atomically with the Redis
// server's clock, and every key carries the prefix and a TTL. Keys (after the prefix):
//
//	cd:{endpoint}               last admission (cooldown)
//	u:{upstream}:req            sorted set of admissions (requests window)
//	u:{upstream}:tok            hash of token buckets (tokens window)
//	u:{upstream}:last           last admission (minimum interval)
//	u:{upstream}:lease          sorted set of concurrency leases by expiry
//	u:{upstream}:blk:{resource} learned block: until, source
//	w:{name}:{key}              sorted set of a Window's events
//
// When Redis does not answer (also at start) the store is degraded: Available is false
// and a background probe pings Redis every ProbeInterval until it answers. Close stops
// the probe. A RedisStore is safe for concurrent use.
type RedisStore struct {
	c        redis.UniversalClient
	own      bool
	prefix   string
	share    float64
	timeout  time.Duration
	leaseTTL time.Duration
	onError  func()
	id       string // this store's part of lease ids
	seq      atomic.Uint64

	up atomic.Bool // Redis answered the last call or probe

	mu     sync.Mutex // guards since and reason
	since  time.Time
	reason string

	stop chan struct{}
	done chan struct{}
}

var _ Store = (*RedisStore)(nil)

// NewRedisStore returns a store on the Redis of opts. It pings Redis once: when Redis does
// not answer, the store starts degraded rather than failing. The error is for options
// that make no sense. Close the store when done.
func NewRedisStore(ctx context.Context, opts RedisOptions) (*RedisStore, error) {
	s := &RedisStore{
		c:        opts.Client,
		prefix:   opts.KeyPrefix,
		share:    opts.FallbackShare,
		timeout:  opts.Timeout,
		leaseTTL: opts.LeaseTTL,
		onError:  opts.OnError,
		id:       strconv.FormatUint(rand.Uint64(), 36),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if s.prefix == "" {
		s.prefix = DefaultKeyPrefix
	}
	if s.share == 0 {
		s.share = DefaultFallbackShare
	}
	if !(s.share > 0 && s.share <= 1) {
		return nil, fmt.Errorf("redis store: fallback share %v is not in (0, 1]", s.share)
	}
	if s.timeout <= 0 {
		s.timeout = DefaultRedisTimeout
	}
	if s.leaseTTL <= 0 {
		s.leaseTTL = DefaultLeaseTTL
	}
	probe := opts.ProbeInterval
	if probe <= 0 {
		probe = DefaultProbeInterval
	}
	if s.c == nil {
		u := opts.URL
		if u == "" {
			u = "redis://127.0.0.1:6379/0"
		}
		o, err := redis.ParseURL(u)
		if err != nil {
			// not wrapped: the message could echo the URL and its password
			return nil, errors.New("redis store: the URL does not parse")
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = s.timeout, s.timeout, s.timeout
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1   // a retried admission could be charged twice; the fallback covers
		o.DialerRetries = 1 // a dead Redis must fail within Timeout: admissions wait on it
		s.c, s.own = redis.NewClient(o), true
	}
	s.up.Store(true)
	if err := s.ping(ctx); err != nil {
		s.fail(err)
	}
	go s.probe(probe)
	return s, nil
}

// Close stops the probe and closes the client the store made.
func (s *RedisStore) Close() error {
	select {
	case <-s.stop:
		return nil
	default:
	}
	close(s.stop)
	<-s.done
	if s.own {
		return s.c.Close()
	}
	return nil
}

// Available reports whether Redis answered the last call or probe.
func (s *RedisStore) Available() bool { return s.up.Load() }

// Degraded reports whether Redis is unreachable, since when and why.
func (s *RedisStore) Degraded() (bool, time.Time, string) {
	if s.up.Load() {
		return false, time.Time{}, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return true, s.since, s.reason
}

// FallbackShare is the part of each budget one replica uses while Redis is unreachable.
func (s *RedisStore) FallbackShare() float64 { return s.share }

// fail marks the store degraded after err.
func (s *RedisStore) fail(err error) {
	if s.onError != nil {
		s.onError()
	}
	s.mu.Lock()
	if s.up.Load() || s.reason == "" {
		s.since = time.Now()
		s.reason = "redis unreachable: " + err.Error()
	}
	s.up.Store(false)
	s.mu.Unlock()
}

func (s *RedisStore) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.c.Ping(ctx).Err()
}

func (s *RedisStore) probe(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if s.up.Load() {
				continue
			}
			if err := s.ping(context.Background()); err != nil {
				s.fail(err)
				continue
			}
			s.mu.Lock()
			s.since, s.reason = time.Time{}, ""
			s.up.Store(true)
			s.mu.Unlock()
		}
	}
}

// run runs a script with the store's timeout; an error other than a script's own reply
// marks the store degraded.
func (s *RedisStore) run(ctx context.Context, sc *redis.Script, keys []string, args ...any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := sc.Run(ctx, s.c, keys, args...).Result()
	if err != nil {
		s.fail(err)
		return nil, err
	}
	return v, nil
}

// micros converts d to whole microseconds, rounded up: a limit never shrinks in Redis.
func micros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}

func (s *RedisStore) upKey(upstream, part string) string {
	return s.prefix + "u:" + upstream + ":" + part
}

// Admit checks and charges one admission with one script.
func (s *RedisStore) Admit(ctx context.Context, a *Admission) (Decision, error) {
	lease := s.id + ":" + strconv.FormatUint(s.seq.Add(1), 36)
	b := &a.Budget
	keys := []string{
		s.prefix + "cd:" + a.Endpoint,
		s.upKey(a.Upstream, "req"),
		s.upKey(a.Upstream, "tok"),
		s.upKey(a.Upstream, "last"),
		s.upKey(a.Upstream, "lease"),
		s.upKey(a.Upstream, "blk:"),
		s.upKey(a.Upstream, "blk:"+a.Resource),
	}
	charge, cooldown := 0, micros(a.Cooldown)
	if a.Charge {
		charge = 1
	}
	if a.Endpoint == "" {
		cooldown = 0
	}
	var requests, tokens, minIv, maxConc, span int64
	if a.Upstream != "" {
		requests, tokens, minIv, maxConc = int64(b.Requests), b.Tokens, micros(b.MinInterval), int64(b.MaxConcurrent)
		span = micros(time.Duration(b.span()))
	}
	v, err := s.run(ctx, admitScript, keys,
		charge, cooldown, requests, span, tokens, a.Tokens, bucketWidth(span),
		minIv, maxConc, max(micros(a.CallEstimate), 1000), lease, micros(s.leaseTTL), boolInt(a.Upstream != ""))
	if err != nil {
		return Decision{}, err
	}
	r, ok := v.([]any)
	if !ok || len(r) != 10 {
		err := errors.New("redis store: unexpected reply to admit")
		s.fail(err)
		return Decision{}, err
	}
	d := Decision{
		OK:           toInt(r[0]) == 1,
		Now:          time.UnixMicro(toInt(r[1])),
		Kind:         Kind(toString(r[2])),
		Wait:         time.Duration(toInt(r[3])) * time.Microsecond,
		Source:       toString(r[4]),
		Cooldown:     toInt(r[5]) == 1,
		Bucket:       toInt(r[6]),
		Requests:     int(toInt(r[7])),
		RequestsFree: time.Duration(toInt(r[8])) * time.Microsecond,
		Tokens:       toInt(r[9]),
	}
	if !d.OK {
		d.Scope = ScopeProxy
		if d.Kind == KindLearned {
			d.Scope = ScopeUpstream
		}
	} else if a.Charge && maxConc > 0 {
		d.Lease = lease
	}
	return d, nil
}

// bucketWidth is the token bucket width for a span, in microseconds: span/64, at least
// 1ms, as the memory store has it.
func bucketWidth(spanMicros int64) int64 {
	return max(spanMicros/tokenBucketsPerWindow, 1000)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func toInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}

// Release ends a concurrency lease.
func (s *RedisStore) Release(ctx context.Context, upstream, lease string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.c.ZRem(ctx, s.upKey(upstream, "lease"), lease).Err(); err != nil {
		s.fail(err)
		return err
	}
	return nil
}

// Settle corrects a call's token charge.
func (s *RedisStore) Settle(ctx context.Context, upstream string, bucket, delta int64, span time.Duration) error {
	sp := micros(span)
	_, err := s.run(ctx, settleScript, []string{s.upKey(upstream, "tok")},
		delta, bucket, bucketWidth(sp), sp)
	return err
}

// Block holds the upstream's quota resource for d.
func (s *RedisStore) Block(ctx context.Context, upstream, resource string, d time.Duration, source string) error {
	if d <= 0 {
		return nil
	}
	_, err := s.run(ctx, blockScript, []string{s.upKey(upstream, "blk:"+resource)}, micros(d), source)
	return err
}

// The scripts keep times in microseconds of the Redis server's clock (TIME). Lua numbers
// are doubles, exact for these integers; num() writes them without an exponent.
const luaPrelude = `
local function num(n) return string.format('%.0f', n) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
`

// admitScript checks, in the memory store's order, the cooldown, learned blocks, the
// requests window, the tokens window, the minimum interval and the calls in flight; it
// keeps the longest wait; with charge set and nothing in the way, it charges them all.
// Reply: ok, now, kind, wait, source, cooldown refused, token bucket, calls in the
// requests window (this one included when charged), wait until that window has room,
// tokens in the tokens window (this call's included when charged).
var admitScript = redis.NewScript(luaPrelude + `
local charge = ARGV[1] == '1'
local iv, nreq, span = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ntok, cost, g = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local mi, mc, est = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local lease, lttl, hasUp = ARGV[11], tonumber(ARGV[12]), ARGV[13] == '1'
local best, kind, src, cd, nc, nfree, tsum = 0, '', '', 0, 0, 0, 0
local function consider(k, w, s)
  if w > best then best, kind, src = w, k, s or '' end
end
-- the wait until the requests window, holding nc calls, has room for one more
local function free()
  if nc < nreq then return 0 end
  local e = redis.call('ZRANGE', KEYS[2], nc - nreq, nc - nreq, 'WITHSCORES')
  return math.max(tonumber(e[2]) + span - now, 0)
end
if iv > 0 then
  local last = tonumber(redis.call('GET', KEYS[1]) or '0')
  if last > 0 and last + iv - now > 0 then
    cd = 1
    consider('cooldown', last + iv - now)
  end
end
if hasUp then
  for i = 6, 7 do
    local b = redis.call('HMGET', KEYS[i], 'until', 'src')
    if b[1] then consider('learned', tonumber(b[1]) - now, b[2]) end
  end
  if nreq > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', num(now - span))
    nc = redis.call('ZCARD', KEYS[2])
    nfree = free()
    consider('requests', nfree)
  end
  if ntok > 0 then
    local h = redis.call('HGETALL', KEYS[3])
    local bs, sum = {}, 0
    for i = 1, #h, 2 do
      local st, v = tonumber(h[i]), tonumber(h[i + 1])
      if st + g + span <= now then
        redis.call('HDEL', KEYS[3], h[i])
      else
        bs[#bs + 1] = {st, v}
        sum = sum + v
      end
    end
    tsum = sum
    local c = math.min(math.max(cost, 1), ntok)
    if sum + c > ntok then
      table.sort(bs, function(a, b) return a[1] < b[1] end)
      local freed = 0
      for _, b in ipairs(bs) do
        freed = freed + b[2]
        if sum - freed + c <= ntok then
          consider('tokens', b[1] + g + span - now)
          break
        end
      end
    end
  end
  if mi > 0 then
    local last = tonumber(redis.call('GET', KEYS[4]) or '0')
    if last > 0 then consider('interval', last + mi - now) end
  end
  if mc > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', num(now))
    if redis.call('ZCARD', KEYS[5]) >= mc then consider('concurrency', est) end
  end
end
if best > 0 then return {0, now, kind, best, src, cd, 0, nc, nfree, tsum} end
if not charge then return {1, now, '', 0, '', 0, 0, nc, nfree, tsum} end
local function ttl(us) return num(math.ceil(us / 1000) + 1000) end
if iv > 0 then redis.call('SET', KEYS[1], num(now), 'PX', ttl(iv)) end
local bucket = 0
if hasUp then
  if nreq > 0 then
    redis.call('ZADD', KEYS[2], num(now), num(now) .. '-' .. lease)
    redis.call('PEXPIRE', KEYS[2], ttl(span))
    nc = nc + 1
    nfree = free()
  end
  if ntok > 0 and cost > 0 then
    bucket = now - now % g
    redis.call('HINCRBY', KEYS[3], num(bucket), num(cost))
    redis.call('PEXPIRE', KEYS[3], ttl(span + g))
    tsum = tsum + cost
  end
  if mi > 0 then redis.call('SET', KEYS[4], num(now), 'PX', ttl(mi)) end
  if mc > 0 then
    redis.call('ZADD', KEYS[5], num(now + lttl), lease)
    redis.call('PEXPIRE', KEYS[5], ttl(lttl))
  end
end
return {1, now, '', 0, '', 0, bucket, nc, nfree, tsum}
`)

// settleScript charges delta more tokens now, or refunds up to -delta from a bucket.
var settleScript = redis.NewScript(luaPrelude + `
local d, bucket, g, span = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
if d > 0 then
  redis.call('HINCRBY', KEYS[1], num(now - now % g), num(d))
  redis.call('PEXPIRE', KEYS[1], num(math.ceil((span + g) / 1000) + 1000))
elseif d < 0 then
  local v = tonumber(redis.call('HGET', KEYS[1], bucket) or '0')
  if v > 0 then redis.call('HINCRBY', KEYS[1], bucket, num(-math.min(-d, v))) end
end
return 1
`)

// blockScript sets a learned block for ARGV[1] microseconds unless a longer one is set.
var blockScript = redis.NewScript(luaPrelude + `
local untl = now + tonumber(ARGV[1])
local cur = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
if untl > cur then
  redis.call('HSET', KEYS[1], 'until', num(untl), 'src', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], num(math.ceil((untl - now) / 1000) + 1000))
end
return 1
`)
