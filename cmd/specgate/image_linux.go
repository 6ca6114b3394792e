package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// madvPageout is MADV_PAGEOUT (Linux 5.4): reclaim the pages of the range
// now, as memory pressure would, keeping their contents.
const madvPageout = 21

// releaseImage asks the kernel to reclaim the pages of the executable's
// read-only segments (code, read-only data and the function tables) that
// this process has mapped, and returns the bytes of those segments.
//
// Start-up touches most of them once: every package's init, the spec
// loaders, the index builder. Each touch maps a 64 KB run around it, so
// after loading github-full 25 MB of the binary stay resident, half of the
// process's memory, though serving calls runs a small part of that code.
// What serving needs faults back in from the file when next used. The
// writable segments are left alone, and pages the process changed (a
// debugger's breakpoints) keep their contents: reclaim never discards them.
//
// A kernel without MADV_PAGEOUT answers EINVAL and nothing changes.
func releaseImage() (int64, error) {
	exe, err := os.Stat("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	st, ok := exe.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("no inode for /proc/self/exe")
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, r := range imageRanges(maps, st.Ino) {
		_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r[0], r[1]-r[0], madvPageout)
		if errno != 0 {
			return total, errno
		}
		total += int64(r[1] - r[0])
	}
	return total, nil
}

// imageRanges returns the [start, end) address ranges of the read-only
// mappings of the file with inode ino in maps, a /proc/PID/maps listing.
func imageRanges(maps []byte, ino uint64) [][2]uintptr {
	var out [][2]uintptr
	for _, line := range strings.Split(string(maps), "\n") {
		var start, end, inode uint64
		var perms, offset, dev string
		// address perms offset dev inode path
		n, _ := fmt.Sscanf(line, "%x-%x %s %s %s %d", &start, &end, &perms, &offset, &dev, &inode)
		if n == 6 && inode == ino && len(perms) > 1 && perms[1] == '-' && end > start {
			out = append(out, [2]uintptr{uintptr(start), uintptr(end)})
		}
	}
	return out
}
