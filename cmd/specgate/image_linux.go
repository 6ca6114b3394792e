package main

import (
	"fmt"
	"os"
	"reflect"
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
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	var total int64
	// this function's own code is in the executable's mapping
	for _, r := range imageRanges(maps, reflect.ValueOf(releaseImage).Pointer()) {
		_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r[0], r[1]-r[0], madvPageout)
		if errno != 0 {
			return total, errno
		}
		total += int64(r[1] - r[0])
	}
	return total, nil
}

// imageRanges returns the [start, end) address ranges of the read-only
// mappings in maps, a /proc/PID/maps listing, of the file whose mapping
// holds the address pc: the executable, for code of its own. The file is
// told by the device and inode the listing gives, not by path or stat(2),
// which can differ from them (on overlayfs, say).
func imageRanges(maps []byte, pc uintptr) [][2]uintptr {
	var image string
	var out [][2]uintptr
	lines := strings.Split(string(maps), "\n")
	for pass := range 2 { // find the file, then its mappings
		for _, line := range lines {
			var start, end uintptr
			var perms, offset, dev, inode string
			// address perms offset dev inode path
			if n, _ := fmt.Sscanf(line, "%x-%x %s %s %s %s", &start, &end, &perms, &offset, &dev, &inode); n < 6 || inode == "0" {
				continue
			}
			file := dev + " " + inode
			if pass == 0 && start <= pc && pc < end {
				image = file
			}
			if pass == 1 && file == image && len(perms) > 1 && perms[1] == '-' && end > start {
				out = append(out, [2]uintptr{start, end})
			}
		}
	}
	return out
}
