// Package redisstore keeps the state that several replicas of specgate share in one Redis
// or a Redis Cluster, on one Client (Dial) with one key scheme: the prefix, a hash tag,
// a part, so that what one script touches is on one slot.
//
//   - Store is the ratelimit.Store: one Lua script per admission checks and charges every
//     limit of a call atomically with the clock of the Redis node that runs it.
//   - Answers is the answer.AnswerStore, so that any replica serves read_response.
//   - SpendOnce and SharedKey keep the approvals' signing key and spent request states.
//
// Every key carries a TTL.
package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/pkg/ratelimit"
)

// Defaults of Options.
const (
	DefaultKeyPrefix     = "specgate:"
	DefaultFallbackShare = 0.34
	DefaultTimeout       = 250 * time.Millisecond
	DefaultProbeInterval = 500 * time.Millisecond
	// DefaultHeartbeat is how often Redis is pinged while it answers, so that an idle
	// replica's readiness says degraded within seconds of Redis going away.
	DefaultHeartbeat = 2 * time.Second
	DefaultLeaseTTL  = 10 * time.Second
)

// Options configure a Store. The zero value talks to redis://127.0.0.1:6379/0.
type Options struct {
	// Client is the Redis to use, shared with the answer store and the approvals, and
	// its key prefix; the store does not close it. Nil: a client is made from URL and
	// closed by Close.
	Client *Client
	// URL is used when Client is nil: redis://, rediss:// or unix://, as go-redis parses
	// it. With Cluster, go-redis's cluster form: redis://host1:port?addr=host2:port, any
	// number of seed nodes. Empty: redis://127.0.0.1:6379/0.
	URL string
	// Cluster makes the client from URL a Redis Cluster client. Ignored with Client.
	Cluster bool
	// KeyPrefix starts every key the store writes. Empty: Client's prefix, else
	// "specgate:".
	KeyPrefix string
	// FallbackShare is the part of each budget one replica uses while Redis is
	// unreachable: floor(share × limit), at least 1; cooldowns and minimum intervals
	// stretch by 1/share. In (0, 1]. Zero: 0.34, so three replicas stay within a budget.
	FallbackShare float64
	// Timeout bounds each call to Redis (the caller's context may end it sooner). A call
	// that gets no answer within it is not yet an outage (a loaded Redis or machine is
	// slow, and the other replicas may still reach it): the store pings the part the call
	// went to, with ConfirmTimeout, and only when that gets no answer either is the part
	// unreachable (the fallback share) until a probe answers; when it answers, the call's
	// error wraps ratelimit.ErrStoreSlow and the limiter holds the call instead. A refused
	// or reset connection makes the part unreachable at once. Zero: 250ms.
	Timeout time.Duration
	// ProbeInterval is how often an unreachable part of the store is pinged. Zero: 500ms.
	ProbeInterval time.Duration
	// Heartbeat is how often Redis is pinged while every part of it answers: without it
	// a replica that makes no call would not notice Redis going away. Zero: 2s;
	// negative: never.
	Heartbeat time.Duration
	// LeaseTTL is how long a concurrency lease lives past its last renewal: the store
	// renews the leases of its calls in flight every LeaseTTL/3, so a replica that was
	// killed holds its slots at most this long. Zero: 10s.
	LeaseTTL time.Duration
	// OnError, when not nil, is called after each failed call to Redis (for a metric); it
	// must not block.
	OnError func()
	// Logger gets one line each time a part of the store becomes unreachable and each
	// time it answers again. Nil: nothing is logged.
	Logger *slog.Logger
}

