package answer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// ended is a context that has already ended: Acquire with it takes a slot
// only if one is free at the call, so it tells without waiting.
func ended(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	return ctx
}

// The jq slots were shared by all principals: 8 heavy filters from one made
// another's `length` wait about 1s, and 2 of 8 timed out. Now ada holds at
// most half of the slots, and bob runs at once while ada's filters hold
// theirs and more of hers wait.
func TestOnePrincipalsJQFiltersLeaveSlotsForAnother(t *testing.T) {
	slots := NewJQSlots(8)
	const ada, bob = "ada/acme", "bob/acme"
	ctx := t.Context()

	// Ada's 8 heavy filters: the first half take slots and hold them, the
	// rest wait until ada's context ends.
	var held []func()
	for range slots.Share() {
		release, err := slots.Acquire(ended(ctx), ada)
		if err != nil {
			t.Fatalf("ada's filter %d found no free slot: %v", len(held)+1, err)
		}
		held = append(held, release)
	}
	adaWaits, stopAda := context.WithCancel(ctx)
	var wg sync.WaitGroup
	waited := make(chan error, 8-slots.Share())
	for range 8 - slots.Share() {
		wg.Go(func() {
			release, err := slots.Acquire(adaWaits, ada)
			if err == nil {
				release()
			}
			waited <- err
		})
	}
	if _, err := slots.Acquire(ended(ctx), ada); err == nil {
		t.Fatalf("ada took more than her share of %d of %d slots", slots.Share(), slots.Size())
	}

	// Bob runs at once: a slot is free for him with no wait.
	release, err := slots.Acquire(ended(ctx), bob)
	if err != nil {
		t.Fatalf("bob waits behind ada's filters: %v", err)
	}
	release()
	got, err := compileJQ(t, "length").Run(ctx, []any{1, 2, 3}, JQLimits{Slots: slots, Owner: bob, Timeout: time.Minute})
	if err != nil || fmt.Sprint(got) != "3" {
		t.Fatalf("bob's length: %v, %v", got, err)
	}

	// Ada's own next filter waits for one of hers and says why.
	_, err = compileJQ(t, "length").Run(ctx, []any{1}, JQLimits{Slots: slots, Owner: ada, Timeout: 10 * time.Millisecond})
	if je := asJQError(t, err, JQTimeout); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ada past her share: %q", je.Msg)
	}

	// As ada's filters end, her waiting ones run.
	for _, release := range held {
		release()
		release() // a second release frees nothing more
	}
	wg.Wait()
	stopAda()
	close(waited)
	for err := range waited {
		if err != nil {
			t.Errorf("ada's waiting filter did not run once hers ended: %v", err)
		}
	}
	slots.mu.Lock()
	defer slots.mu.Unlock()
	if slots.used != 0 || len(slots.held) != 0 {
		t.Errorf("after every filter ended: %d slots used, held %v", slots.used, slots.held)
	}
}

// Two slots are one for each of two principals; fewer are raised to two.
func TestJQSlotsShareIsHalf(t *testing.T) {
	for _, tt := range []struct{ n, size, share int }{{0, 2, 1}, {1, 2, 1}, {2, 2, 1}, {3, 3, 1}, {8, 8, 4}} {
		s := NewJQSlots(tt.n)
		if s.Size() != tt.size || s.Share() != tt.share {
			t.Errorf("NewJQSlots(%d): size %d share %d, want %d and %d", tt.n, s.Size(), s.Share(), tt.size, tt.share)
		}
	}
}
