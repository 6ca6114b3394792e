package answer

import (
	"bytes"
	"compress/flate"
	"container/heap"
	"container/list"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Answer is one stored upstream answer: the redacted whole body as read from the wire,
// plus what read_response needs.
type Answer struct {
	Endpoint    string            `json:"endpoint"`
	StatusCode  int               `json:"statusCode"`
	ContentType string            `json:"contentType,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Body        []byte            `json:"body"`
	Truncated   bool              `json:"truncated,omitempty"`
	Pages       int               `json:"pages,omitempty"`
	NextPage    map[string]any    `json:"nextPage,omitempty"`
	Created     time.Time         `json:"created"`
	// Decoded, when not nil, is Body as DecodeJSON returns it, so that a view of a
	// fresh answer does not decode the body again. No store keeps it; nothing may
	// change it.
	Decoded any `json:"-"`
}

// AnswerStore keeps answers per principal. Implementations are safe for concurrent use.
type AnswerStore interface {
	// Put stores a and returns a new random id (128 bits, URL-safe text).
	Put(ctx context.Context, principal string, a *Answer) (string, error)
	// Get returns the answer if it belongs to principal. An id that is another principal's is
	// reported exactly as an unknown id.
	Get(ctx context.Context, principal, id string) (*Answer, error)
}

// Reasons an AnswerNotFoundError gives.
const (
	AnswerUnknown = "unknown"
	AnswerExpired = "expired"
	AnswerEvicted = "evicted"
)

// AnswerNotFoundError says why an id could not be read: Reason is "unknown", "expired" or
// "evicted". Another principal's id is "unknown", with the same message as an id never
// issued. The MCP layer maps it to not_found.
type AnswerNotFoundError struct {
	// ID is the id asked for, cut to 64 bytes when it was longer.
	ID string
	// Reason is AnswerUnknown, AnswerExpired or AnswerEvicted.
	Reason string
}

func (e *AnswerNotFoundError) Error() string {
	switch e.Reason {
	case AnswerExpired:
		return "stored response expired: it was not read for longer than the store keeps answers"
	case AnswerEvicted:
		return "stored response evicted: the store needed room for newer answers"
	}
	return "no stored response has this id"
}

// Hint says what to do next.
func (e *AnswerNotFoundError) Hint() string {
	if e.Reason == AnswerUnknown {
		return "Use a responseId from an invoke result of this session."
	}
	return "Call invoke again for a fresh answer; a jq filter there keeps only the fields you need."
}

// NotFound is the error for id, which is not there for reason.
func NotFound(id, reason string) *AnswerNotFoundError {
	if len(id) > 64 {
		id = id[:64] // a 10 KB id is not echoed back
	}
	return &AnswerNotFoundError{ID: id, Reason: reason}
}

// ErrAnswerTooLarge is returned by Put for an answer larger than the store can hold at
// all; the caller then answers with the preview and no responseId.
var ErrAnswerTooLarge = errors.New("answer is larger than the response store")

// Defaults of MemoryAnswersOptions and of the Redis store's (redisstore.AnswersOptions).
const (
	DefaultAnswerBytes = 64 << 20
	DefaultAnswerTTL   = 15 * time.Minute
)

// answerIDPrefix starts every id, so that a responseId reads as one in a transcript.
const answerIDPrefix = "r_"

// answerIDLen is the length of an id: the prefix and 16 bytes in unpadded base64url.
var answerIDLen = len(answerIDPrefix) + base64.RawURLEncoding.EncodedLen(16)

// answerKey is an id's 128 random bits; maps and records of gone ids hold it rather than
// the text.
type answerKey [16]byte

var strictID = base64.RawURLEncoding.Strict()

// newAnswerID returns a fresh id from crypto/rand.
func newAnswerID() (string, answerKey) {
	var k answerKey
	_, _ = rand.Read(k[:]) // never fails (crypto/rand crashes the program instead)
	return answerIDPrefix + base64.RawURLEncoding.EncodeToString(k[:]), k
}

// parseAnswerID reports whether s is an id newAnswerID could have made. Its length is
// checked first, so a long string costs nothing.
func parseAnswerID(s string) (answerKey, bool) {
	var k answerKey
	if len(s) != answerIDLen || s[:len(answerIDPrefix)] != answerIDPrefix {
		return k, false
	}
	var src [32]byte
	n := copy(src[:], s[len(answerIDPrefix):])
	m, err := strictID.Decode(k[:], src[:n])
	return k, err == nil && m == len(k)
}

// NewID returns a fresh answer id from crypto/rand: "r_" and 128 bits in unpadded
// base64url. Every store issues its ids with it.
func NewID() string {
	id, _ := newAnswerID()
	return id
}

// ValidID reports whether s is an id NewID could have made; it costs nothing for a long s.
func ValidID(s string) bool {
	_, ok := parseAnswerID(s)
	return ok
}

// EncodeStored returns a in the stored form every store keeps (see below).
func EncodeStored(a *Answer) ([]byte, error) { return encodeAnswer(a) }

// DecodeStored returns the answer of a blob EncodeStored made; a damaged blob is an error.
func DecodeStored(blob []byte) (*Answer, error) { return decodeAnswer(blob) }

// The stored form of an answer, the same in every store:
//
//	kind byte | uvarint len(meta) | uvarint len(body) | meta JSON | body, raw or deflated
//
// JSON from APIs deflates about tenfold at the fastest level; a body that does not shrink
// (an image) is kept raw.
const (
	blobRaw      = 1
	blobDeflated = 2
	// minDeflate is the body size below which compressing is not worth its header.
	minDeflate = 128
)

// answerMeta is an Answer without its body.
type answerMeta struct {
	Endpoint    string            `json:"endpoint"`
	StatusCode  int               `json:"statusCode"`
	ContentType string            `json:"contentType,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Truncated   bool              `json:"truncated,omitempty"`
	Pages       int               `json:"pages,omitempty"`
	NextPage    map[string]any    `json:"nextPage,omitempty"`
	Created     time.Time         `json:"created"`
}

var deflaters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(io.Discard, flate.BestSpeed) // cannot fail for a valid level
	return w
}}

var inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

// encodeAnswer returns a's stored form; a itself is not kept.
func encodeAnswer(a *Answer) ([]byte, error) {
	meta, err := json.Marshal(answerMeta{
		Endpoint: a.Endpoint, StatusCode: a.StatusCode, ContentType: a.ContentType,
		Headers: a.Headers, Truncated: a.Truncated, Pages: a.Pages, NextPage: a.NextPage,
		Created: a.Created,
	})
	if err != nil {
		return nil, fmt.Errorf("answer for %s: %w", a.Endpoint, err)
	}
	head := make([]byte, 1, 1+2*binary.MaxVarintLen64+len(meta))
	head = binary.AppendUvarint(head, uint64(len(meta)))
	head = binary.AppendUvarint(head, uint64(len(a.Body)))
	head = append(head, meta...)
	if len(a.Body) >= minDeflate {
		// a tenth of the body is what JSON usually needs; the buffer grows when not
		buf := bytes.NewBuffer(make([]byte, 0, len(head)+len(a.Body)/8+64))
		buf.Write(head)
		w := deflaters.Get().(*flate.Writer)
		w.Reset(buf)
		_, err := w.Write(a.Body)
		if err == nil {
			err = w.Close()
		}
		deflaters.Put(w)
		if err != nil {
			return nil, err
		}
		if z := buf.Bytes(); len(z)-len(head) < len(a.Body) {
			z[0] = blobDeflated
			return z, nil
		}
	}
	blob := append(head, a.Body...)
	blob[0] = blobRaw
	return blob, nil
}

var errBadBlob = errors.New("stored answer is damaged")

// decodeAnswer reads a stored form back into a new Answer that shares nothing with blob.
func decodeAnswer(blob []byte) (*Answer, error) {
	if len(blob) == 0 {
		return nil, errBadBlob
	}
	kind, rest := blob[0], blob[1:]
	metaLen, n := binary.Uvarint(rest)
	if n <= 0 {
		return nil, errBadBlob
	}
	rest = rest[n:]
	bodyLen, n := binary.Uvarint(rest)
	if n <= 0 || metaLen > uint64(len(rest)-n) {
		return nil, errBadBlob
	}
	rest = rest[n:]
	var m answerMeta
	if err := json.Unmarshal(rest[:metaLen], &m); err != nil {
		return nil, errBadBlob
	}
	payload := rest[metaLen:]
	var body []byte
	switch kind {
	case blobRaw:
		if uint64(len(payload)) != bodyLen {
			return nil, errBadBlob
		}
		body = bytes.Clone(payload)
	case blobDeflated:
		// deflate expands at most about 1032:1, so a damaged length cannot make us
		// allocate far more than the blob could hold
		if bodyLen > uint64(len(payload))*1100+minDeflate {
			return nil, errBadBlob
		}
		body = make([]byte, bodyLen)
		// a bytes.Reader is an io.ByteReader, so flate reads no further than its stream
		src := bytes.NewReader(payload)
		r := inflaters.Get().(io.ReadCloser)
		if err := r.(flate.Resetter).Reset(src, nil); err != nil {
			return nil, errBadBlob
		}
		_, err := io.ReadFull(r, body)
		if err == nil {
			var one [1]byte
			if k, _ := r.Read(one[:]); k != 0 || src.Len() != 0 {
				err = errBadBlob // more than the recorded length, or bytes after the stream
			}
		}
		inflaters.Put(r)
		if err != nil {
			return nil, errBadBlob
		}
	default:
		return nil, errBadBlob
	}
	if len(body) == 0 {
		body = nil
	}
	return &Answer{
		Endpoint: m.Endpoint, StatusCode: m.StatusCode, ContentType: m.ContentType,
		Headers: m.Headers, Body: body, Truncated: m.Truncated, Pages: m.Pages,
		NextPage: m.NextPage, Created: m.Created,
	}, nil
}

