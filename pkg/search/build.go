package search

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	zapv17 "github.com/blevesearch/zapx/v17"

	"github.com/specgate/specgate/pkg/spec"
)

// Building the index: the bleve mapping, and one entry per endpoint with its
// field bits, postings and the words only it uses.

func newMapping() (mapping.IndexMapping, error) {
	im := bleve.NewIndexMapping()
	// Text is split and Porter-stemmed (bleve's English stemmer) once at
	// build; bleve indexes the stems as they are.
	if err := im.AddCustomAnalyzer("stems", map[string]interface{}{
		"type":      custom.Name,
		"tokenizer": stemsTokenizer,
	}); err != nil {
		return nil, err
	}
	dm := bleve.NewDocumentStaticMapping()
	text := func() *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = "stems"
		f.Store = false
		f.IncludeInAll = false
		f.IncludeTermVectors = false
		f.DocValues = false
		return f
	}
	kw := func() *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Analyzer = keyword.Name
		f.Store = false
		f.IncludeInAll = false
		f.IncludeTermVectors = false
		f.DocValues = false
		return f
	}
	for _, f := range []string{"name", "text", "desc", "resp", "own"} {
		dm.AddFieldMappingsAt(f, text())
	}
	for _, f := range []string{"method", "spec", "tag", "path"} {
		dm.AddFieldMappingsAt(f, kw())
	}
	im.DefaultMapping = dm
	im.DefaultAnalyzer = "stems"
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	return im, nil
}

// New indexes every endpoint of cat; with opts.CacheDir, it reads the
// index from there when an index of the same endpoints under the same
// options was cached, and caches the one it builds otherwise.
func New(cat *spec.Catalog, opts Options) (*Index, error) {
	if opts.SummaryLen <= 0 {
		opts.SummaryLen = 90
	}
	if opts.HitBytes == 0 {
		opts.HitBytes = 200
	}
	if opts.Candidates <= 0 {
		opts.Candidates = 200
	}
	if opts.DescriptionLen <= 0 {
		opts.DescriptionLen = 300
	}
	eps := cat.Endpoints()
	slot := &segmentSlot{}
	if opts.CacheDir == "" || len(eps) == 0 {
		return build(eps, opts, slot)
	}
	file := indexFile(opts.CacheDir, eps, opts)
	ix, err := readIndex(file, eps, opts)
	if err == nil {
		return ix, nil
	}
	cerr := cacheError(file, err)
	if ix, err = build(eps, opts, slot); err != nil {
		return nil, err
	}
	ix.cacheErr = cerr
	if err := writeIndex(file, ix, slot.built); err != nil && cerr == nil {
		ix.cacheErr = fmt.Errorf("index cache not written: %w", err)
	}
	return ix, nil
}

// openBleve makes an empty in-memory bleve index whose first segment goes
// through slot.
func openBleve(slot *segmentSlot) (bleve.Index, error) {
	im, err := newMapping()
	if err != nil {
		return nil, fmt.Errorf("search mapping: %w", err)
	}
	bi, err := bleve.NewUsing("", im, scorch.Name, scorch.Name, map[string]interface{}{
		"forceSegmentType":    segmentType,
		"forceSegmentVersion": int(zapv17.Version),
		"segmentConfig":       map[string]interface{}{slotKey: slot},
	})
	if err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	return bi, nil
}

// readIndex reads the index of eps cached in file.
func readIndex(file string, eps []*spec.Endpoint, opts Options) (*Index, error) {
	payload, err := readIndexFile(file)
	if err != nil {
		return nil, err
	}
	ix := &Index{opts: opts, fromCache: true}
	zap, err := decodeIndex(ix, payload, filepath.Base(file), eps)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	// The segment keeps its bytes for the index's life; the rest of the
	// file is garbage once decoded.
	slot := &segmentSlot{cached: bytes.Clone(zap)}
	if ix.bi, err = openBleve(slot); err != nil {
		return nil, err
	}
	// The segment plugin hands bleve the cached segment for a batch of
	// any documents: one empty one.
	batch := ix.bi.NewBatch()
	err = batch.Index(docKey(0), bleveDoc{})
	if err == nil {
		err = ix.bi.Batch(batch)
	}
	if err == nil && (slot.built == nil || slot.built.Count() != uint64(len(eps))) {
		err = errors.New("segment does not hold every endpoint")
	}
	if err != nil {
		ix.bi.Close()
		return nil, fmt.Errorf("segment: %w", err)
	}
	return ix, nil
}

