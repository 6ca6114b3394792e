package script

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
	"time"
)

// backstopWhat is what a worker's memory backstop bounds: macOS does not
// enforce RLIMIT_AS, so the worker watches its own resident memory.
const backstopWhat = "resident memory"

// backstopBy is what stops a worker at its backstop.
const backstopBy = "by its own watch"

// backstopRoom is the resident memory a worker may reach: above the bound
// by the runtime's own and the garbage the collector has not yet freed;
// only what the sampler could not stop in time reaches it.
func backstopRoom(maxMemory int64) int64 { return 2*maxMemory + 256<<20 }

func workerSupported() error { return nil }

// workerAttr is nil: macOS has no parent-death signal. A worker whose
// parent died finds its stdin closed, and its CPU time is bounded.
func workerAttr() *syscall.SysProcAttr { return nil }

// limitSelf bounds the worker before it reads any code: the Go heap's soft
// limit at the memory bound (the run's own sampler stops the script when
// its live heap passes it), CPU time as a backstop behind the parent's
// wall-clock deadline, and, as a last resort, its resident memory: past
// backstopRoom the worker exits, saying so on stderr in the words the
// parent reads as out of memory.
func limitSelf(maxMemory int64, cpuSeconds int) error {
	debug.SetMemoryLimit(maxMemory + 32<<20)
	if cpuSeconds > 0 {
		c := uint64(2*cpuSeconds + 2)
		if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: c, Max: c + 1}); err != nil {
			return err
		}
	}
	bound := backstopRoom(maxMemory)
	// it lives as long as the worker process, which runs one script
	go watchPeak(context.Background(), 10*time.Millisecond, bound, selfPeakResident, func(p int64) {
		fmt.Fprintf(os.Stderr, "script-worker: out of memory: resident memory %d MiB past its %d MiB backstop\n", p>>20, bound>>20)
		os.Exit(3)
	})
	return nil
}

// selfPeakResident is this process's peak resident memory in bytes
// (macOS's ru_maxrss counts bytes).
func selfPeakResident() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss
}

// peakRSS is a finished process's peak resident memory in bytes.
func peakRSS(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}
