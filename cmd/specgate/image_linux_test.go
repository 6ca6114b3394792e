package main

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestImageRangesReadOnlyMappingsOfTheFile(t *testing.T) {
	maps := []byte(`00400000-01809000 r-xp 00000000 fe:00 77 /usr/bin/specgate
01809000-02c0c000 r--p 01409000 fe:00 77 /usr/bin/specgate
02c0c000-02e40000 rw-p 0280c000 fe:00 77 /usr/bin/specgate
02e40000-04e90000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 fe:00 770 /usr/lib/libc.so.6
7f0000001000-7f0000002000 r--p 00000000 fe:01 77 /other/fs/same/inode
7f0000002000-7f0000003000 r--p 00000000 fe:00 77 /usr/bin/specgate (deleted)
`)
	got := imageRanges(maps, 0x401234)
	want := [][2]uintptr{{0x400000, 0x1809000}, {0x1809000, 0x2c0c000}, {0x7f0000002000, 0x7f0000003000}}
	if len(got) != len(want) {
		t.Fatalf("ranges = %x, want %x", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("range %d = %x, want %x", i, got[i], want[i])
		}
	}
	if got := imageRanges(maps, 0x10); len(got) != 0 {
		t.Errorf("an address in no file's mapping gave %x", got)
	}
}

// rssFileKB reads how much of the process's resident memory is mapped
// from files.
func rssFileKB(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssFile:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

func TestReleaseImageGivesBackTheBinarysPages(t *testing.T) {
	before := rssFileKB(t)
	n, err := releaseImage()
	if errors.Is(err, syscall.EINVAL) {
		t.Skip("this kernel has no MADV_PAGEOUT")
	}
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKB(t)
	t.Logf("file-backed resident memory %d KB before, %d KB after; %d MB advised", before, after, n>>20)
	if n == 0 {
		t.Fatal("no read-only mapping of the executable found")
	}
	if after >= before {
		t.Errorf("file-backed resident memory went from %d KB to %d KB", before, after)
	}
}