// Estimates of what the memory store holds besides the stored forms, so that MaxBytes
// bounds the heap it really uses.
const (
	// entryOverhead: the entry, its two list elements, its map slot, size-class slack.
	entryOverhead = 256
	// shelfOverhead (plus the principal's length): a principal's shelf, map slot, heap slot.
	shelfOverhead = 192
)

// Bounds of the record of gone ids, which tells "evicted" and "expired" from "unknown":
// GoneIDs ids of each principal, in every store; the memory store keeps them for
// gonePrincipals principals, at most GoneIDs × gonePrincipals × 17 bytes (about 4.4 MiB,
// outside MaxBytes).
const (
	GoneIDs        = 256
	gonePrincipals = 1024
)

// MemoryAnswersOptions configure a MemoryAnswers. The zero value is useful.
type MemoryAnswersOptions struct {
	// MaxBytes bounds what the store holds: compressed answers plus an estimate of
	// their bookkeeping. Zero or less: 64 MiB.
	MaxBytes int64
	// TTL is how long an answer is kept after it was stored or last read. Zero or less:
	// 15m.
	TTL time.Duration
	// Now tells the time. Nil: time.Now.
	Now func() time.Time
}

// MemoryAnswers is the AnswerStore of one process. It holds answers deflated, counts the
// bytes it really holds, and, when full, evicts the least recently used answer of the
// principal holding the most bytes, so one busy agent cannot push out everyone else's.
// Answers idle past the TTL are dropped lazily, on Put and Get; the store starts no
// goroutine. A MemoryAnswers is safe for concurrent use.
type MemoryAnswers struct {
	max int64
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex // guards the fields below
	bytes   int64      // sum of shelves' bytes
	byKey   map[answerKey]*memAnswer
	shelves map[string]*answerShelf
	heavy   shelfHeap // shelves, the one holding the most bytes first
	idle    list.List // of *memAnswer, the most recently used first
	gone    goneLog
}

var _ AnswerStore = (*MemoryAnswers)(nil)

type memAnswer struct {
	key    answerKey
	blob   []byte // never changed once stored, so Get decodes it outside the lock
	cost   int64
	used   time.Time
	shelf  *answerShelf
	inIdle *list.Element
	inLRU  *list.Element
}

// answerShelf is one principal's answers.
type answerShelf struct {
	principal string
	bytes     int64     // its answers' costs plus its own overhead
	lru       list.List // of *memAnswer, the most recently used first
	index     int       // in the heap
}

// NewMemoryAnswers returns an empty store.
func NewMemoryAnswers(opts MemoryAnswersOptions) *MemoryAnswers {
	s := &MemoryAnswers{
		max:     opts.MaxBytes,
		ttl:     opts.TTL,
		now:     opts.Now,
		byKey:   make(map[answerKey]*memAnswer),
		shelves: make(map[string]*answerShelf),
		gone:    goneLog{byPrincipal: make(map[string]*list.Element)},
	}
	if s.max <= 0 {
		s.max = DefaultAnswerBytes
	}
	if s.ttl <= 0 {
		s.ttl = DefaultAnswerTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Put stores a for principal, evicting older answers when the store is full. An answer
// that would not fit in the empty store is refused with ErrAnswerTooLarge.
func (s *MemoryAnswers) Put(ctx context.Context, principal string, a *Answer) (string, error) {
	blob, err := encodeAnswer(a) // outside the lock: compressing 670 KB takes milliseconds
	if err != nil {
		return "", err
	}
	cost := int64(len(blob)) + entryOverhead
	if cost+shelfCost(principal) > s.max {
		return "", fmt.Errorf("%w: %d bytes compressed, the store holds %d", ErrAnswerTooLarge, cost, s.max)
	}
	id, key := newAnswerID()

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweep(now)
	for {
		sh := s.shelves[principal]
		need := cost
		if sh == nil {
			need += shelfCost(principal)
		}
		if s.bytes+need <= s.max {
			break
		}
		// never empty here: an empty store has room for any answer that passed the check
		victim := s.heavy[0]
		s.remove(victim.lru.Back().Value.(*memAnswer), AnswerEvicted)
	}
	sh := s.shelves[principal]
	if sh == nil {
		sh = &answerShelf{principal: principal, bytes: shelfCost(principal)}
		s.shelves[principal] = sh
		heap.Push(&s.heavy, sh)
		s.bytes += sh.bytes
	}
	e := &memAnswer{key: key, blob: blob, cost: cost, used: now, shelf: sh}
	e.inIdle = s.idle.PushFront(e)
	e.inLRU = sh.lru.PushFront(e)
	s.byKey[key] = e
	sh.bytes += cost
	s.bytes += cost
	heap.Fix(&s.heavy, sh.index)
	return id, nil
}

// Get returns principal's answer with id and counts it as used: its TTL starts again.
func (s *MemoryAnswers) Get(ctx context.Context, principal, id string) (*Answer, error) {
	key, ok := parseAnswerID(id)
	if !ok {
		return nil, NotFound(id, AnswerUnknown)
	}
	s.mu.Lock()
	now := s.now()
	s.sweep(now)
	e := s.byKey[key]
	if e == nil || e.shelf.principal != principal {
		reason := s.gone.lookup(principal, key)
		s.mu.Unlock()
		return nil, NotFound(id, reason)
	}
	e.used = now
	s.idle.MoveToFront(e.inIdle)
	e.shelf.lru.MoveToFront(e.inLRU)
	blob := e.blob
	s.mu.Unlock()
	return decodeAnswer(blob)
}

// Bytes reports how many bytes the store counts as held; never more than its MaxBytes.
func (s *MemoryAnswers) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// Len reports how many answers the store holds, expired ones not yet swept included.
func (s *MemoryAnswers) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey)
}

