package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/pkg/ratelimit"
)

// What answers and what does not: a call that fails marks its part of the store (all of
// it with one Redis, its slot with a cluster) unreachable, unless it only timed out and a
// probe right after it answers (a slow Redis is not an outage); a probe brings the part
// back.

// ConfirmTimeout is the deadline of a probe (a PING, or with a cluster an EXISTS on the
// slot) for a store of timeout: after a call timed out, before the part of the store is
// marked unreachable; the periodic probe and the heartbeat. Longer than the call's own
// timeout: a slow answer is not an outage.
func ConfirmTimeout(timeout time.Duration) time.Duration { return max(2*timeout, time.Second) }

// probeCall is one probe of a part of the store after a call to it timed out, shared by
// every call that timed out meanwhile; err is set before done closes.
type probeCall struct {
	done chan struct{}
	err  error
}

// outage is one part of the store that did not answer: since when, why, and a key of
// its slot to probe it by.
type outage struct {
	since  time.Time
	reason string
	key    string
}

// Available reports whether the part of the store that holds group answered its last
// call or probe; "" asks whether all of it did.
func (s *Store) Available(group string) bool {
	if s.ndown.Load() == 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.whole != nil || group == "" {
		return false
	}
	return s.down[s.slot(group)] == nil
}

// Degraded reports whether Redis, or part of the cluster, is unreachable, since when and
// why.
func (s *Store) Degraded() (bool, time.Time, string) {
	if s.ndown.Load() == 0 {
		return false, time.Time{}, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.whole; o != nil {
		return true, o.since, o.reason
	}
	var first *outage
	for _, o := range s.down {
		if first == nil || o.since.Before(first.since) {
			first = o
		}
	}
	if first == nil {
		return false, time.Time{}, ""
	}
	return true, first.since, fmt.Sprintf("redis cluster: %d of %d slots unreachable, the upstreams on them run on the fallback share: %s",
		len(s.down), numSlots, first.reason)
}

// fail marks the part of the store that holds group (all of it for "" or with one
// Redis) unreachable after err.
func (s *Store) fail(group string, err error) {
	if s.onError != nil {
		s.onError()
	}
	reason := describe(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if group == "" || s.cluster == nil {
		if s.whole == nil {
			s.whole = &outage{since: time.Now(), reason: reason}
			s.ndown.Add(1)
			s.logf(slog.LevelWarn, "redis store unreachable: every replica runs on its fallback share until it answers",
				"reason", reason, "share", s.share)
		}
		return
	}
	slot := slotOf(s.key(group, ""))
	if s.down[slot] == nil {
		s.down[slot] = &outage{since: time.Now(), reason: reason, key: s.key(group, "probe")}
		s.ndown.Add(1)
		s.logf(slog.LevelWarn, "redis cluster slot unreachable: the upstreams on it run on the fallback share until it answers",
			"slot", slot, "group", group, "reason", reason, "share", s.share)
	}
}

// describe says what err means for the operator.
func describe(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "cluster support disabled"):
		return "redis unreachable: a seed is not a cluster node (use store.backend: redis for a single Redis): " + msg
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "i/o timeout"):
		return "redis unreachable: no answer within the store timeout: " + msg
	case strings.HasPrefix(msg, "NOSCRIPT") || strings.HasPrefix(msg, "NOPERM") || strings.HasPrefix(msg, "ERR") ||
		strings.HasPrefix(msg, "CROSSSLOT") || strings.HasPrefix(msg, "BUSY"):
		return "redis refused the script: " + msg
	}
	return "redis unreachable: " + msg
}

func (s *Store) logf(level slog.Level, msg string, args ...any) {
	if s.log != nil {
		s.log.Log(context.Background(), level, msg, args...)
	}
}

// ping asks whether Redis answers, within the longer deadline of a probe.
func (s *Store) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.confirm)
	defer cancel()
	return s.c.Ping(ctx).Err()
}

// pingSlot asks the cluster about key, as a script on its slot would go: to the node that
// serves the slot now (following MOVED and ASK), which must also see the cluster up
// (a restarted node answers CLUSTERDOWN until it has rejoined).
func (s *Store) pingSlot(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, s.confirm)
	defer cancel()
	return s.cluster.Exists(ctx, key).Err()
}

