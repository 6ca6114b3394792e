package answer

import (
	"context"
	"runtime"
	"sync"
)

// JQSlots bound the jq filters running at once, each within its deadline:
// a filter may allocate a few hundred MB in its second (a cartesian product
// collected in an array), and a burst of them must not add up. Each
// owner (the caller a filter runs for, as JQLimits.Owner names it; "" is
// one owner too) holds at most half of the slots, so one agent's heavy filters always leave a slot
// free for anyone else at once. A JQSlots is safe for concurrent use; the
// zero value has no slots: use NewJQSlots.
type JQSlots struct {
	size  int // slots in all
	share int // slots one principal may hold

	mu   sync.Mutex
	used int
	held map[string]int
	free chan struct{} // closed, and replaced, when a slot is released
}

// NewJQSlots returns n slots (at least 2, so that half is a whole slot).
func NewJQSlots(n int) *JQSlots {
	n = max(n, 2)
	return &JQSlots{size: n, share: n / 2, held: map[string]int{}, free: make(chan struct{})}
}

// defaultJQSlots are the slots of a run whose JQLimits name none.
var defaultJQSlots = NewJQSlots(runtime.GOMAXPROCS(0))

// Size is how many filters may run at once, of all principals.
func (s *JQSlots) Size() int { return s.size }

// Share is how many filters of one principal may run at once.
func (s *JQSlots) Share() int { return s.share }

// Acquire takes a slot for owner, waiting while every slot is
// taken or owner holds its share, until ctx ends (then it returns
// ctx's error). A slot free at the call is taken even if ctx has ended.
// The caller must call release once, when its filter ends.
func (s *JQSlots) Acquire(ctx context.Context, owner string) (release func(), err error) {
	p := owner
	for {
		s.mu.Lock()
		if s.used < s.size && s.held[p] < s.share {
			s.used++
			s.held[p]++
			s.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { s.release(p) }) }, nil
		}
		free := s.free
		s.mu.Unlock()
		select {
		case <-free:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *JQSlots) release(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used--
	if s.held[p]--; s.held[p] <= 0 {
		delete(s.held, p)
	}
	close(s.free)
	s.free = make(chan struct{})
}
