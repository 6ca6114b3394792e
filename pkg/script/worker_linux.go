package script

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"
)

// backstopWhat is what a worker's memory backstop bounds.
const backstopWhat = "address space"

// backstopBy is what stops a worker at its backstop.
const backstopBy = "by the OS"

// backstopRoom is how much address space a worker may map past what it
// had mapped at its start: far above the memory bound, since Go reserves
// address space it does not use, and only what the sampler could not stop
// in time reaches it.
func backstopRoom(maxMemory int64) int64 { return 2*maxMemory + 1<<30 }

func workerSupported() error { return nil }

// workerAttr kills the worker when specgate dies, so no script outlives
// the server that ran it.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// limitSelf bounds the worker before it reads any code: the Go heap's soft
// limit at the memory bound (the collector works harder near it, and the
// run's own sampler stops the script when its live heap passes it), and
// the address space, as a last resort only, at what the process has mapped
// now plus backstopRoom: an allocation too large and too quick for the
// sampler then fails in this process and kills it, not the server. The
// address space counts what Go reserves (arenas, stacks, the collector's
// own needs) as well as what the script holds, so a limit near the bound
// killed scripts holding a fraction of it. CPU time is bounded too, as a
// backstop behind the parent's wall-clock deadline (the collector may use
// more than one core, hence the room).
func limitSelf(maxMemory int64, cpuSeconds int) error {
	debug.SetMemoryLimit(maxMemory + 32<<20)
	mapped := vmSize()
	if mapped <= 0 {
		mapped = 1 << 30
	}
	as := uint64(mapped + backstopRoom(maxMemory) + raceAddressRoom)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return err
	}
	if cpuSeconds > 0 {
		c := uint64(2*cpuSeconds + 2)
		if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: c, Max: c + 1}); err != nil {
			return err
		}
	}
	return nil
}

// vmSize is the process's mapped address space in bytes, from
// /proc/self/status; 0 when unknown.
func vmSize() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmSize:")); ok {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// peakRSS is a finished process's peak resident memory in bytes.
func peakRSS(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10
	}
	return 0
}
