package spec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/specgate/specgate/internal/sumfile"
)

// cacheFormat changes whenever the cached layout or the way a catalog is
// derived changes, so an old cache is rebuilt rather than misread.
const cacheFormat = "specgate-catalog-v11"

var cacheMagic = []byte("SGCATv1\n")

// Cache keeps derived catalogs between starts, keyed by the content of the
// spec and the options that shape the catalog. A file that fails its
// checksum or does not decode is ignored and rebuilt, never trusted.
//
// The zero value is a disabled cache; a Cache is safe for concurrent use as
// far as the file system is (writes are atomic renames).
type Cache struct {
	// Dir holds the cache files. If empty, caching is off.
	Dir string
}

// DefaultCacheDir returns specgate's directory under the user cache
// directory (which honours XDG_CACHE_HOME), or "" when there is none.
func DefaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "specgate")
}

// LoadResult says how a spec was obtained.
type LoadResult struct {
	Spec *Spec
	// FromCache reports that the catalog came from the cache.
	FromCache bool
	// CacheError is a cache problem that did not stop the load (a corrupt
	// file that was rebuilt, an unwritable directory).
	CacheError error
}

// Load reads the spec at location and returns its catalog, from the cache
// when the content is unchanged since it was cached.
func (c Cache) Load(ctx context.Context, location string, opts Options) (res LoadResult, err error) {
	key, rerr := "", error(nil)
	if c.Dir != "" && !isURL(location) {
		// A file is hashed as it is read: on a hit, its bytes (13 MB for
		// GitHub's spec) are never held at once.
		if k, ok := c.fileKey(location, opts, time.Now()); ok {
			s, err := readCache(filepath.Join(c.Dir, k+".gob"))
			if err == nil {
				return c.hit(s, location, opts), nil
			}
			key, rerr = k, err
		}
	}
	data, err := Read(ctx, location, opts)
	if err != nil {
		return LoadResult{}, err
	}
	if c.Dir == "" {
		s, err := Parse(ctx, location, data, opts)
		return LoadResult{Spec: s}, err
	}
	var keyc chan string
	if key == "" {
		key = c.key(location, data, opts)
		s, err := readCache(filepath.Join(c.Dir, key+".gob"))
		if err == nil {
			return c.hit(s, location, opts), nil
		}
		rerr = err
	} else {
		// A miss on the key of the file as it was hashed: the bytes read
		// since (the same, unless the file changed in between) are hashed
		// for the file to write on another core, beside the parse.
		keyc = make(chan string, 1)
		go func() { keyc <- c.key(location, data, opts) }()
	}
	if !errors.Is(rerr, os.ErrNotExist) {
		res.CacheError = fmt.Errorf("cache %s ignored: %w", key+".gob", rerr)
	}
	s, err := Parse(ctx, location, data, opts)
	if keyc != nil {
		key = <-keyc
	}
	if err != nil {
		return res, err
	}
	res.Spec = s
	// compressed once, here: the cache keeps them so (smaller to write and to
	// read back), and a warm start need not compress them again
	s.packComponents()
	if werr := writeCache(filepath.Join(c.Dir, key+".gob"), cacheForm(s)); werr != nil && res.CacheError == nil {
		res.CacheError = fmt.Errorf("cache not written: %w", werr)
	}
	return res, nil
}

// hit is the result of a catalog read from the cache.
func (c Cache) hit(s *Spec, location string, opts Options) LoadResult {
	s.Location = location
	s.refs = opts
	return LoadResult{Spec: s, FromCache: true}
}

