package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/specgate/specgate/pkg/spec"
)

// Embedder turns texts into vectors, one per text and in order.
// HTTPEmbedder is the one specgate uses; tests use a deterministic one.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// SemanticOptions configure the vector ranking of an Index.
type SemanticOptions struct {
	// Embedder makes the vectors. Required.
	Embedder Embedder
	// Model names the model, for the cache key and the status.
	Model string
	// BatchSize is how many endpoint texts one Embed call takes.
	// If 0, 64 is used.
	BatchSize int
	// Concurrency bounds the Embed calls in flight while the endpoints
	// are embedded. If 0, 2 is used.
	Concurrency int
	// Timeout bounds one Embed call. If 0, 2s is used.
	Timeout time.Duration
	// Weight is the vector side's share in the fused score, against the
	// lexical side's 1 (both scaled to [0, 1] over the candidates). Each
	// query adapts it (fusionWeight): half of it where the query's words
	// name the best lexical hits fully, rising to 2 where they name
	// nothing. If 0, DefaultWeight is used; negative turns the vector
	// ranking off while keeping the vectors.
	Weight float64
	// CacheDir keeps endpoint vectors between starts. If "", nothing is
	// cached.
	CacheDir string
	// Logger receives the progress of large embeddings and the changes of
	// state (off, back on). If nil, nothing is logged.
	Logger *slog.Logger
	// RetryAfter is how long a failed endpoint is left alone before a
	// query tries it again. If 0, 30s is used.
	RetryAfter time.Duration
	// Now is the clock. If nil, time.Now is used.
	Now func() time.Time
}

// SemanticStatus says whether search ranks by meaning too, and why not.
type SemanticStatus struct {
	// Model is the configured embeddings model.
	Model string `json:"model"`
	// On reports that searches use the vector ranking now.
	On bool `json:"on"`
	// Endpoints is the number of endpoint vectors held.
	Endpoints int `json:"endpoints,omitempty"`
	// Dimensions is the length of each vector.
	Dimensions int `json:"dimensions,omitempty"`
	// Cached counts the endpoint vectors read from the disk cache.
	Cached int `json:"cached,omitempty"`
	// Reason says why it is off: searches are answered lexically.
	Reason string `json:"reason,omitempty"`
}

// DefaultWeight is the vector side's weight in the fused score.
const DefaultWeight = 0.25

// fusionWeight is the vector side's weight for one query. Where the
// query's words name the best lexical hits (evidence 1) it is half the
// configured weight: words keep winning. As they name less of them it
// rises, with the square of the share missed, to weakWordsWeight (or the
// configured weight, if higher): where words are thin, meaning decides.
func fusionWeight(base, evidence float64) float64 {
	lo, hi := base*strongWordsShare, max(base, weakWordsWeight)
	miss := 1 - min(max(evidence, 0), 1)
	return lo + (hi-lo)*math.Pow(miss, weakWordsPower)
}

// The adaptive fusion's shape, chosen on the tuning sets and the
// word-less refund intents of TestFusionTrustsMeaningWhenWordsAreWeak
// (README): a linear rise, or a top weight of 4, cost more recall@1 on
// the tuning sets for no more of those intents found.
const (
	strongWordsShare = 0.5
	weakWordsWeight  = 2.0
	weakWordsPower   = 2.0
)

// vectorCandidates is how many of the nearest endpoints take part in
// fusion.
const vectorCandidates = 50

// maxQueryBytes bounds the query text sent to the embeddings endpoint.
const maxQueryBytes = 2000

// semantic is the vector side of an Index.
type semantic struct {
	opts   SemanticOptions
	vecs   atomic.Pointer[vectorSet]
	cached atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	reason  string    // why searches are lexical now; "" when on
	retryAt time.Time // a failed endpoint is not asked before this
	queries *lru
}

// vectorSet holds one unit vector per index entry, row after row.
type vectorSet struct {
	dims int
	data []float32
}

func (v *vectorSet) row(i int) []float32 { return v.data[i*v.dims : (i+1)*v.dims] }

