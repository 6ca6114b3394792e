package runs

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// Store keeps run records where every replica serving the same clients can
// read them. Implementations are safe for concurrent use.
type Store interface {
	// Save writes r's stored form. While r runs, it stays alive for alive
	// (a record not saved again within it reads as not alive); the record
	// is kept for keep.
	Save(ctx context.Context, r *Record, blob []byte, alive, keep time.Duration) error
	// Load returns the stored form of principal's run id, and whether it
	// is alive; ErrNotFound when there is none.
	Load(ctx context.Context, principal, id string) (blob []byte, alive bool, err error)
	// RequestCancel asks the replica running the run to stop it.
	RequestCancel(ctx context.Context, principal, id string, keep time.Duration) error
	// CancelRequested reports whether RequestCancel was called for the run.
	CancelRequested(ctx context.Context, principal, id string) (bool, error)
	// List returns the stored forms of principal's runs still kept,
	// newest started first, at most limit (and at most MaxListed) of them.
	// Never another principal's.
	List(ctx context.Context, principal string, limit int) ([]Stored, error)
}

// MaxListed bounds the runs a listing holds: a store keeps in its index of
// a principal's runs at most this many of the newest.
const MaxListed = 100

// Stored is one run as a Store lists it: its id, its stored form, and
// whether it is alive.
type Stored struct {
	ID    string
	Blob  []byte
	Alive bool
}

// MemoryStoreOptions configure a MemoryStore. The zero value is usable.
type MemoryStoreOptions struct {
	// MaxRecords bounds the records kept; past it the record expiring
	// first of the principal holding the most is dropped, so one busy
	// principal cannot push out another's answers. If zero, 10,000.
	MaxRecords int
	// Now is the clock. If nil, time.Now.
	Now func() time.Time
}

// MemoryStore is a Store for one process. Its zero value is not usable: use
// NewMemoryStore.
type MemoryStore struct {
	max int
	now func() time.Time

	mu      sync.Mutex
	records map[memKey]*memRecord
}

type memKey struct{ principal, id string }

type memRecord struct {
	blob       []byte
	started    time.Time
	aliveUntil time.Time
	expires    time.Time
	cancel     bool
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore(o MemoryStoreOptions) *MemoryStore {
	if o.MaxRecords <= 0 {
		o.MaxRecords = 10_000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &MemoryStore{max: o.MaxRecords, now: o.Now, records: map[memKey]*memRecord{}}
}

// Save implements Store.
func (s *MemoryStore) Save(_ context.Context, r *Record, blob []byte, alive, keep time.Duration) error {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	k := memKey{r.Principal, r.ID}
	e := s.records[k]
	if e == nil {
		s.sweep(now)
		e = &memRecord{}
		s.records[k] = e
	}
	e.blob, e.started = blob, r.Started
	e.expires = now.Add(keep)
	e.aliveUntil = time.Time{}
	if r.Status == Running {
		e.aliveUntil = now.Add(alive)
	}
	return nil
}

// sweep drops expired records and, when still full, the one expiring first
// of the principal holding the most.
func (s *MemoryStore) sweep(now time.Time) {
	if len(s.records) < s.max {
		return
	}
	held := map[string]int{}
	for k, e := range s.records {
		if now.After(e.expires) {
			delete(s.records, k)
			continue
		}
		held[k.principal]++
	}
	if len(s.records) < s.max {
		return
	}
	heaviest, most := "", 0
	for p, n := range held {
		if n > most || n == most && p < heaviest {
			heaviest, most = p, n
		}
	}
	var first memKey
	var at time.Time
	for k, e := range s.records {
		if k.principal == heaviest && (at.IsZero() || e.expires.Before(at)) {
			first, at = k, e.expires
		}
	}
	delete(s.records, first)
}

// Load implements Store.
func (s *MemoryStore) Load(_ context.Context, principal, id string) ([]byte, bool, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.records[memKey{principal, id}]
	if e == nil || now.After(e.expires) {
		return nil, false, ErrNotFound
	}
	return e.blob, now.Before(e.aliveUntil), nil
}

// RequestCancel implements Store.
func (s *MemoryStore) RequestCancel(_ context.Context, principal, id string, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.records[memKey{principal, id}]; e != nil {
		e.cancel = true
	}
	return nil
}

// CancelRequested implements Store.
func (s *MemoryStore) CancelRequested(_ context.Context, principal, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.records[memKey{principal, id}]
	return e != nil && e.cancel, nil
}

// List implements Store.
func (s *MemoryStore) List(_ context.Context, principal string, limit int) ([]Stored, error) {
	now := s.now()
	s.mu.Lock()
	type listed struct {
		Stored
		started time.Time
	}
	var all []listed
	for k, e := range s.records {
		if k.principal == principal && !now.After(e.expires) {
			all = append(all, listed{Stored{k.id, e.blob, now.Before(e.aliveUntil)}, e.started})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b listed) int {
		if c := b.started.Compare(a.started); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	out := make([]Stored, 0, min(len(all), max(limit, 0), MaxListed))
	for _, l := range all[:cap(out)] {
		out = append(out, l.Stored)
	}
	return out, nil
}
