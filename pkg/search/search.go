// Package search finds endpoints of a spec catalog from an agent's
// natural-language intent.
//
// An Index holds a bleve in-memory index over every endpoint (operationId,
// summary, description, path segments, method, tags, parameter names and
// spec name, split on case and separators and stemmed; and, for the words
// nothing else has, what the spec says of the operation's parts:
// spec.Endpoint.OwnWords) and a re-ranking stage. Bleve retrieves candidates for the query expanded with a
// hand-written API thesaurus; the re-ranker then orders them with features
// that plain relevance misses: whether the intent's action ("remove",
// "fetch", "list") fits the method and the operation's own verb, whether
// the resource nouns name the operation and the last path segment rather
// than only its description, and how much of the operation the query
// leaves unexplained.
//
// Queries mix free text with field filters: method:GET, tag:issues,
// spec:github, path:/repos (a prefix of the path as the spec writes it).
package search

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
)

func init() {
	// Bleve's disjunction walks its clauses in a slice up to
	// DisjunctionHeapTakeover of them (10), in a heap past it. A query
	// here has 20 to 60 clauses (each word on each field it is in), and
	// the slice took about 13% less CPU per github-full search
	// (BenchmarkSearch); the scores are the same. Only this package uses
	// bleve.
	searcher.DisjunctionHeapTakeover = 1 << 10
}

// ErrEmptyQuery is returned for a query with neither words nor filters.
var ErrEmptyQuery = errors.New("empty query: give words describing the operation, or a filter such as method:GET")

// DefaultLimit is the number of hits Search returns for a limit of 0 or less.
const DefaultLimit = 10

// Options tune an Index. The zero value is ready to use.
type Options struct {
	// SummaryLen bounds the one-line summary of each hit, in bytes.
	// If 0, 90 is used.
	SummaryLen int
	// HitBytes is the JSON size a hit aims at on average. Summaries are
	// shortened across an answer, longest first, so that the answer's
	// JSON stays within HitBytes per hit: long ids and paths (GitHub's)
	// leave room for only a few words. If 0, 200 is used, which keeps 20
	// hits under 4 KB; a negative value turns shortening off.
	HitBytes int
	// Candidates is how many bleve hits the re-ranker orders.
	// If 0, 200 is used.
	Candidates int
	// DescriptionLen bounds how much of each description is indexed, in
	// bytes; the opening of a description says what the operation does,
	// the rest is detail that only adds noise. If 0, 300 is used.
	DescriptionLen int
	// CacheDir keeps built indexes between starts (in its index
	// directory), so that a start with an unchanged catalog reads its
	// index rather than building it: the catalog cache's directory
	// (spec.CatalogOptions.CacheDir) is the place. If "", every index is
	// built. A directory that cannot be read or written only means no
	// cache.
	CacheDir string
}

// Hit is one endpoint found by a search. Its JSON form is what a model
// reads: id, method, path, summary, spec and tags.
type Hit struct {
	// ID is the endpoint id to pass to inspect and invoke.
	ID string `json:"id"`
	// Method is the upper-case HTTP method.
	Method string `json:"method"`
	// Path is the path template exactly as the spec writes it.
	Path string `json:"path"`
	// Summary is one short line: the operation's summary, else the first
	// sentence of its description, cut at a word boundary.
	Summary string `json:"summary,omitempty"`
	// Spec is the name of the spec the endpoint belongs to.
	Spec string `json:"spec"`
	// Tags are the operation's tags as the spec writes them.
	Tags []string `json:"tags,omitempty"`
	// Score orders hits, higher first. It is comparable only within one
	// answer.
	Score float64 `json:"-"`
}

// Index answers searches over one catalog. It is read-only after New and
// safe for concurrent use.
type Index struct {
	bi      bleve.Index
	opts    Options
	entries []*entry         // by bleve doc id (its decimal index)
	byID    map[string]int   // endpoint id -> entries index
	terms   map[string]int32 // stem -> term id
	idf     []float64        // by term id
	ownOnly []bool           // by term id: only own words (inOwn) have it
	post    [][]posting      // by term id: the entries that have it, in order
	inBleve []uint8          // by term id: the fields of fieldBoost that have it
	maxIDF  float64
	// fromCache and cacheErr are what FromCache reports.
	fromCache bool
	cacheErr  error
	// sem is the vector ranking, when EnableSemantic was called.
	sem atomic.Pointer[semantic]
}