// Store is the ratelimit.Store on Redis. Keys (after the prefix), each group of keys one
// script touches sharing a hash tag, so that with Redis Cluster every admission is one
// script on one slot and different upstreams spread over the cluster:
//
//	{upstream}:cd:{endpoint}    last admission (cooldown) of an endpoint of the upstream
//	{endpoint}:cd:{endpoint}    the same for an endpoint with no upstream
//	{upstream}:req              sorted set of admissions (requests window)
//	{upstream}:tok              hash of token buckets (tokens window)
//	{upstream}:last             last admission (minimum interval)
//	{upstream}:lease            sorted set of concurrency leases by expiry
//	{upstream}:epoch            when the tag's state was first written (see Decision.Epoch)
//	{upstream}:who              sorted set of the replicas (stores) that called the upstream, by time
//	{upstream}:ho               the hand-over of the requests window after the store came back
//	{upstream}:away             the replicas not back since the hand-over began, by when their share is freed
//	{upstream}:blk:{resource}   learned block: until, source
//	{key}:w:{name}              sorted set of a Window's events for one key
//
// When Redis does not answer (also at start; a call that only timed out, when a ping with
// a longer deadline gets no answer either) the store is degraded: with one Redis, as a
// whole; with Redis Cluster, for the slots whose calls failed, so that only the upstreams
// on them fall back to their share (a failure that names no slot, such as no seed
// answering, degrades the whole store). A background probe pings what did not answer
// every ProbeInterval until it does; Close stops it. A Store is safe for concurrent use.
type Store struct {
	c        redis.UniversalClient
	cluster  *redis.ClusterClient // c, when it is a cluster client
	own      bool
	prefix   string
	share    float64
	timeout  time.Duration
	confirm  time.Duration // the deadline of a probe: see ConfirmTimeout
	awayHold time.Duration // how long past a window a hand-over keeps the share of a replica not back
	leaseTTL time.Duration
	onError  func()
	log      *slog.Logger
	id       string // this store's part of lease and event ids
	seq      atomic.Uint64

	ndown atomic.Int32 // whole (1) plus the slots in down: zero while everything answers

	mu      sync.Mutex // guards whole, down and probing
	whole   *outage
	down    map[int]*outage
	probing map[int]*probeCall // by slot (-1: the whole store), the probe after a timeout

	calls sync.WaitGroup // scripts running, see run
	stop  chan struct{}
	done  chan struct{}

	leaseMu sync.Mutex
	leases  map[string]map[string]bool // by group, the leases of this store's calls in flight
	renewed chan struct{}              // closed when the renewal ends, see renew
}

var _ ratelimit.Store = (*Store)(nil)

// New returns a store on the Redis of opts. It pings Redis once: when Redis does not
// answer, the store starts degraded rather than failing. The error is for options that
// make no sense. Close the store when done.
func New(ctx context.Context, opts Options) (*Store, error) {
	s := &Store{
		prefix:   opts.KeyPrefix,
		share:    opts.FallbackShare,
		timeout:  opts.Timeout,
		leaseTTL: opts.LeaseTTL,
		onError:  opts.OnError,
		log:      opts.Logger,
		id:       strconv.FormatUint(rand.Uint64(), 36),
		down:     map[int]*outage{},
		probing:  map[int]*probeCall{},
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		leases:   map[string]map[string]bool{},
		renewed:  make(chan struct{}),
	}
	if opts.Client != nil {
		s.c = opts.Client.rdb
		if s.prefix == "" {
			s.prefix = opts.Client.prefix
		}
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
		s.timeout = DefaultTimeout
	}
	s.confirm = ConfirmTimeout(s.timeout)
	if s.leaseTTL <= 0 {
		s.leaseTTL = DefaultLeaseTTL
	}
	probe := opts.ProbeInterval
	if probe <= 0 {
		probe = DefaultProbeInterval
	}
	// a hand-over keeps the share of a replica not back for a window (what a replica
	// killed on its share admitted there), and the few probe intervals a live one takes
	// to come back (its slot map reloaded)
	s.awayHold = 4 * probe
	if s.c == nil {
		// every call's context bounds it by Timeout; the sockets allow a probe longer
		c, err := dial(opts.URL, opts.Cluster, s.confirm)
		if err != nil {
			return nil, err
		}
		s.c, s.own = c, true
	}
	s.cluster, _ = s.c.(*redis.ClusterClient)
	if err := s.ping(ctx); err != nil {
		s.fail("", err)
	}
	beat := opts.Heartbeat
	if beat == 0 {
		beat = DefaultHeartbeat
	}
	go s.probe(probe, beat)
	go s.renew(max(s.leaseTTL/3, time.Millisecond))
	return s, nil
}

