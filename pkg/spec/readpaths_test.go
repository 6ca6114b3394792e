package spec

import (
	"sync/atomic"
	"testing"
)

func TestEachParallelCallsEveryIndexOnce(t *testing.T) {
	for _, workers := range []int{1, 2, 8} {
		calls := make([]atomic.Int32, 100)
		eachParallel(len(calls), workers, func(i, w int) {
			if w < 0 || w >= workers {
				t.Errorf("worker %d of %d", w, workers)
			}
			calls[i].Add(1)
		})
		for i := range calls {
			if n := calls[i].Load(); n != 1 {
				t.Errorf("%d workers: index %d called %d times", workers, i, n)
			}
		}
	}
}

// A panic reaches the caller as a loop in order would raise it: the one of
// the first index that panics.
func TestEachParallelRaisesTheFirstPanic(t *testing.T) {
	for _, workers := range []int{1, 2, 8} {
		got := func() (r any) {
			defer func() { r = recover() }()
			eachParallel(50, workers, func(i, _ int) {
				if i >= 20 && i%5 == 0 {
					panic(i)
				}
			})
			return nil
		}()
		if got != 20 {
			t.Errorf("%d workers: recovered %v, want 20", workers, got)
		}
	}
}