// Field bits of a term in an entry.
const (
	inName  field = 1 << iota // operationId or path words
	inRes                     // the last literal path segment
	inSum                     // summary
	inDesc                    // trimmed description
	inTag                     // tags
	inParam                   // parameter names
	inVerb                    // the operationId's leading verb
	inResp                    // what the success answer is (schema name, title)
	inOwn                     // what the spec says of the parts (spec.Endpoint.OwnWords) and the rest of the description
)

// field is a set of field bits.
type field uint16

// posting is one entry's field bits for a term.
type posting struct {
	n int32 // the entry's index
	f field
}

// termField is an entry's field bits for one term.
type termField struct {
	id int32
	f  field
}

// entry is what the re-ranker knows about one endpoint.
type entry struct {
	hit    Hit
	fields []termField // in no order: the ranking reads postings (plan.lookup)
	name   []int32     // distinct operationId and path terms
	act    action      // the action the operation names
	item   bool        // path ends in a parameter
	// plainSum is set when the summary says nothing the id and path do
	// not ("Delete a repository secret" for actions/delete-repo-secret):
	// such summaries go first when an answer must shrink.
	plainSum bool
}

// bleveDoc is the document bleve indexes. Text fields hold stems
// separated by spaces.
type bleveDoc struct {
	// Name holds operationId, path, tag and spec words.
	Name string `json:"name"`
	// Text holds summary and parameter words.
	Text string `json:"text"`
	// Desc holds the opening of the description.
	Desc string `json:"desc"`
	// Resp names what the success answer is.
	Resp string `json:"resp"`
	// Own holds what the spec says of the operation's parts and the rest
	// of its description.
	// It is nil for most documents: bleve makes no field of a nil slice.
	Own    []string `json:"own"`
	Method string   `json:"method"`
	Spec   string   `json:"spec"`
	Tag    []string `json:"tag"`
	Path   string   `json:"path"`
}

// Field boosts for retrieval; the re-ranker weighs fields itself.
var fieldBoost = []struct {
	field string
	boost float64
}{
	{"name", 3}, {"text", 2}, {"desc", 0.6}, {"resp", 0.15},
}

// ownBoost is the own field's boost, for the words only it has.
const ownBoost = 0.3

// FromCache reports whether New read the index from Options.CacheDir, and
// the cache problem, if any, that did not stop it from building one (a
// corrupt file ignored and rebuilt, a directory it could not write).
func (ix *Index) FromCache() (bool, error) { return ix.fromCache, ix.cacheErr }

// Len returns the number of endpoints indexed.
func (ix *Index) Len() int { return len(ix.entries) }

// Close releases the bleve index and stops embedding in the background.
func (ix *Index) Close() error {
	if s := ix.sem.Swap(nil); s != nil {
		s.close()
	}
	return ix.bi.Close()
}

// Search returns up to limit endpoints for query, best first. A limit of
// 0 or less means DefaultLimit; callers that drop some hits (endpoints
// cooling down, say) may ask for more than they show.
func (ix *Index) Search(q string, limit int) ([]Hit, error) {
	return ix.SearchQuery(ParseQuery(q), limit)
}

// SearchQuery is Search for a query already parsed, or built by a caller
// that holds filters apart from the text.
func (ix *Index) SearchQuery(q Query, limit int) ([]Hit, error) {
	return ix.SearchContext(context.Background(), q, limit)
}

// SearchContext is SearchQuery under ctx, which bounds the query's trip to
// the embeddings endpoint when semantic search is on (as does the
// configured timeout). Without semantic search, or while it is off, the
// answer is the lexical ranking alone.
func (ix *Index) SearchContext(ctx context.Context, q Query, limit int) ([]Hit, error) {
	return ix.search(ctx, q, limit, true)
}

