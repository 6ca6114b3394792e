package search

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	zapv17 "github.com/blevesearch/zapx/v17"

	"github.com/specgate/specgate/internal/sumfile"
	"github.com/specgate/specgate/pkg/spec"
)

// The index cache keeps what New derives from a catalog (the entries, the
// term table with its idf, and bleve's segment in zap's own encoding) in
// <dir>/index, one file per catalog, named by a hash of everything the
// build reads: every endpoint's words, the options that shape the build,
// indexFormat, the thesaurus tables and the versions of bleve, zap and the
// stemmer. A changed catalog, option or build is a new name, so a stale
// file is never read. A file holds a header, the payload and a SHA-256 of
// the payload; one that fails the check or does not decode is rebuilt,
// never trusted.

// indexFormat changes whenever the cached layout or the way New derives an
// index from a catalog changes (text splitting, stemming, field bits, idf):
// the thesaurus tables and the libraries' versions are hashed into the key
// on their own (buildDigest), the code that reads them is not, and
// TestIndexFormatPinned fails when what it derives changes.
const indexFormat = "specgate-index-v1"

var indexMagic = []byte("SGIDXv1\n")

// indexFile is the cache file of an index of eps under opts.
func indexFile(dir string, eps []*spec.Endpoint, opts Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00", indexFormat, buildDigest(), opts.SummaryLen, opts.DescriptionLen)
	var buf []byte
	for _, ep := range eps {
		buf = appendStrings(buf[:0], ep.ID, ep.Spec, ep.Method, ep.Path, ep.OperationID, ep.Summary,
			ep.Description, ep.OwnWords(), ep.ResponseAbout())
		buf = binary.AppendUvarint(buf, uint64(len(ep.Tags)))
		buf = appendStrings(buf, ep.Tags...)
		buf = binary.AppendUvarint(buf, uint64(len(ep.Params)))
		for _, p := range ep.Params {
			buf = appendStrings(buf, p.Name)
		}
		h.Write(buf)
	}
	return filepath.Join(dir, "index", hex.EncodeToString(h.Sum(nil)[:16])+".idx")
}

