package spec

import (
	"os"
	"syscall"
)

// statOf is fi's fileStat; false where the file system gives no inode or
// status-change time.
func statOf(fi os.FileInfo) (fileStat, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStat{}, false
	}
	return fileStat{dev: uint64(st.Dev), ino: uint64(st.Ino), size: fi.Size(), mtime: fi.ModTime().UnixNano(), ctime: st.Ctim.Nano()}, true
}
