//go:build !linux && !darwin

package spec

import "os"

// statOf is fi's fileStat; false where the file system gives no inode or
// status-change time: every start hashes the file.
func statOf(os.FileInfo) (fileStat, bool) { return fileStat{}, false }
