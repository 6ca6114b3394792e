package ratelimit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// leaseStore admits every call with a lease, ending the caller's context (its cancel is
// in the context) just before it answers, and records the leases released.
type leaseStore struct {
	fakeStore
	mu       sync.Mutex
	released []string
}

type cancelKey struct{}

func (s *leaseStore) Admit(ctx context.Context, a *Admission) (Decision, error) {
	if cancel, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
		cancel()
	}
	return Decision{OK: true, Lease: "lease-1"}, nil
}

func (s *leaseStore) Release(_ context.Context, _, lease string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released = append(s.released, lease)
	return nil
}

// TestAdmissionOfACallerThatLeftIsReleased: the queue handed a ticket to a caller whose
// context had ended while the store decided; nobody sends that call or releases it, and
// its lease held a slot of every replica.
func TestAdmissionOfACallerThatLeftIsReleased(t *testing.T) {
	st := &leaseStore{}
	l, err := New(Options{Store: st,
		Endpoints: []Endpoint{{ID: "svc.get", Upstream: "up"}},
		Budgets:   []Budget{{Match: "up", MaxConcurrent: 2, QueueTimeout: time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err = l.Acquire(context.WithValue(ctx, cancelKey{}, context.CancelFunc(cancel)), Request{Endpoint: "svc.get"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire: %v, want context.Canceled", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if got := len(st.released); got != 1 {
		t.Errorf("%d leases released, want 1", got)
	}
	up := l.upstream("up")
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.inflight != 0 {
		t.Errorf("%d calls in flight, want 0", up.inflight)
	}
}
