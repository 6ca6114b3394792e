package script

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// On macOS a worker watches its own resident memory (RLIMIT_AS is not
// enforced there): the watch calls over once, at the first check past the
// bound, and stops with its context.
func TestWatchPeakStopsPastTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rss atomic.Int64
		var overs atomic.Int32
		var at atomic.Int64
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			watchPeak(t.Context(), 10*time.Millisecond, 100, rss.Load, func(p int64) {
				overs.Add(1)
				at.Store(int64(time.Since(start)))
			})
		}()
		time.Sleep(35 * time.Millisecond) // fake time: three checks under the bound
		if overs.Load() != 0 {
			t.Fatal("over called under the bound")
		}
		rss.Store(101)
		<-done
		if overs.Load() != 1 || time.Duration(at.Load()) != 40*time.Millisecond {
			t.Errorf("over called %d times, at %s; want once, at the next check (40ms)", overs.Load(), time.Duration(at.Load()))
		}

		ctx, cancel := context.WithCancel(t.Context())
		stopped := make(chan struct{})
		go func() {
			watchPeak(ctx, time.Millisecond, 100, func() int64 { return 0 }, func(int64) { t.Error("over under the bound") })
			close(stopped)
		}()
		cancel()
		<-stopped
	})
}

func TestWorkerSupportedHere(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the worker is refused on Windows: TestWorkerRefusesOnWindows")
	}
	if err := WorkerSupported(); err != nil {
		t.Errorf("the worker is refused on this platform: %v", err)
	}
}
