package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strconv"
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
	inode := strconv.FormatUint(ino, 10)
	var out [][2]uintptr
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// address perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 || len(f[1]) < 2 || f[1][1] != '-' || f[4] != inode {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, [2]uintptr{uintptr(start), uintptr(end)})
	}
	return out
}
