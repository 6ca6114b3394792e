package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"time"
)

// A spec file's content key costs a hash of the whole file (17 ms for
// GitHub's 13 MB) at every start. As git's index and Go's build cache do,
// the cache also keeps, by path, the file's identity and change times
// beside the key they were hashed to, and trusts the key when the file's
// device, inode, size, modification and status-change times (to the
// nanosecond) are all the same. The status-change time cannot be set back
// by a program (touch, cp -p, tar and rsync set the modification time,
// not it), so an edit in place, a copy over the file or a rename onto its
// path all make the record stale. A file changed within settleTime of
// being hashed is not recorded: a second edit within the file system's
// clock tick would leave its times as they were.

// settleTime is how long a file must have stood unchanged before its key
// is recorded (the coarsest file time granularity in common use, FAT's).
const settleTime = 2 * time.Second

var statMagic = []byte("SGSTAT1\n")

// fileStat identifies a file's content as the file system reports it.
type fileStat struct {
	dev, ino           uint64
	size, mtime, ctime int64
}

func (s fileStat) bytes() []byte {
	b := make([]byte, 0, 40)
	for _, v := range []uint64{s.dev, s.ino, uint64(s.size), uint64(s.mtime), uint64(s.ctime)} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// statFile is the record of the file at location under opts, in dir's stat
// folder: named by what the content key is derived from besides the
// content (cacheFormat and opts among it), and the file's absolute path.
func statFile(dir, location string, opts Options) (string, bool) {
	abs, err := filepath.Abs(location)
	if err != nil {
		return "", false
	}
	h := keyHash(location, opts)
	h.Write([]byte("stat\x00" + abs))
	return filepath.Join(dir, "stat", hex.EncodeToString(h.Sum(nil))[:32]), true
}

// readStat returns the key recorded in file for a file of stat st.
func readStat(file string, st fileStat) (string, bool) {
	data, err := os.ReadFile(file)
	want := len(statMagic) + 40 + 32 + sha256.Size
	if err != nil || len(data) != want || !bytes.HasPrefix(data, statMagic) {
		return "", false
	}
	body, sum := data[:want-sha256.Size], data[want-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return "", false
	}
	rec := body[len(statMagic):]
	if !bytes.Equal(rec[:40], st.bytes()) || !isKey(rec[40:]) {
		return "", false
	}
	return string(rec[40:]), true
}

// isKey reports whether b is a content key as Cache.key writes it: 32
// lowercase hex digits, so that a record cannot name a file outside the
// cache directory.
func isKey(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return len(b) == 32
}

// writeStat records key for a file of stat st, unless the file changed
// less than settleTime before now. Failing to is no error: the next start
// hashes the file again.
func writeStat(file string, st fileStat, key string, now time.Time) {
	if len(key) != 32 || now.UnixNano()-max(st.mtime, st.ctime) < int64(settleTime) {
		return
	}
	body := append(append(append([]byte(nil), statMagic...), st.bytes()...), key...)
	sum := sha256.Sum256(body)
	if os.MkdirAll(filepath.Dir(file), 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".stat-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(append(body, sum[:]...))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}