// build indexes eps; slot receives bleve's segment.
func build(eps []*spec.Endpoint, opts Options, slot *segmentSlot) (*Index, error) {
	bi, err := openBleve(slot)
	if err != nil {
		return nil, err
	}
	ix := &Index{
		bi:    bi,
		opts:  opts,
		byID:  make(map[string]int, len(eps)),
		terms: map[string]int32{},
	}
	b := &builder{ix: ix, memo: map[string]string{}, fields: map[int32]field{}}
	ix.entries = make([]*entry, 0, len(eps))
	docs := make([]bleveDoc, 0, len(eps))
	owns := make([]string, 0, len(eps)) // own words' stems, by entry
	for _, ep := range eps {
		docs = append(docs, b.add(ep))
		owns = append(owns, b.own)
	}
	df := b.df
	ix.idf = make([]float64, len(df))
	ix.ownOnly = make([]bool, len(df))
	ix.inBleve = b.inBleve
	n := float64(len(ix.entries))
	for id, d := range df {
		if d == 0 {
			ix.ownOnly[id] = true
			// Only what the specs say of parts has it: how rare it is
			// there. Counting those words for every term would make the
			// names' and summaries' words look commoner than they are.
			d = b.dfOwn[id]
		}
		ix.idf[id] = math.Log(1 + n/float64(max(d, 1)))
		ix.maxIDF = max(ix.maxIDF, ix.idf[id])
	}
	batch := bi.NewBatch()
	for i := range docs {
		// Bleve looks for a word in the own field only when no other
		// field has it (textQuery): only those words are indexed there,
		// which keeps the build as fast as without them.
		if own := b.ownOnlyStems(owns[i]); own != "" {
			docs[i].Own = []string{own}
		}
		if err := batch.Index(docKey(i), docs[i]); err != nil {
			bi.Close()
			return nil, fmt.Errorf("indexing %s: %w", ix.entries[i].hit.ID, err)
		}
	}
	if err := bi.Batch(batch); err != nil {
		bi.Close()
		return nil, fmt.Errorf("search index: %w", err)
	}
	return ix, nil
}

// ownOnlyStems keeps the stems of own (space-separated) that only own
// words have.
func (b *builder) ownOnlyStems(own string) string {
	if own == "" {
		return ""
	}
	var sb strings.Builder
	for st := range strings.FieldsSeq(own) {
		if id, ok := b.ix.terms[st]; ok && b.ix.ownOnly[id] {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(st)
		}
	}
	return sb.String()
}

// builder indexes endpoints one at a time for New.
type builder struct {
	ix *Index
	// memo holds stems for the build: specs repeat their words a lot.
	memo  map[string]string
	df    []int // by term id: how many entries have the term, own words aside
	dfOwn []int // by term id: how many entries have it only in their own words
	// inBleve is, by term id, the fieldBoost fields some document has
	// it in (bleveFieldOf).
	inBleve []uint8
	words   []string
	// fields is the entry being added's field bits by term id, reused.
	fields map[int32]field
	// own is the stems of the entry being added's own words.
	own string
}

func (b *builder) stem(w string) string {
	st, ok := b.memo[w]
	if !ok {
		st = stemWord(w)
		b.memo[w] = st
	}
	return st
}

// add makes the entry of one endpoint, appends it to the index and
// returns the document bleve indexes for it.
func (b *builder) add(ep *spec.Endpoint) bleveDoc {
	ix, opts := b.ix, b.ix.opts
	e := &entry{}
	fields := b.fields
	clear(fields)
	b.own = ""
	e.hit = Hit{
		ID:      ep.ID,
		Method:  ep.Method,
		Path:    ep.Path,
		Summary: summaryLine(ep, opts.SummaryLen),
		Spec:    ep.Spec,
		Tags:    ep.Tags,
	}
	var doc bleveDoc
	add := func(ws []string, bit field) string {
		var sb strings.Builder
		for _, w := range ws {
			st := b.stem(w)
			if st == "" {
				continue
			}
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(st)
			id := b.termID(st)
			b.inBleve[id] |= bleveFieldOf(bit)
			if fields[id]&bit == 0 {
				if bit == inName && fields[id]&inName == 0 && !verbStems[st] {
					e.name = append(e.name, id)
				}
				fields[id] |= bit
			}
		}
		return sb.String()
	}
	words := b.words[:0]
	// operationId and path words name the operation.
	words = splitWords(opTail(ep.OperationID), words)
	if len(words) > 0 {
		if v, ok := verbs[words[0]]; ok {
			e.act = v.act
			fields[b.termID(b.stem(words[0]))] |= inVerb
		}
	}
	words = pathWords(ep.Path, words)
	name := add(words, inName)
	last, item := resourceSegments(ep.Path)
	e.item = item
	add(splitWords(last, words[:0]), inRes)
	sum := ep.Summary
	if sum == "" {
		sum = firstSentence(ep.Description)
	}
	words = splitWords(stripMarkup(sum), words[:0])
	if e.act == actNone && len(words) > 0 {
		if v, ok := verbs[words[0]]; ok {
			e.act = v.act
		}
	}
	text := add(words, inSum)
	e.plainSum = ix.redundant(fields, words, b.stem)
	var rest string
	if desc := ep.Description; desc != "" {
		desc = strings.Join(strings.Fields(stripMarkup(desc)), " ")
		open := truncateWords(desc, opts.DescriptionLen)
		doc.Desc = add(splitWords(open, words[:0]), inDesc)
		rest = truncateWords(desc[len(open):], opts.DescriptionLen)
	}
	if own := join(rest, stripMarkup(ep.OwnWords())); own != "" {
		b.own = add(splitWords(own, words[:0]), inOwn)
	}
	if about := ep.ResponseAbout(); about != "" {
		about = truncateWords(strings.Join(strings.Fields(stripMarkup(about)), " "), opts.DescriptionLen)
		doc.Resp = add(splitWords(about, words[:0]), inResp)
	}
	words = words[:0]
	for _, t := range ep.Tags {
		words = splitWords(t, words)
		doc.Tag = append(doc.Tag, strings.ToLower(t))
	}
	tags := add(words, inTag)
	words = words[:0]
	for _, p := range ep.Params {
		words = splitWords(p.Name, words)
	}
	params := add(words, inParam)
	specWords := add(splitWords(ep.Spec, words[:0]), 0)
	b.words = words
	doc.Name = join(name, tags, specWords)
	doc.Text = join(text, params)
	doc.Method = ep.Method
	doc.Spec = ep.Spec
	doc.Path = ep.Path
	if e.act == actNone {
		e.act = methodAction(ep.Method, e.item)
	}
	n := int32(len(ix.entries))
	e.fields = make([]termField, 0, len(fields))
	for id, f := range fields {
		if f != inOwn { // 0 is the spec's name, in no field bit
			b.df[id]++
		} else {
			b.dfOwn[id]++
		}
		e.fields = append(e.fields, termField{id, f})
		ix.post[id] = append(ix.post[id], posting{n, f})
	}
	ix.byID[ep.ID] = len(ix.entries)
	ix.entries = append(ix.entries, e)
	return doc
}

