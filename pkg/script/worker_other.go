//go:build !linux && !darwin && !windows

package script

import (
	"os"
	"runtime/debug"
	"syscall"
)

const backstopWhat = "the Go heap's soft limit"

// backstopBy is what stops a worker at its backstop.
const backstopBy = "by the OS"

func backstopRoom(maxMemory int64) int64 { return 32 << 20 }

func workerSupported() error { return nil }

func workerAttr() *syscall.SysProcAttr { return nil }

// limitSelf sets only the Go heap's soft limit where the address space
// cannot be bounded the Linux way: the run's own sampler then holds the
// memory bound, inside the worker's own heap.
func limitSelf(maxMemory int64, cpuSeconds int) error {
	debug.SetMemoryLimit(maxMemory + 32<<20)
	return nil
}

func peakRSS(*os.ProcessState) int64 { return 0 }
