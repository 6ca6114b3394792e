package spec

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCacheStatRecord: a spec file's content key is recorded by the file's
// stat once the file has settled, read back while the file is unchanged,
// and not trusted once the file was written again, even to the same size
// with its modification time set back.
func TestCacheStatRecord(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("../../testdata", "petstore-v3.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "pets.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := statOf(fi); !ok {
		t.Skip("no inode and status-change time here: every start hashes the file")
	}
	c := Cache{Dir: t.TempDir()}
	opts := Options{Name: "pets"}
	rec, ok := statFile(c.Dir, file, opts)
	if !ok {
		t.Fatal("no record name")
	}
	want := c.key(file, data, opts)
	written := time.Now() // the file's times are no later than this

	// Hashed within settleTime of its last change: not recorded.
	if got, ok := c.fileKey(file, opts, written.Add(-time.Second)); !ok || got != want {
		t.Fatalf("fileKey = %q, %v; want %q", got, ok, want)
	}
	if _, err := os.Stat(rec); err == nil {
		t.Fatal("a file that had not settled was recorded")
	}
	later := written.Add(settleTime + time.Second)
	if got, ok := c.fileKey(file, opts, later); !ok || got != want {
		t.Fatalf("fileKey = %q, %v; want %q", got, ok, want)
	}
	st, _ := statOf(fi)
	if got, ok := readStat(rec, st); !ok || got != want {
		t.Fatalf("record holds %q, %v; want %q", got, ok, want)
	}

	// The record is what answers: one naming another key is believed
	// while the file is unchanged...
	other := "0123456789abcdef0123456789abcdef"
	os.Remove(rec)
	writeStat(rec, st, other, later)
	if got, _ := c.fileKey(file, opts, later); got != other {
		t.Fatalf("fileKey = %q, not the recorded %q", got, other)
	}
	// ...and not once the file is written again, though to the same size
	// and modification time.
	edited := []byte(string(data[:len(data)-2]) + "\n\n")
	if err := os.WriteFile(file, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.fileKey(file, opts, later); got != c.key(file, edited, opts) {
		t.Errorf("fileKey after an edit = %q, want the key of the new content", got)
	}

	// A record that does not hold is ignored.
	for _, bad := range [][]byte{nil, []byte("SGSTAT1\n"), append(readAll(t, rec)[1:], 0)} {
		if err := os.WriteFile(rec, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		now, _ := os.Stat(file)
		nst, _ := statOf(now)
		if _, ok := readStat(rec, nst); ok {
			t.Errorf("record %q was read", bad)
		}
	}
	if got, _ := c.fileKey(file, opts, later); got != c.key(file, edited, opts) {
		t.Errorf("fileKey with a corrupt record = %q, want the key of the content", got)
	}
}

func readAll(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCacheStatRecordKeyNotAPath: a record whose key is not a content key
// (32 hex digits) is ignored, so a record written into the cache directory
// cannot name a catalog file outside it ("../" in Load's file name).
func TestCacheStatRecordKeyNotAPath(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pets.yaml")
	if err := os.WriteFile(file, readAll(t, filepath.Join("../../testdata", "petstore-v3.yaml")), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := statOf(fi)
	if !ok {
		t.Skip("no inode and status-change time here: every start hashes the file")
	}
	c := Cache{Dir: t.TempDir()}
	opts := Options{Name: "pets"}
	rec, _ := statFile(c.Dir, file, opts)
	later := time.Now().Add(settleTime + time.Second)
	for _, key := range []string{"../../../../../../../../tmp/evil", "0123456789ABCDEF0123456789abcdef", "0123456789abcdef0123456789abcde\x00"} {
		writeStat(rec, st, key, later)
		if got, ok := readStat(rec, st); ok {
			t.Errorf("record naming %q was read as %q", key, got)
		}
		if got, ok := c.fileKey(file, opts, later); !ok || got == key {
			t.Errorf("fileKey = %q, %v; want the content's key", got, ok)
		}
	}
}