// opTail returns the part of an operationId after its last "/" (GitHub
// writes "pulls/list"): the leading word there is the operation's verb.
func opTail(op string) string {
	if i := strings.LastIndexByte(op, '/'); i >= 0 {
		return op[i+1:] + " " + op[:i]
	}
	return op
}

// methodAction guesses the action of an operation whose names give none.
func methodAction(method string, item bool) action {
	switch method {
	case "GET":
		if item {
			return actGet
		}
		return actList
	case "POST":
		return actCreate
	case "PUT", "PATCH":
		return actUpdate
	case "DELETE":
		return actDelete
	}
	return actNone
}

// join joins the non-empty strings with spaces.
func join(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

func docKey(n int) string { return strconv.Itoa(n) }

// summaryLine picks the one line a hit shows.
func summaryLine(ep *spec.Endpoint, max int) string {
	s := ep.Summary
	if s == "" {
		s = firstSentence(ep.Description)
	}
	return oneLine(s, max)
}

// redundant reports whether every content word of the summary is among
// the entry's name words or their synonyms.
func (ix *Index) redundant(fields map[int32]field, summary []string, stem func(string) string) bool {
	for _, w := range summary {
		if stopWords[w] {
			continue
		}
		st := stem(w)
		if st == "" || verbStems[st] {
			continue
		}
		id, ok := ix.terms[st]
		if ok && fields[id]&inName != 0 {
			continue
		}
		found := false
		for _, syn := range synonyms[w] {
			if id, ok := ix.terms[stem(syn)]; ok && fields[id]&inName != 0 {
				found = true
				break
			}
		}
		if !found {
			for nw, syns := range nameSynonyms {
				if syns == st {
					if id, ok := ix.terms[nw]; ok && fields[id]&inName != 0 {
						found = true
						break
					}
				}
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// nameSynonyms maps abbreviations that names use to the stem of the word
// summaries spell out.
var nameSynonyms = map[string]string{
	"repo": "repositori", "org": "organ", "pr": "pull", "config": "configur",
	"env": "environ", "auth": "authent", "app": "applic", "info": "inform",
}

func (b *builder) termID(st string) int32 {
	if id, ok := b.ix.terms[st]; ok {
		return id
	}
	id := int32(len(b.ix.terms))
	b.ix.terms[st] = id
	b.df = append(b.df, 0)
	b.dfOwn = append(b.dfOwn, 0)
	b.inBleve = append(b.inBleve, 0)
	b.ix.post = append(b.ix.post, nil)
	return id
}

// bleveFieldOf is the bit of fieldBoost's field (1<<i for fieldBoost[i])
// that words of a field bit are indexed in; 0 for words not indexed by
// bleve (the resource segment, also in name; own words, set apart).
func bleveFieldOf(bit field) uint8 {
	switch bit {
	case inName, inTag, 0: // 0: the spec's name
		return 1 << 0
	case inSum, inParam:
		return 1 << 1
	case inDesc:
		return 1 << 2
	case inResp:
		return 1 << 3
	}
	return 0
}
