// Package sumfile reads and writes the cache files specgate derives from
// specs: a magic line naming the file's format, the SHA-256 of the rest,
// then the payload. A file is written to a temporary name and renamed into
// place, so a reader, or a second writer, never sees half of one; a file
// read back is trusted only when its sum holds, which catches a torn or
// corrupted file, not a crafted one (the cache directory is the user's).
package sumfile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// Read returns the payload of file when it begins with magic and its sum
// holds; what names the kind of file in the error otherwise.
func Read(file string, magic []byte, what string) ([]byte, error) {
	data, err := os.ReadFile(file) // sized once from the file's length
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, magic) || len(data) < len(magic)+sha256.Size {
		return nil, errors.New("not " + what)
	}
	data = data[len(magic):]
	sum, payload := data[:sha256.Size], data[sha256.Size:]
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return nil, errors.New("checksum mismatch")
	}
	return payload, nil
}

// Write writes magic, the sum of the payload and the payload to file,
// through a temporary file named by pattern (os.CreateTemp) in file's
// directory, which it makes if need be. payload writes the payload to w as
// it is made, so it is never held whole for the file's sake: the sum is
// written in the room left for it once the payload is.
func Write(file string, magic []byte, pattern string, payload func(w io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), pattern)
	if err != nil {
		return err
	}
	err = write(tmp, magic, payload)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), file)
}

func write(f *os.File, magic []byte, payload func(w io.Writer) error) error {
	if _, err := f.Write(append(append([]byte(nil), magic...), make([]byte, sha256.Size)...)); err != nil {
		return err
	}
	h := sha256.New()
	if err := payload(io.MultiWriter(f, h)); err != nil {
		return err
	}
	_, err := f.WriteAt(h.Sum(nil), int64(len(magic)))
	return err
}