// Lexical is Search by the lexical ranking alone, for lookups a program
// makes from endpoint ids (suggestions, "did you mean"): they need no trip
// to the embeddings endpoint.
func (ix *Index) Lexical(q string, limit int) ([]Hit, error) {
	return ix.search(context.Background(), ParseQuery(q), limit, false)
}

func (ix *Index) search(ctx context.Context, q Query, limit int, semantic bool) ([]Hit, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	out, err := ix.ranked(ctx, q, limit, semantic)
	if err != nil {
		return nil, err
	}
	return ix.hits(out, limit), nil
}

// MaxAlternatives is how many more phrasings SearchPhrasings takes.
const MaxAlternatives = 3

// rrfK is reciprocal rank fusion's constant: a hit at rank r of one
// phrasing scores 1/(rrfK+r).
const rrfK = 60

// SearchPhrasings is SearchContext for one need worded several ways: q
// and up to MaxAlternatives more phrasings of it (more are ignored, as
// are empty ones), each ranked on its own and fused by reciprocal rank.
// An endpoint several phrasings find comes before one only a single
// phrasing ranks high; between equals, the first phrasing's order
// decides. An alternative is parsed as a query; each filter it does not
// set is q's.
func (ix *Index) SearchPhrasings(ctx context.Context, q Query, alternatives []string, limit int) ([]Hit, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	first, err := ix.ranked(ctx, q, limit, true)
	if err != nil || len(alternatives) == 0 {
		if err != nil {
			return nil, err
		}
		return ix.hits(first, limit), nil
	}
	lists := [][]scored{first}
	for _, alt := range alternatives[:min(len(alternatives), MaxAlternatives)] {
		aq := ParseQuery(alt)
		if strings.TrimSpace(aq.Text) == "" {
			continue
		}
		aq.inherit(q)
		l, err := ix.ranked(ctx, aq, limit, true)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	return ix.hits(fuseRanks(lists), limit), nil
}

// fuseRanks merges rankings by reciprocal rank; ties go to the better
// rank in the first list, then in the next.
func fuseRanks(lists [][]scored) []scored {
	type acc struct {
		s     scored
		score float64
		ranks [MaxAlternatives + 1]int // 1-based; 0 when absent
	}
	byN := map[int]*acc{}
	var order []*acc
	for li, l := range lists {
		for r, s := range l {
			a := byN[s.n]
			if a == nil {
				a = &acc{s: s}
				byN[s.n] = a
				order = append(order, a)
			}
			a.score += 1 / float64(rrfK+r+1)
			a.ranks[li] = r + 1
		}
	}
	rankAt := func(a *acc, li int) int {
		if a.ranks[li] == 0 {
			return math.MaxInt
		}
		return a.ranks[li]
	}
	slices.SortStableFunc(order, func(a, b *acc) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		for li := range lists {
			if c := cmp.Compare(rankAt(a, li), rankAt(b, li)); c != 0 {
				return c
			}
		}
		return 0
	})
	out := make([]scored, len(order))
	for i, a := range order {
		out[i] = a.s
		out[i].score = a.score
	}
	return out
}

// hits turns the first limit of a ranking into the answer, summaries
// fitted to its budget.
func (ix *Index) hits(out []scored, limit int) []Hit {
	if len(out) > limit {
		out = out[:limit]
	}
	hits := make([]Hit, len(out))
	for i, s := range out {
		hits[i] = s.e.hit
		hits[i].Score = math.Round(s.score*1000) / 1000
	}
	if ix.opts.HitBytes > 0 {
		plain := make([]bool, len(out))
		for i, s := range out {
			plain[i] = s.e.plainSum
		}
		fitSummaries(hits, plain, ix.opts.HitBytes*len(hits))
	}
	return hits
}

// ranked is the ordered candidates of one query, lexical or fused.
func (ix *Index) ranked(ctx context.Context, q Query, limit int, semantic bool) ([]scored, error) {
	filter := q.bleveFilter()
	hasText := strings.TrimSpace(q.Text) != ""
	if !hasText && filter == nil {
		return nil, ErrEmptyQuery
	}
	p := ix.plan(q.Text)
	p.lookup(ix)
	lexical, err := ix.lexical(p, q, filter, limit)
	if err != nil {
		return nil, err
	}
	out := lexical
	if sem := ix.sem.Load(); semantic && sem != nil && sem.opts.Weight > 0 && hasText {
		if qv := sem.queryVector(ctx, q.Text); qv != nil {
			out = ix.fuse(p, lexical, sem, qv, q, limit, fusionWeight(sem.opts.Weight, p.evidence(lexical)))
		}
	}
	return out, nil
}