// Close stops the probe and closes the client the store made.
func (s *Store) Close() error {
	select {
	case <-s.stop:
		return nil
	default:
	}
	close(s.stop)
	<-s.done
	<-s.renewed
	s.calls.Wait()
	if s.own {
		return s.c.Close()
	}
	return nil
}

// FallbackShare is the part of each budget one replica uses while Redis is unreachable.
func (s *Store) FallbackShare() float64 { return s.share }

// slot is the cluster slot of group's keys; 0 with one Redis.
func (s *Store) slot(group string) int {
	if s.cluster == nil {
		return 0
	}
	return slotOf(s.key(group, ""))
}

// tag is the hash tag of group's keys, braces included.

// key is the key of part in group.
func (s *Store) key(group, part string) string { return key(s.prefix, group, part) }

// run runs a script on group's keys bounded by ctx and the store's timeout. An error
// marks group's part of the store unreachable as failed says: not when ctx itself ended
// (the caller gave up, which says nothing of Redis), nor for a timeout when a probe
// right after it answers (the error then wraps ratelimit.ErrStoreSlow); decides is
// passed on to failed.
//
// go-redis bounds a call by the context's deadline but does not watch its cancellation,
// so the script runs on its own goroutine (ended by the timeout at the latest, and waited
// for by Close) and a cancelled caller returns at once. The script may still charge
// after that: orphan, when not nil, is handed a reply that came after its caller left,
// so that it gives back what the script took (a concurrency lease left in Redis would
// hold a slot of every replica until its TTL).
func (s *Store) run(ctx context.Context, group string, decides bool, sc *redis.Script, keys []string, orphan func(any), args ...any) (any, error) {
	type reply struct {
		v   any
		err error
	}
	const (
		waiting = iota
		answered
		left
	)
	var state atomic.Int32
	done := make(chan reply, 1)
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
		defer cancel()
		v, err := sc.Run(cctx, s.c, keys, args...).Result()
		if state.CompareAndSwap(waiting, answered) {
			done <- reply{v, err}
			return
		}
		if err == nil && orphan != nil {
			orphan(v)
		}
	}()
	var r reply
	select {
	case <-ctx.Done():
		if state.CompareAndSwap(waiting, left) {
			return nil, ctx.Err()
		}
		// the reply is on its way: taking it is the one way its charge is not lost
		r = <-done
	case r = <-done:
	}
	if r.err != nil {
		return nil, s.failed(ctx, group, decides, r.err)
	}
	return r.v, nil
}

// hold records that this store's call in group holds lease (on), or no longer does.
func (s *Store) hold(group, lease string, on bool) {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	m := s.leases[group]
	switch {
	case on && m == nil:
		s.leases[group] = map[string]bool{lease: true}
	case on:
		m[lease] = true
	case m != nil:
		delete(m, lease)
		if len(m) == 0 {
			delete(s.leases, group)
		}
	}
}

// renew extends, every period, the leases of this store's calls in flight by the lease
// TTL, so that a lease outlives its call however long the call runs while a replica that
// is killed holds its slots for one TTL at most (a lease of a fixed two minutes held 2 of
// 6 slots of every replica that long after a SIGKILL). A renewal that fails is tried
// again at the next period; while Redis is unreachable the fallback share governs.
func (s *Store) renew(period time.Duration) {
	defer close(s.renewed)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.leaseMu.Lock()
		groups := make(map[string][]any, len(s.leases))
		for g, m := range s.leases {
			args := []any{micros(s.leaseTTL)}
			for l := range m {
				args = append(args, l)
			}
			groups[g] = args
		}
		s.leaseMu.Unlock()
		for g, args := range groups {
			if !s.Available(g) {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
			_ = renewScript.Run(ctx, s.c, []string{s.key(g, "lease")}, args...).Err() // tried again next period
			cancel()
		}
	}
}

