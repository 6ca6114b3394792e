package mock

import (
	"sync"
	"time"
)

// quota is the mock's own rate limit: at most limit admitted requests in
// any sliding window (limit 0: none), and per operation a cooldown between
// two admitted requests (0: none). Refused requests count against nothing.
// It is safe for concurrent use; of N simultaneous admitAt calls that fit one
// last slot, exactly one is admitted.
type quota struct {
	limit    int
	window   time.Duration
	cooldown time.Duration

	mu sync.Mutex
	// admitted holds the times of the admitted requests still inside the
	// window, oldest first (at most limit of them).
	admitted []time.Time
	// last is each operation's latest admitted request.
	last map[string]time.Time
}

// verdict is what one request learns from the quota.
type verdict struct {
	ok bool
	// retryAfter is how long until the request would be admitted, when
	// refused.
	retryAfter time.Duration
	// remaining is what the window has left after this request; reset is
	// when the window is whole again (zero when nothing is counted).
	remaining int
	reset     time.Time
}

func (q *quota) windowed() bool { return q.limit > 0 }

// expire drops the admissions that left the window by now.
func (q *quota) expire(now time.Time) {
	i := 0
	for i < len(q.admitted) && !q.admitted[i].After(now.Add(-q.window)) {
		i++
	}
	q.admitted = q.admitted[i:]
}

// state reports the window at now without admitting anything.
func (q *quota) stateAt(now time.Time) verdict {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.state(now)
}

func (q *quota) state(now time.Time) verdict {
	v := verdict{ok: true}
	if !q.windowed() {
		return v
	}
	q.expire(now)
	v.remaining = q.limit - len(q.admitted)
	if n := len(q.admitted); n > 0 {
		v.reset = q.admitted[n-1].Add(q.window)
	}
	return v
}

// admitAt admits a request to operation op at now, or says how long to
// wait.
func (q *quota) admitAt(op string, now time.Time) verdict {
	q.mu.Lock()
	defer q.mu.Unlock()
	v := q.state(now)
	if q.windowed() && len(q.admitted) >= q.limit {
		v.ok = false
		v.retryAfter = q.admitted[0].Add(q.window).Sub(now)
	}
	if q.cooldown > 0 {
		if last, seen := q.last[op]; seen {
			if wait := last.Add(q.cooldown).Sub(now); wait > 0 {
				v.ok = false
				v.retryAfter = max(v.retryAfter, wait)
			}
		}
	}
	if !v.ok {
		return v
	}
	if q.windowed() {
		q.admitted = append(q.admitted, now)
		v.remaining = q.limit - len(q.admitted)
		v.reset = now.Add(q.window)
	}
	if q.cooldown > 0 {
		if q.last == nil {
			q.last = map[string]time.Time{}
		}
		q.last[op] = now
	}
	return v
}