// EnableSemantic adds a vector ranking: every endpoint of cat (the catalog
// the index was built from) is embedded, or read from the cache, before it
// returns. When that fails the index keeps answering lexically, the error
// is returned for the caller to report, and the endpoints are embedded
// again in the background until it works or the index is closed.
func (ix *Index) EnableSemantic(ctx context.Context, cat *spec.Catalog, opts SemanticOptions) error {
	if opts.Embedder == nil {
		return errors.New("semantic search: no embedder")
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 64
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 2
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.Weight == 0 {
		opts.Weight = DefaultWeight
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	texts := make([]string, len(ix.entries))
	groups := map[string][]int{} // spec -> entry indexes, for one cache file per spec
	var order []string
	for _, ep := range cat.Endpoints() {
		n, ok := ix.byID[ep.ID]
		if !ok {
			continue
		}
		texts[n] = EndpointText(ep)
		if _, ok := groups[ep.Spec]; !ok {
			order = append(order, ep.Spec)
		}
		groups[ep.Spec] = append(groups[ep.Spec], n)
	}
	bg, cancel := context.WithCancel(context.Background())
	s := &semantic{opts: opts, cancel: cancel, done: make(chan struct{}), queries: newLRU(256)}
	s.reason = "endpoint vectors are not loaded yet"
	if old := ix.sem.Swap(s); old != nil {
		old.close()
	}
	err := s.load(ctx, texts, order, groups)
	if err == nil {
		close(s.done)
		return nil
	}
	s.setOff("embedding the endpoints failed: " + err.Error())
	go s.retryLoad(bg, texts, order, groups)
	return err
}

// Semantic returns the state of the vector ranking, or nil when none is
// configured.
func (ix *Index) Semantic() *SemanticStatus {
	s := ix.sem.Load()
	if s == nil {
		return nil
	}
	st := &SemanticStatus{Model: s.opts.Model}
	if v := s.vecs.Load(); v != nil {
		st.Endpoints = len(v.data) / max(v.dims, 1)
		st.Dimensions = v.dims
		st.Cached = int(s.cached.Load())
	}
	s.mu.Lock()
	st.Reason = s.reason
	s.mu.Unlock()
	st.On = st.Reason == "" && st.Dimensions > 0
	return st
}

func (s *semantic) close() {
	s.cancel()
	<-s.done
}

// retryLoad embeds the endpoints again after a failure, backing off from
// 5s to 5m, until it works or ctx ends.
func (s *semantic) retryLoad(ctx context.Context, texts []string, order []string, groups map[string][]int) {
	defer close(s.done)
	wait := 5 * time.Second
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		err := s.load(ctx, texts, order, groups)
		if err == nil {
			s.setOn()
			return
		}
		if ctx.Err() != nil {
			return
		}
		s.setOff("embedding the endpoints failed: " + err.Error())
		wait = min(wait*2, 5*time.Minute)
	}
}

// load fills s.vecs: from the cache where a spec's texts are unchanged,
// else embedded in batches.
func (s *semantic) load(ctx context.Context, texts []string, order []string, groups map[string][]int) error {
	rows := make([][]float32, len(texts))
	var missing []int
	embedded := map[string]bool{} // the specs whose vectors are made now
	cached := 0
	for _, name := range order {
		idx := groups[name]
		ts := make([]string, len(idx))
		for i, n := range idx {
			ts[i] = texts[n]
		}
		vs, err := readVectors(s.opts.CacheDir, s.opts.Model, ts)
		if err != nil && !errors.Is(err, errNoCache) {
			s.opts.Logger.Warn("embeddings cache ignored, embedding again", "spec", name, "reason", err.Error())
		}
		if vs == nil {
			missing = append(missing, idx...)
			embedded[name] = true
			continue
		}
		for i, n := range idx {
			rows[n] = vs[i]
		}
		cached += len(idx)
	}
	if len(missing) > 0 {
		if err := s.embedAll(ctx, texts, missing, rows); err != nil {
			return err
		}
	}
	dims := 0
	for _, r := range rows {
		if r == nil {
			continue
		}
		if dims == 0 {
			dims = len(r)
		}
		if len(r) != dims {
			return fmt.Errorf("the model gave vectors of %d and %d dimensions", dims, len(r))
		}
	}
	if dims == 0 {
		return errors.New("no endpoint to embed")
	}
	set := &vectorSet{dims: dims, data: make([]float32, len(rows)*dims)}
	for i, r := range rows {
		copy(set.row(i), r)
	}
	// What was embedded now is written per spec for the next start.
	if s.opts.CacheDir != "" {
		for _, name := range order {
			if !embedded[name] {
				continue
			}
			idx := groups[name]
			ts := make([]string, len(idx))
			vs := make([][]float32, len(idx))
			for i, n := range idx {
				ts[i], vs[i] = texts[n], set.row(n)
			}
			if err := writeVectors(s.opts.CacheDir, s.opts.Model, ts, vs); err != nil {
				s.opts.Logger.Warn("embeddings cache not written", "spec", name, "reason", err.Error())
			}
		}
	}
	s.cached.Store(int64(cached))
	s.vecs.Store(set)
	s.setOn()
	return nil
}

// embedAll embeds texts[i] for every i in which, in batches with bounded
// concurrency, logging progress for large catalogs.
func (s *semantic) embedAll(ctx context.Context, texts []string, which []int, rows [][]float32) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	total := len(which)
	var done atomic.Int64
	progress := total >= 500
	if progress {
		s.opts.Logger.Info("embedding endpoints", "model", s.opts.Model, "endpoints", total)
	}
	sem := make(chan struct{}, s.opts.Concurrency)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for start := 0; start < total; start += s.opts.BatchSize {
		batch := which[start:min(start+s.opts.BatchSize, total)]
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			in := make([]string, len(batch))
			for i, n := range batch {
				in[i] = texts[n]
			}
			vs, err := s.embedWithRetry(ctx, in)
			if err != nil {
				once.Do(func() { first = err; cancel() })
				return
			}
			for i, n := range batch {
				rows[n] = vs[i]
			}
			d := done.Add(int64(len(batch)))
			if progress && (d*10/int64(total)) != ((d-int64(len(batch)))*10/int64(total)) {
				s.opts.Logger.Info("embedding endpoints", "done", d, "of", total)
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// embedWithRetry is one Embed call under the timeout; an endpoint that
// says to wait (a 429 with Retry-After of at most 30s) is waited for and
// asked again, three times at most.
func (s *semantic) embedWithRetry(ctx context.Context, in []string) ([][]float32, error) {
	for attempt := 0; ; attempt++ {
		vs, err := s.embed(ctx, in)
		var rl *RateLimitedError
		if err == nil || !errors.As(err, &rl) || attempt >= 3 || rl.Wait > 30*time.Second {
			return vs, err
		}
		t := time.NewTimer(rl.Wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// embed calls the embedder under the timeout and checks its answer: one
// finite, non-zero vector per input, all of one length. The vectors come
// back normalised to unit length.
func (s *semantic) embed(ctx context.Context, in []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	vs, err := s.opts.Embedder.Embed(ctx, in)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("no answer within %s", s.opts.Timeout)
		}
		return nil, err
	}
	if len(vs) != len(in) {
		return nil, fmt.Errorf("%d vectors for %d inputs", len(vs), len(in))
	}
	for i, v := range vs {
		if len(v) == 0 || len(v) != len(vs[0]) {
			return nil, fmt.Errorf("vectors of %d and %d dimensions in one answer", len(vs[0]), len(v))
		}
		if !normalise(v) {
			return nil, errors.New("a vector holds NaN or an infinite value")
		}
		vs[i] = v
	}
	return vs, nil
}

// normalise scales v to unit length; it reports false for a vector that
// holds NaN or Inf. A zero vector (a text with nothing the model reads)
// stays zero: it is near nothing.
func normalise(v []float32) bool {
	var sum float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
		sum += f * f
	}
	if math.IsInf(sum, 0) {
		return false
	}
	if sum == 0 {
		return true
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
	return true
}

func (s *semantic) setOff(reason string) {
	s.mu.Lock()
	was := s.reason
	s.reason = reason
	s.retryAt = s.opts.Now().Add(s.opts.RetryAfter)
	s.mu.Unlock()
	if was == "" {
		s.opts.Logger.Warn("semantic search off, answering lexically", "model", s.opts.Model, "reason", reason)
	}
}

func (s *semantic) setOn() {
	s.mu.Lock()
	was := s.reason
	s.reason = ""
	s.mu.Unlock()
	if was != "" && s.vecs.Load() != nil {
		s.opts.Logger.Info("semantic search on", "model", s.opts.Model)
	}
}

// queryVector returns the unit vector of a query, or nil when searches must
// be lexical now: no endpoint vectors yet, the endpoint failed a moment ago,
// or it fails now.
func (s *semantic) queryVector(ctx context.Context, text string) []float32 {
	set := s.vecs.Load()
	if set == nil {
		return nil
	}
	key := strings.Join(strings.Fields(strings.ToLower(text)), " ")
	if len(key) > maxQueryBytes {
		key = truncateWords(key, maxQueryBytes)
	}
	if key == "" {
		return nil
	}
	if v, ok := s.queries.get(key); ok {
		return v
	}
	if s.queries == nil {
		return nil
	}
	s.mu.Lock()
	down := s.reason != "" && s.opts.Now().Before(s.retryAt)
	s.mu.Unlock()
	if down {
		return nil
	}
	vs, err := s.embed(ctx, []string{key})
	if err == nil && len(vs[0]) != set.dims {
		err = fmt.Errorf("a query vector of %d dimensions for endpoint vectors of %d", len(vs[0]), set.dims)
	}
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil // the caller gave up; says nothing of the endpoint
		}
		s.setOff("the embeddings endpoint failed a query: " + err.Error())
		return nil
	}
	s.setOn()
	qv := vs[0]
	if isZero(qv) {
		qv = nil // nothing to rank by: the lexical answer stands
	}
	s.queries.put(key, qv)
	return qv
}

func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var d float32
	for i, x := range a {
		d += x * b[i]
	}
	return d
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// nearest returns the entries (indexes) keep admits, nearest to qv first,
// at most n of them.
func (set *vectorSet) nearest(qv []float32, n int, keep func(int) bool) []int {
	type cand struct {
		i int
		d float32
	}
	rows := len(set.data) / set.dims
	top := make([]cand, 0, n+1)
	for i := 0; i < rows; i++ {
		if keep != nil && !keep(i) {
			continue
		}
		d := dot(qv, set.row(i))
		if len(top) == n && d <= top[n-1].d {
			continue
		}
		// insertion into the sorted top n
		k := sort.Search(len(top), func(j int) bool { return top[j].d < d })
		top = append(top, cand{})
		copy(top[k+1:], top[k:])
		top[k] = cand{i, d}
		if len(top) > n {
			top = top[:n]
		}
	}
	out := make([]int, len(top))
	for i, c := range top {
		out[i] = c.i
	}
	return out
}

// lru is a small cache of query vectors.
type lru struct {
	mu    sync.Mutex
	max   int
	tick  uint64
	items map[string]*lruItem
}

type lruItem struct {
	v    []float32
	used uint64
}

func newLRU(n int) *lru { return &lru{max: n, items: map[string]*lruItem{}} }

func (c *lru) get(k string) ([]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.tick++
	it.used = c.tick
	return it.v, true
}

func (c *lru) put(k string, v []float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	if len(c.items) >= c.max {
		oldest, at := "", ^uint64(0)
		for k, it := range c.items {
			if it.used < at {
				oldest, at = k, it.used
			}
		}
		delete(c.items, oldest)
	}
	c.items[k] = &lruItem{v: v, used: c.tick}
}

// EndpointText is what is embedded for an endpoint: method and path,
// operationId, summary, the opening of the description, tags and
// parameter names. TextRecipe names this recipe in the cache key: change
// it with the text.
func EndpointText(ep *spec.Endpoint) string {
	var b strings.Builder
	b.WriteString(ep.Method)
	b.WriteByte(' ')
	b.WriteString(ep.Path)
	if ep.OperationID != "" {
		b.WriteString("\n")
		b.WriteString(strings.Join(splitWords(ep.OperationID, nil), " "))
	}
	if ep.Summary != "" {
		b.WriteString("\n")
		b.WriteString(oneLine(stripMarkup(ep.Summary), 200))
	}
	if ep.Description != "" {
		d := truncateWords(strings.Join(strings.Fields(stripMarkup(ep.Description)), " "), 300)
		if d != "" {
			b.WriteString("\n")
			b.WriteString(d)
		}
	}
	if len(ep.Tags) > 0 {
		b.WriteString("\ntags: ")
		b.WriteString(strings.Join(ep.Tags, ", "))
	}
	if len(ep.Params) > 0 {
		b.WriteString("\nparameters: ")
		for i, p := range ep.Params {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(p.Name)
		}
	}
	return b.String()
}

// TextRecipe versions EndpointText in the vector cache's key.
const TextRecipe = "endpoint-text-v1"