// micros converts d to whole microseconds, rounded up: a limit never shrinks in Redis.
func micros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}

// Admit checks and charges one admission with one script on one slot.
func (s *Store) Admit(ctx context.Context, a *ratelimit.Admission) (ratelimit.Decision, error) {
	lease := s.id + ":" + strconv.FormatUint(s.seq.Add(1), 36)
	g := a.Group()
	b := &a.Budget
	keys := []string{
		s.key(g, "cd:"+a.Endpoint),
		s.key(g, "req"),
		s.key(g, "tok"),
		s.key(g, "last"),
		s.key(g, "lease"),
		s.key(g, "blk:"),
		s.key(g, "blk:"+a.Resource),
		s.key(g, "epoch"),
		s.key(g, "who"),
		s.key(g, "ho"),
		s.key(g, "away"),
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
		span = micros(b.Span())
	}
	units := min(max(a.Units, 1), max(int(requests), 1))
	orphan := func(v any) {
		var n int
		var tok int64
		if requests > 0 {
			n = units
		}
		if tokens > 0 {
			tok = a.Tokens
		}
		s.unadmit(g, lease, n, tok, span, v)
	}
	args := []any{charge, cooldown, requests, span, tokens, a.Tokens, bucketWidth(span),
		minIv, maxConc, max(micros(a.CallEstimate), 1000), lease, micros(s.leaseTTL), boolInt(a.Upstream != ""),
		units, s.id, a.Epoch, boolInt(a.Rejoin), s.replicas(),
		max(int64(math.Floor(s.share*float64(requests))), 1), micros(b.Span() + s.awayHold), micros(max(b.Span(), whoMemory))}
	for _, age := range a.Backlog {
		args = append(args, micros(age))
	}
	v, err := s.run(ctx, g, true, admitScript, keys, orphan, args...)
	if err != nil {
		return ratelimit.Decision{}, err
	}
	r, ok := v.([]any)
	if !ok || len(r) != 11 {
		err := errors.New("redis store: unexpected reply to admit")
		s.fail(g, err)
		return ratelimit.Decision{}, err
	}
	d := ratelimit.Decision{
		OK:           toInt(r[0]) == 1,
		Now:          time.UnixMicro(toInt(r[1])),
		Kind:         ratelimit.Kind(toString(r[2])),
		Wait:         time.Duration(toInt(r[3])) * time.Microsecond,
		Source:       toString(r[4]),
		Cooldown:     toInt(r[5]) == 1,
		Bucket:       toInt(r[6]),
		Requests:     int(toInt(r[7])),
		RequestsFree: time.Duration(toInt(r[8])) * time.Microsecond,
		Tokens:       toInt(r[9]),
		Epoch:        toInt(r[10]),
	}
	if !d.OK {
		d.Scope = ratelimit.ScopeProxy
		if d.Kind == ratelimit.KindLearned {
			d.Scope = ratelimit.ScopeUpstream
		}
	} else if a.Charge && maxConc > 0 {
		d.Lease = lease
		s.hold(g, lease, true)
	}
	return d, nil
}

// whoMemory is at least how long a replica that called an upstream is remembered by the
// store, so that a hand-over keeps its share while it may still be on it (see admit.lua):
// longer than an idle spell before an outage and the outage itself.
const whoMemory = 10 * time.Minute

// replicas is how many replicas the fallback share stands for, ceil(1/share): a hand-over
// shares the window's remainder between at least that many, since the replicas that
// called the upstream are not known after a store that restarted empty.
func (s *Store) replicas() int {
	return max(int(math.Ceil(1/s.share-1e-9)), 1)
}

