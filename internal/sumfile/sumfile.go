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

// Write writes magic, the sum of payload and payload to file, through a
// temporary file named by pattern (os.CreateTemp) in file's directory.
func Write(file string, magic, payload []byte, pattern string) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), pattern)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(payload)
	_, err = tmp.Write(magic)
	if err == nil {
		_, err = tmp.Write(sum[:])
	}
	if err == nil {
		_, err = tmp.Write(payload)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), file)
}
