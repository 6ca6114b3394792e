package sumfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadWhatWriteWrote(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.cache")
	magic := []byte("SGTEST1\n")
	if err := Write(file, magic, ".a-*", func(w io.Writer) error { _, err := io.WriteString(w, "payload"); return err }); err != nil {
		t.Fatal(err)
	}
	got, err := Read(file, magic, "a test file")
	if err != nil || string(got) != "payload" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".a-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	data, _ := os.ReadFile(file)
	for name, bad := range map[string][]byte{
		"another format": append([]byte("SGTEST2\n"), data[len(magic):]...),
		"torn":           data[:len(data)-3],
		"too short":      data[:len(magic)+5],
		"a flipped byte": append(append([]byte{}, data[:len(data)-1]...), data[len(data)-1]^1),
	} {
		if err := os.WriteFile(file, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(file, magic, "a test file"); err == nil {
			t.Errorf("%s: read back without an error", name)
		} else if name == "another format" && !strings.Contains(err.Error(), "not a test file") {
			t.Errorf("%s: %v, want it named as not a test file", name, err)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing"), magic, "a test file"); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v, want not-exist", err)
	}
	if err := Write(filepath.Join(dir, "sub", "b.cache"), magic, ".a-*", func(io.Writer) error { return nil }); err != nil {
		t.Errorf("Write into a directory to make: %v", err)
	}
	boom := errors.New("encoding failed")
	if err := Write(filepath.Join(dir, "c.cache"), magic, ".a-*", func(io.Writer) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("a payload that failed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "c.cache")); !os.IsNotExist(err) {
		t.Errorf("a payload that failed left its file: %v", err)
	}
}