func shelfCost(principal string) int64 { return shelfOverhead + int64(len(principal)) }

// sweep drops the answers idle for the TTL or longer, the least recently used first.
func (s *MemoryAnswers) sweep(now time.Time) {
	for el := s.idle.Back(); el != nil; el = s.idle.Back() {
		e := el.Value.(*memAnswer)
		if now.Before(e.used.Add(s.ttl)) {
			return
		}
		s.remove(e, AnswerExpired)
	}
}

// remove drops e and records why.
func (s *MemoryAnswers) remove(e *memAnswer, reason string) {
	sh := e.shelf
	delete(s.byKey, e.key)
	s.idle.Remove(e.inIdle)
	sh.lru.Remove(e.inLRU)
	sh.bytes -= e.cost
	s.bytes -= e.cost
	s.gone.add(sh.principal, e.key, reason)
	if sh.lru.Len() == 0 {
		heap.Remove(&s.heavy, sh.index)
		delete(s.shelves, sh.principal)
		s.bytes -= sh.bytes
		return
	}
	heap.Fix(&s.heavy, sh.index)
}

// shelfHeap orders shelves by bytes held, the most first.
type shelfHeap []*answerShelf

func (h shelfHeap) Len() int           { return len(h) }
func (h shelfHeap) Less(i, j int) bool { return h[i].bytes > h[j].bytes }
func (h shelfHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *shelfHeap) Push(x any) {
	sh := x.(*answerShelf)
	sh.index = len(*h)
	*h = append(*h, sh)
}
func (h *shelfHeap) Pop() any {
	old := *h
	sh := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return sh
}

// goneLog remembers, for the gonePrincipals principals that lost answers most recently,
// the last GoneIDs of their ids that were evicted or expired.
type goneLog struct {
	byPrincipal map[string]*list.Element // of *goneRing
	order       list.List                // the most recently written first
}

type goneRing struct {
	principal string
	keys      [GoneIDs]answerKey
	why       [GoneIDs]uint8 // 0: empty slot
	next      int
}

const (
	goneExpired = 1
	goneEvicted = 2
)

func (g *goneLog) add(principal string, key answerKey, reason string) {
	el := g.byPrincipal[principal]
	if el == nil {
		if g.order.Len() >= gonePrincipals {
			oldest := g.order.Back()
			delete(g.byPrincipal, oldest.Value.(*goneRing).principal)
			g.order.Remove(oldest)
		}
		el = g.order.PushFront(&goneRing{principal: principal})
		g.byPrincipal[principal] = el
	} else {
		g.order.MoveToFront(el)
	}
	r := el.Value.(*goneRing)
	r.keys[r.next] = key
	r.why[r.next] = goneExpired
	if reason == AnswerEvicted {
		r.why[r.next] = goneEvicted
	}
	r.next = (r.next + 1) % GoneIDs
}

func (g *goneLog) lookup(principal string, key answerKey) string {
	el := g.byPrincipal[principal]
	if el == nil {
		return AnswerUnknown
	}
	r := el.Value.(*goneRing)
	for i := range r.keys {
		if r.why[i] != 0 && r.keys[i] == key {
			if r.why[i] == goneEvicted {
				return AnswerEvicted
			}
			return AnswerExpired
		}
	}
	return AnswerUnknown
}