// scored is a candidate with its score.
type scored struct {
	e     *entry
	n     int // the entry's index
	score float64
}

// lexical is the lexical ranking: bleve's candidates ordered by rank.
func (ix *Index) lexical(p *plan, q Query, filter query.Query, limit int) ([]scored, error) {
	var bq query.Query
	text := ix.textQuery(p)
	switch {
	case text == nil && filter == nil:
		// Only stop words: nothing to look for.
		return nil, nil
	case text == nil:
		bq = filter
	case filter == nil:
		bq = text
	default:
		bq = bleve.NewConjunctionQuery(text, filter)
	}
	size := ix.opts.Candidates
	if text == nil {
		size = len(ix.entries)
	}
	size = max(size, limit)
	req := bleve.NewSearchRequestOptions(bq, size, 0, false)
	res, err := ix.bi.Search(req)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	top := 0.0
	for _, m := range res.Hits {
		top = max(top, m.Score)
	}
	out := make([]scored, 0, len(res.Hits))
	for _, m := range res.Hits {
		n, ok := ix.docIndex(m.ID)
		if !ok {
			continue
		}
		e := ix.entries[n]
		s := 0.0
		if text != nil {
			s = ix.rank(p, n, m.Score/top)
		}
		out = append(out, scored{e, n, s})
	}
	sortScored(out)
	if text == nil {
		// Filters alone rank nothing: the shortest paths come first, so
		// path:/ finds the root operation and path:/repos the /repos ones.
		slices.SortStableFunc(out, func(a, b scored) int { return cmp.Compare(len(a.e.hit.Path), len(b.e.hit.Path)) })
	}
	return out, nil
}

// sortScored orders by score, then id: a total order, so the sort
// need not be stable.
func sortScored(out []scored) {
	slices.SortFunc(out, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.e.hit.ID, b.e.hit.ID)
	})
}

// fuse merges the lexical ranking with the endpoints nearest to the
// query's vector. Every candidate of either side scores its lexical score
// and its cosine, each scaled to [0, 1] over the candidates, the cosine
// times the weight (fusionWeight: larger where the words are weak): a
// weighted sum of scores kept the lexical ranking's strong heads better
// than reciprocal rank fusion did, in the measurement the README gives.
// A candidate only the vector side found is ranked by the re-ranker too,
// so the intent's action still tells a create from a read among the
// nearest. Filters hold for the vector side as they do for bleve's.
func (ix *Index) fuse(p *plan, lexical []scored, sem *semantic, qv []float32, q Query, limit int, weight float64) []scored {
	set := sem.vecs.Load()
	if set == nil || len(set.data)/set.dims != len(ix.entries) {
		return lexical
	}
	keep := q.matcher()
	var admit func(int) bool
	if keep != nil {
		admit = func(i int) bool { return keep(&ix.entries[i].hit) }
	}
	near := set.nearest(qv, max(vectorCandidates, limit), admit)
	lex := make(map[int]float64, len(lexical)+len(near))
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range lexical {
		lex[s.n] = s.score
		lo, hi = min(lo, s.score), max(hi, s.score)
	}
	cands := make([]int, 0, len(lexical)+len(near))
	for _, s := range lexical {
		cands = append(cands, s.n)
	}
	for _, n := range near {
		if _, ok := lex[n]; !ok {
			cands = append(cands, n)
			if len(p.concepts) > 0 || p.act != actNone {
				// Words bleve did not find it by still say whether it
				// does what is asked (the action, the method, the
				// shape): rank it as bleve's weakest candidate.
				lex[n] = ix.rank(p, n, 0)
			}
		}
	}
	cos := make([]float64, len(cands))
	clo, chi := math.Inf(1), math.Inf(-1)
	for i, n := range cands {
		cos[i] = float64(dot(qv, set.row(n)))
		clo, chi = min(clo, cos[i]), max(chi, cos[i])
	}
	out := make([]scored, len(cands))
	for i, n := range cands {
		l, c := 0.0, 0.0
		if v, ok := lex[n]; ok && hi > lo {
			l = max(v-lo, 0) / (hi - lo)
		}
		if chi > clo {
			c = (cos[i] - clo) / (chi - clo)
		}
		out[i] = scored{ix.entries[n], n, l + weight*c}
	}
	sortScored(out)
	return out
}