// unadmit gives back what an admission of units and tokens charged when its caller had
// left before the reply v came: the concurrency lease, the units in the requests window
// and the tokens. The cooldown and the minimum interval stay charged, on the strict side.
func (s *Store) unadmit(group, lease string, units int, tokens, span int64, v any) {
	r, ok := v.([]any)
	if !ok || len(r) != 11 || toInt(r[0]) != 1 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	var err error
	if units > 0 {
		// the members admit.lua wrote for the call's units
		now := strconv.FormatInt(toInt(r[1]), 10)
		ms := make([]any, units)
		for u := range units {
			ms[u] = now + "-" + lease + "-" + strconv.Itoa(u+1)
		}
		err = s.c.ZRem(ctx, s.key(group, "req"), ms...).Err()
	}
	if bucket := toInt(r[6]); bucket != 0 && tokens > 0 && err == nil {
		err = settleScript.Run(ctx, s.c, []string{s.key(group, "tok")}, -tokens, bucket, bucketWidth(span), span).Err()
	}
	if err == nil {
		// the lease last, so that a slot seen free has all of the call given back
		err = s.c.ZRem(ctx, s.key(group, "lease"), lease).Err()
	}
	if err != nil {
		s.logf(slog.LevelWarn, "redis store: an abandoned admission was not given back; its lease ends with its TTL",
			"group", group, "reason", describe(err))
	}
}

// bucketWidth is the token bucket width for a span, in microseconds, as the memory
// store has it.
func bucketWidth(spanMicros int64) int64 {
	return micros(ratelimit.TokenBucketWidth(time.Duration(spanMicros) * time.Microsecond))
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
func (s *Store) Release(ctx context.Context, upstream, lease string) error {
	s.hold(upstream, lease, false)
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.c.ZRem(cctx, s.key(upstream, "lease"), lease).Err(); err != nil {
		return s.failed(ctx, upstream, false, err)
	}
	return nil
}

// Settle corrects a call's token charge.
func (s *Store) Settle(ctx context.Context, upstream string, bucket, delta int64, span time.Duration) error {
	sp := micros(span)
	_, err := s.run(ctx, upstream, false, settleScript, []string{s.key(upstream, "tok")}, nil,
		delta, bucket, bucketWidth(sp), sp)
	return err
}

// Block holds the upstream's quota resource for d.
func (s *Store) Block(ctx context.Context, upstream, resource string, d time.Duration, source string) error {
	if d <= 0 {
		return nil
	}
	_, err := s.run(ctx, upstream, false, blockScript, []string{s.key(upstream, "blk:"+resource)}, nil, micros(d), source)
	return err
}

// CountEvent counts one event of a Window's key.
func (s *Store) CountEvent(ctx context.Context, e ratelimit.Event) (ratelimit.EventCount, error) {
	uid := s.id + ":" + strconv.FormatUint(s.seq.Add(1), 36)
	v, err := s.run(ctx, e.Key, true, countScript, []string{s.key(e.Key, "w:"+e.Window)}, nil, e.Limit, micros(e.Span), uid)
	if err != nil {
		return ratelimit.EventCount{}, err
	}
	r, ok := v.([]any)
	if !ok || len(r) != 4 {
		err := errors.New("redis store: unexpected reply to count")
		s.fail(e.Key, err)
		return ratelimit.EventCount{}, err
	}
	return ratelimit.EventCount{
		Allowed:   toInt(r[0]) == 1,
		Wait:      time.Duration(toInt(r[1])) * time.Microsecond,
		Remaining: int(toInt(r[2])),
		Count:     toInt(r[3]),
	}, nil
}

var (
	//go:embed prelude.lua
	prelude string
	//go:embed admit.lua
	admitLua string
	//go:embed settle.lua
	settleLua string
	//go:embed block.lua
	blockLua string
	//go:embed count.lua
	countLua string
	//go:embed renew.lua
	renewLua string

	admitScript  = redis.NewScript(prelude + admitLua)
	settleScript = redis.NewScript(prelude + settleLua)
	blockScript  = redis.NewScript(prelude + blockLua)
	countScript  = redis.NewScript(prelude + countLua)
	renewScript  = redis.NewScript(prelude + renewLua)
)