// appendStrings appends each string with its length before it.
func appendStrings(buf []byte, ss ...string) []byte {
	for _, s := range ss {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	return buf
}

// buildDigest is a hash of the tables the build reads and of the versions
// of the libraries that shape it, when the binary records them.
var buildDigest = sync.OnceValue(func() string {
	h := sha256.New()
	// fmt prints maps sorted by key.
	fmt.Fprint(h, verbs, synonyms, abbreviations, phrases, stopWords, nameSynonyms, irregularPast, zapv17.Version)
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			switch m.Path {
			case "github.com/blevesearch/bleve/v2", "github.com/blevesearch/zapx/v17", "github.com/blevesearch/go-porterstemmer":
				fmt.Fprintf(h, "\x00%s@%s", m.Path, m.Version)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
})

// segmentType is the segment plugin every index uses: zap, which can also
// hand back a segment read from the cache instead of building one.
const segmentType = "specgate-zap"

func init() { scorch.RegisterSegmentPlugin(&segmentPlugin{}, false) }

// segmentPlugin is zap's plugin, but for the segment of a new index: New
// passes a segmentSlot in the index's segment config, with the cached
// segment's bytes to use, or to receive the segment built so that it can
// be cached. An in-memory index never merges or persists, so only NewUsing
// is ever asked of it.
type segmentPlugin struct{ zapv17.ZapPlugin }

func (*segmentPlugin) Type() string { return segmentType }

// slotKey is the segment config key of an index's segmentSlot.
const slotKey = "specgate.segment"

// segmentSlot is one index's exchange with segmentPlugin.
type segmentSlot struct {
	// cached is a zap segment as segmentBytes wrote it, to be used
	// instead of the documents of the batch; nil to build one.
	cached []byte
	// built is the segment built or read.
	built segment.Segment
}

func (p *segmentPlugin) NewUsing(results []index.Document, config map[string]interface{}) (segment.Segment, uint64, error) {
	// Bleve hands the documents over in no set order, and zap numbers
	// them as they come, which orders hits of equal score: in key order
	// (docKey, the entry's index), every build of a catalog numbers them
	// alike, and answers the same from one start to the next.
	slices.SortFunc(results, func(a, b index.Document) int {
		return cmp.Or(cmp.Compare(len(a.ID()), len(b.ID())), strings.Compare(a.ID(), b.ID()))
	})
	slot, _ := config[slotKey].(*segmentSlot)
	if slot == nil {
		return p.ZapPlugin.NewUsing(results, config)
	}
	if slot.cached != nil {
		seg, err := openSegment(slot.cached, config)
		if err != nil {
			return nil, 0, err
		}
		slot.built = seg
		return seg, 0, nil
	}
	seg, n, err := p.ZapPlugin.NewUsing(results, config)
	slot.built = seg
	return seg, n, err
}

// segmentBytes is seg in zap's file encoding.
func segmentBytes(seg segment.Segment) ([]byte, error) {
	wt, ok := seg.(io.WriterTo)
	if !ok {
		return nil, fmt.Errorf("segment %T cannot be written", seg)
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// openSegment reads a segment that segmentBytes wrote: its data, then zap's
// footer (the writer id, empty in memory; the document count, the offsets
// of the stored fields and of the sections, the chunk mode, the version,
// and a CRC-32 of all that).
func openSegment(b []byte, config map[string]interface{}) (segment.Segment, error) {
	const footer = zapv17.FooterSize
	if len(b) < footer {
		return nil, errors.New("segment too short")
	}
	f := b[len(b)-footer:]
	be := binary.BigEndian
	idLen, numDocs := be.Uint32(f[0:]), be.Uint64(f[4:])
	stored, sections := be.Uint64(f[12:]), be.Uint64(f[20:])
	chunk, version, crc := be.Uint32(f[28:]), be.Uint32(f[32:]), be.Uint32(f[36:])
	mem := b[:len(b)-footer]
	switch {
	case idLen != 0:
		return nil, errors.New("segment has a writer id")
	case version != zapv17.Version:
		return nil, fmt.Errorf("segment version %d, not %d", version, zapv17.Version)
	case crc32.Update(crc32.ChecksumIEEE(mem), crc32.IEEETable, f[:footer-4]) != crc:
		return nil, errors.New("segment checksum mismatch")
	case stored > uint64(len(mem)) || sections > uint64(len(mem)):
		return nil, errors.New("segment offsets out of range")
	}
	stats, _ := config[segment.StatsKey].(*segment.Stats)
	if stats == nil {
		stats = new(segment.Stats)
	}
	return zapv17.InitSegmentBase(mem, crc32.ChecksumIEEE(mem), chunk, numDocs, stored, sections, config, stats)
}

// writeIndex writes ix and its bleve segment seg to file.
func writeIndex(file string, ix *Index, seg segment.Segment) error {
	zap, err := segmentBytes(seg)
	if err != nil {
		return err
	}
	payload := encodeIndex(ix, filepath.Base(file), zap)
	return sumfile.Write(file, indexMagic, ".index-*", func(w io.Writer) error {
		_, err := w.Write(payload)
		return err
	})
}

// readIndexFile returns the payload of file once its checksum holds.
func readIndexFile(file string) ([]byte, error) {
	return sumfile.Read(file, indexMagic, "an index cache file")
}

// encodeIndex is the payload of an index cache file named name: the name
// (a file copied under another name is not read as it), then the entries'
// count, the terms (stems, idf, own-only, bleve fields), each entry's
// action, flags, name terms and field bits, and the zap segment.
func encodeIndex(ix *Index, name string, zap []byte) []byte {
	var b []byte
	b = appendStrings(b, name)
	b = binary.AppendUvarint(b, uint64(len(ix.entries)))
	stems := make([]string, len(ix.terms))
	for st, id := range ix.terms {
		stems[id] = st
	}
	b = binary.AppendUvarint(b, uint64(len(stems)))
	b = appendStrings(b, stems...)
	for id := range stems {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(ix.idf[id]))
		own := byte(0)
		if ix.ownOnly[id] {
			own = 1
		}
		b = append(b, own, ix.inBleve[id])
	}
	for _, e := range ix.entries {
		flags := byte(0)
		if e.item {
			flags |= 1
		}
		if e.plainSum {
			flags |= 2
		}
		b = append(b, byte(e.act), flags)
		b = binary.AppendUvarint(b, uint64(len(e.name)))
		for _, id := range e.name {
			b = binary.AppendUvarint(b, uint64(id))
		}
		b = binary.AppendUvarint(b, uint64(len(e.fields)))
		for _, tf := range e.fields {
			b = binary.AppendUvarint(b, uint64(tf.id))
			b = binary.AppendUvarint(b, uint64(tf.f))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(zap)))
	return append(b, zap...)
}

// decoder reads a payload; the first error sticks and zeroes what follows.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(why string) {
	if d.err == nil {
		d.err = errors.New(why)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items of at least size bytes each, bounded by
// what is left.
func (d *decoder) count(size int) int {
	v := d.uvarint()
	if v > uint64(len(d.b)/size) {
		d.fail("count out of range")
		return 0
	}
	return int(v)
}

func (d *decoder) bytes(n int) []byte {
	if n > len(d.b) {
		d.fail("truncated")
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

// id reads a term id below n.
func (d *decoder) id(n int) int32 {
	v := d.uvarint()
	if v >= uint64(n) {
		d.fail("term id out of range")
		return 0
	}
	return int32(v)
}

// decodeIndex fills ix (whose opts are set) from payload for the
// endpoints eps, and returns the zap segment's bytes.
func decodeIndex(ix *Index, payload []byte, name string, eps []*spec.Endpoint) ([]byte, error) {
	d := &decoder{b: payload}
	if string(d.bytes(d.count(1))) != name {
		return nil, errors.New("written for another catalog")
	}
	if n := d.uvarint(); n != uint64(len(eps)) {
		return nil, fmt.Errorf("holds %d endpoints, not %d", n, len(eps))
	}
	nt := d.count(1 + 10)
	// The stems share one string.
	lens := make([]int, nt)
	var all []byte
	for i := range lens {
		lens[i] = d.count(1)
		all = append(all, d.bytes(lens[i])...)
	}
	stems := string(all)
	ix.terms = make(map[string]int32, nt)
	for i, n := range lens {
		ix.terms[stems[:n]] = int32(i)
		stems = stems[n:]
	}
	if len(ix.terms) != nt {
		return nil, errors.New("a stem twice")
	}
	ix.idf, ix.ownOnly, ix.inBleve = make([]float64, nt), make([]bool, nt), make([]uint8, nt)
	for id := range nt {
		t := d.bytes(10)
		if t == nil {
			break
		}
		ix.idf[id] = math.Float64frombits(binary.LittleEndian.Uint64(t))
		ix.ownOnly[id], ix.inBleve[id] = t[8] == 1, t[9]
		ix.maxIDF = max(ix.maxIDF, ix.idf[id])
	}
	decodeEntries(d, ix, eps)
	zap := d.bytes(d.count(1))
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	return zap, nil
}

// decodeEntries reads the entries of eps, and builds the postings from
// their field bits as New's builder does, in entry order.
func decodeEntries(d *decoder, ix *Index, eps []*spec.Endpoint) {
	nt := len(ix.idf)
	all := make([]entry, len(eps))
	ix.entries = make([]*entry, len(eps))
	ix.byID = make(map[string]int, len(eps))
	perTerm := make([]int32, nt)
	for n, ep := range eps {
		e := &all[n]
		head := d.bytes(2)
		if head == nil {
			return
		}
		e.act, e.item, e.plainSum = action(head[0]), head[1]&1 != 0, head[1]&2 != 0
		e.name = make([]int32, d.count(1))
		for i := range e.name {
			e.name[i] = d.id(nt)
		}
		e.fields = make([]termField, d.count(2))
		for i := range e.fields {
			id := d.id(nt)
			if d.err != nil {
				return
			}
			e.fields[i] = termField{id, field(d.uvarint())}
			perTerm[id]++
		}
		e.hit = Hit{ID: ep.ID, Method: ep.Method, Path: ep.Path, Summary: summaryLine(ep, ix.opts.SummaryLen), Spec: ep.Spec, Tags: ep.Tags}
		ix.entries[n] = e
		ix.byID[ep.ID] = n
	}
	if d.err != nil {
		return
	}
	// One array holds every posting list, each sliced to its length.
	total := 0
	for _, c := range perTerm {
		total += int(c)
	}
	backing := make([]posting, total)
	ix.post = make([][]posting, nt)
	at := 0
	for id, c := range perTerm {
		ix.post[id] = backing[at : at : at+int(c)]
		at += int(c)
	}
	for n, e := range ix.entries {
		for _, tf := range e.fields {
			ix.post[tf.id] = append(ix.post[tf.id], posting{int32(n), tf.f})
		}
	}
}

// cacheError says why the index cache file was not used, or nil when
// there was none yet.
func cacheError(file string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("index cache %s ignored: %w", filepath.Base(file), err)
}