// docIndex is the entry of a bleve document key (docKey).
func (ix *Index) docIndex(key string) (int, bool) {
	n, err := strconv.Atoi(key)
	return n, err == nil && n >= 0 && n < len(ix.entries)
}

// textQuery builds the bleve retrieval query: every query stem and its
// expansions, on every text field with its boost.
func (ix *Index) textQuery(p *plan) query.Query {
	var ds []query.Query
	seen := map[string]bool{}
	addTerm := func(st string, w float64) {
		if seen[st] {
			return
		}
		seen[st] = true
		id, ok := ix.terms[st]
		if !ok {
			return // no document has it
		}
		for i, fb := range fieldBoost {
			if ix.inBleve[id]&(1<<i) == 0 {
				// No document has it there: a searcher that finds
				// nothing costs time and changes no normalised score
				// (bleve's coord and query norm are the same for every
				// document of one query).
				continue
			}
			tq := bleve.NewTermQuery(st)
			tq.SetField(fb.field)
			tq.SetBoost(fb.boost * w)
			ds = append(ds, tq)
		}
	}
	for _, c := range p.concepts {
		for _, t := range c.terms {
			if t.id >= 0 { // not unknown, not only in own words (plan)
				addTerm(t.stem, t.w)
			}
		}
	}
	// A word only what specs say of parts has is looked for there alone.
	for _, c := range p.own {
		for _, t := range c.terms {
			if !seen[t.stem] {
				seen[t.stem] = true
				tq := bleve.NewTermQuery(t.stem)
				tq.SetField("own")
				tq.SetBoost(ownBoost * t.w)
				ds = append(ds, tq)
			}
		}
	}
	// Verbs count only in names and summaries: "get" or "list" in a
	// description tells nothing, and would match most of a spec.
	for _, t := range p.verbTerms {
		if seen[t.stem] {
			continue
		}
		seen[t.stem] = true
		id, ok := ix.terms[t.stem]
		if !ok {
			continue
		}
		for i, fb := range fieldBoost[:2] {
			if ix.inBleve[id]&(1<<i) == 0 {
				continue
			}
			tq := bleve.NewTermQuery(t.stem)
			tq.SetField(fb.field)
			tq.SetBoost(fb.boost * t.w * 0.5)
			ds = append(ds, tq)
		}
	}
	if len(ds) == 0 {
		return nil
	}
	return bleve.NewDisjunctionQuery(ds...)
}

// Similar returns up to limit other endpoints of the same spec that an
// agent could use instead of the endpoint id: those sharing its tags and
// resource words first. It returns nil for an unknown id.
func (ix *Index) Similar(id string, limit int) []Hit {
	n, ok := ix.byID[id]
	if !ok {
		return nil
	}
	e := ix.entries[n]
	words := splitWords(opTail(strings.TrimPrefix(id, e.hit.Spec+".")), nil)
	words = pathWords(e.hit.Path, words)
	q := Query{Text: strings.Join(words, " "), Specs: []string{e.hit.Spec}}
	hits, err := ix.search(context.Background(), q, limit+1, false)
	if err != nil {
		return nil
	}
	out := hits[:0]
	for _, h := range hits {
		if h.ID != id && len(out) < limit {
			out = append(out, h)
		}
	}
	return out
}

// bits is the entry's field bits for term id, by a scan: only the
// evidence of a query's first hits asks.
func (e *entry) bits(id int32) field {
	for _, tf := range e.fields {
		if tf.id == id {
			return tf.f
		}
	}
	return 0
}