// fileKey is key for the regular file at location, from its stat record
// when the file is unchanged since it was recorded (cachestat.go), else
// streamed through the hash; ok is false when it is not a regular file or
// cannot be read whole within opts.MaxBytes (Read then says why).
func (c Cache) fileKey(location string, opts Options, now time.Time) (string, bool) {
	max := opts.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	// Not even opened unless regular: a pipe (<(curl ...)) can be read
	// once only, by Read.
	if fi, err := os.Stat(location); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	f, err := os.Open(location)
	if err != nil {
		return "", false
	}
	defer f.Close()
	// The stat of the open file: opening makes a network file system
	// (NFS) check its cached attributes with the server.
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > max {
		return "", false
	}
	st, statOK := statOf(fi)
	rec, recOK := statFile(c.Dir, location, opts)
	if statOK && recOK {
		if key, ok := readStat(rec, st); ok {
			return key, true
		}
	}
	h := keyHash(location, opts)
	n, err := io.Copy(h, io.LimitReader(f, max+1))
	if err != nil || n > max {
		return "", false
	}
	key := hex.EncodeToString(h.Sum(nil))[:32]
	// Recorded only if the file stood still while it was hashed.
	if fi, err := f.Stat(); statOK && recOK && err == nil {
		if after, ok := statOf(fi); ok && after == st && n == st.size {
			writeStat(rec, st, key, now)
		}
	}
	return key, true
}

func (c Cache) key(location string, data []byte, opts Options) string {
	h := keyHash(location, opts)
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// keyHash is the hash of what shapes a catalog besides the document's
// bytes, which the caller writes next.
func keyHash(location string, opts Options) hash.Hash {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%t\x00%t\x00", cacheFormat, opts.Name, opts.BaseURL, opts.Validate, opts.AllowExternalRefs)
	if opts.Name == "" {
		// The default name comes from the location.
		fmt.Fprintf(h, "%s\x00", NameFromLocation(location))
	}
	if isURL(location) {
		// Relative server URLs resolve against the spec's URL.
		fmt.Fprintf(h, "%s\x00", location)
	}
	return h
}

// cachedSpec is the gob form of a Spec.
type cachedSpec struct {
	Name, Title, APIVersion, Description, Version, OpenAPI, BaseURL string
	Schemes                                                         map[string]SecurityScheme
	Warnings                                                        []string
	Unusable                                                        map[string]string
	StatedLimit                                                     *StatedLimit
	Packed                                                          map[string]map[string][]byte // see Spec.packComponents
	Endpoints                                                       []cachedEndpoint
}

type cachedEndpoint struct {
	E   Endpoint
	Raw []byte
}

func readCache(file string) (*Spec, error) {
	payload, err := sumfile.Read(file, cacheMagic, "a catalog cache file")
	if err != nil {
		return nil, err
	}
	var cs cachedSpec
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&cs); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	s := &Spec{
		Name: cs.Name, Title: cs.Title, APIVersion: cs.APIVersion, Description: cs.Description,
		Version: cs.Version, OpenAPI: cs.OpenAPI, BaseURL: cs.BaseURL, Schemes: cs.Schemes,
		Warnings: cs.Warnings, Unusable: cs.Unusable, StatedLimit: cs.StatedLimit,
	}
	s.packed = cs.Packed
	s.Endpoints = make([]*Endpoint, len(cs.Endpoints))
	for i := range cs.Endpoints {
		e := cs.Endpoints[i].E
		e.raw = cs.Endpoints[i].Raw
		e.spec = s
		s.Endpoints[i] = &e
	}
	return s, nil
}

// cacheForm is the gob form of s.
func cacheForm(s *Spec) *cachedSpec {
	cs := &cachedSpec{
		Name: s.Name, Title: s.Title, APIVersion: s.APIVersion, Description: s.Description,
		Version: s.Version, OpenAPI: s.OpenAPI, BaseURL: s.BaseURL, Schemes: s.Schemes,
		Warnings: s.Warnings, Unusable: s.Unusable, StatedLimit: s.StatedLimit, Packed: s.packed,
	}
	cs.Endpoints = make([]cachedEndpoint, len(s.Endpoints))
	for i, e := range s.Endpoints {
		cs.Endpoints[i] = cachedEndpoint{E: *e, Raw: e.raw}
		cs.Endpoints[i].E.raw, cs.Endpoints[i].E.spec = nil, nil
	}
	return cs
}

// writeCache writes cs to file: the payload streams into the file as gob
// encodes it, its checksum written in the room left for it at the end.
// Encoded into a buffer first, the payload was held twice (gob's own
// buffer and its copy) at the load's peak.
func writeCache(file string, cs *cachedSpec) error {
	return sumfile.Write(file, cacheMagic, ".catalog-*", func(w io.Writer) error { return gob.NewEncoder(w).Encode(cs) })
}