func (s *Store) probe(every, beat time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			if s.ndown.Load() != 0 {
				s.probeOnce(context.Background())
				last = now
			} else if beat > 0 && now.Sub(last) >= beat {
				s.heartbeat(context.Background())
				last = now
			}
		}
	}
}

// heartbeat pings Redis while it answers and marks the store unreachable when it does
// not. With Redis Cluster that is when no master answers: one node down degrades only
// its slots, found by the calls that go to them.
func (s *Store) heartbeat(ctx context.Context) {
	if s.cluster == nil {
		if err := s.ping(ctx); err != nil {
			s.fail("", err)
		}
		return
	}
	var ok atomic.Bool
	err := s.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		ctx, cancel := context.WithTimeout(ctx, s.confirm)
		defer cancel()
		err := c.Ping(ctx).Err()
		if err == nil {
			ok.Store(true)
		}
		return err
	})
	if err != nil && !ok.Load() {
		s.fail("", err)
	}
}

// probeOnce pings what did not answer, and marks what answers available again.
func (s *Store) probeOnce(ctx context.Context) {
	s.mu.Lock()
	whole := s.whole != nil
	keys := map[int]string{}
	for slot, o := range s.down {
		keys[slot] = o.key
	}
	s.mu.Unlock()
	if whole {
		if err := s.ping(ctx); err != nil {
			return
		}
		s.mu.Lock()
		if s.whole != nil {
			s.logf(slog.LevelInfo, "redis store answers again: back to the shared limits", "down_for", time.Since(s.whole.since).Round(time.Millisecond))
			s.whole = nil
			s.ndown.Add(-1)
		}
		s.mu.Unlock()
	}
	if len(keys) > 0 {
		// a slot that stopped answering may be served by another node now (a replica
		// promoted by a failover): ask the cluster for its slot map again rather than wait
		// for the client's periodic refresh
		s.cluster.ReloadState(ctx)
	}
	for slot, key := range keys {
		if err := s.pingSlot(ctx, key); err != nil {
			continue
		}
		s.mu.Lock()
		if o := s.down[slot]; o != nil {
			s.logf(slog.LevelInfo, "redis cluster slot answers again: back to the shared limits", "slot", slot,
				"down_for", time.Since(o.since).Round(time.Millisecond))
			delete(s.down, slot)
			s.ndown.Add(-1)
		}
		s.mu.Unlock()
	}
}

// failed is the error of a call to group's part of the store that ended with err, and
// marks that part unreachable when it is. A caller whose ctx ended says nothing of
// Redis. A timeout is not an outage by itself: the part is probed with the longer
// deadline of ConfirmTimeout (the caller waits for it, within ctx); when the probe
// answers, the error wraps ratelimit.ErrStoreSlow and the part stays available, else it
// is unreachable. Any other error (refused, reset) makes it unreachable at once. A call
// that does not decide an admission (a release, a settle, a block: what was sent is
// over) does not wait for the probe.
func (s *Store) failed(ctx context.Context, group string, decides bool, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if !timedOut(err) {
		s.fail(group, err)
		return err
	}
	p := s.probeAfter(group, err)
	if !decides {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-p.done:
	}
	if p.err != nil {
		return err
	}
	return fmt.Errorf("%w: %w", ratelimit.ErrStoreSlow, err)
}

// timedOut reports whether err is a call that got no answer in time.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// probeAfter is the probe of group's part of the store after a call to it timed out with
// cause: one at a time per part, shared by the calls that time out meanwhile. A probe
// with no answer marks the part unreachable, as cause and the probe say.
func (s *Store) probeAfter(group string, cause error) *probeCall {
	part := -1
	if s.cluster != nil && group != "" {
		part = s.slot(group)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.probing[part]; p != nil {
		return p
	}
	p := &probeCall{done: make(chan struct{})}
	s.probing[part] = p
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		var err error
		if part < 0 {
			err = s.ping(context.Background())
		} else {
			err = s.pingSlot(context.Background(), s.key(group, "probe"))
		}
		if err != nil {
			s.fail(group, fmt.Errorf("%w; a probe after it: %w", cause, err))
		}
		s.mu.Lock()
		delete(s.probing, part)
		s.mu.Unlock()
		p.err = err
		close(p.done)
	}()
	return p
}
