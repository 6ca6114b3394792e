package search

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
)

// The vector cache keeps one file per spec under <dir>/vectors, named by a
// hash of the text recipe, the model and every endpoint text of the spec:
// a changed spec, model or recipe is a new name, so a stale file is never
// read. A file holds a header, the vectors as little-endian float32 and a
// SHA-256 of all that; one that fails the check is embedded again.

var vecMagic = []byte("SGVEC1\n")

var errNoCache = errors.New("no cached vectors")

// maxCachedFloats bounds what one cache file may claim to hold (64M
// floats, 256 MiB), so a corrupt header cannot ask for gigabytes.
const maxCachedFloats = 64 << 20

func vectorFile(dir, model string, texts []string) string {
	h := sha256.New()
	h.Write([]byte(TextRecipe))
	h.Write([]byte{0})
	h.Write([]byte(model))
	for _, t := range texts {
		h.Write([]byte{0})
		h.Write([]byte(t))
	}
	return filepath.Join(dir, "vectors", hex.EncodeToString(h.Sum(nil)[:16])+".vec")
}

// readVectors returns the cached vectors for texts, errNoCache when there
// are none, or another error for a file that is there and is not sound.
func readVectors(dir, model string, texts []string) ([][]float32, error) {
	if dir == "" {
		return nil, errNoCache
	}
	file := vectorFile(dir, model, texts)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoCache
	}
	if err != nil {
		return nil, err
	}
	bad := func(why string) error { return fmt.Errorf("%s: %s", filepath.Base(file), why) }
	head := len(vecMagic) + 8
	if len(data) < head+sha256.Size || !bytes.Equal(data[:len(vecMagic)], vecMagic) {
		return nil, bad("not a vector cache file")
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, bad("checksum mismatch")
	}
	n := int(binary.LittleEndian.Uint32(data[len(vecMagic):]))
	dims := int(binary.LittleEndian.Uint32(data[len(vecMagic)+4:]))
	if n != len(texts) || dims == 0 || n*dims > maxCachedFloats || len(body) != head+4*n*dims {
		return nil, bad("wrong size")
	}
	out := make([][]float32, n)
	flat := make([]float32, n*dims)
	for i := range flat {
		flat[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[head+4*i:]))
	}
	for i := range out {
		out[i] = flat[i*dims : (i+1)*dims]
	}
	return out, nil
}

// writeVectors stores vectors for texts, atomically.
func writeVectors(dir, model string, texts []string, vs [][]float32) error {
	if len(vs) == 0 {
		return nil
	}
	file := vectorFile(dir, model, texts)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	dims := len(vs[0])
	buf := make([]byte, 0, len(vecMagic)+8+4*len(vs)*dims+sha256.Size)
	buf = append(buf, vecMagic...)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(vs)))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(dims))
	for _, v := range vs {
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
	}
	sum := sha256.Sum256(buf)
	buf = append(buf, sum[:]...)
	tmp, err := os.CreateTemp(filepath.Dir(file), ".vec-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(buf); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), file)
}
