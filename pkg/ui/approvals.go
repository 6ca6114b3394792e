package ui

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sort"
	"sync"
	"time"
)

// DefaultMaxPending bounds the writes waiting for a person at once.
const DefaultMaxPending = 1000

// maxShown bounds the approvals the page lists; the rest are counted.
const maxShown = 100

// ErrTooManyPending is Ask's error when DefaultMaxPending writes wait.
var ErrTooManyPending = errors.New("too many writes wait for approval")

// Approval is a write waiting for a person: what an elicitation shows.
type Approval struct {
	ID        string   `json:"id"`
	Principal string   `json:"principal"`
	Endpoint  string   `json:"endpoint"`
	Summary   string   `json:"summary,omitempty"`
	Method    string   `json:"method"`
	Path      string   `json:"path"` // with its values
	Query     string   `json:"query,omitempty"`
	Headers   []string `json:"headers,omitempty"` // names only
	// Body is the body's first 300 bytes; Size and SHA256 (a prefix, hex)
	// are the whole body's.
	Body      string `json:"body,omitempty"`
	Size      int    `json:"size,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	Pages     int    `json:"pages,omitempty"`
	RunID     string `json:"runId,omitempty"`
	AskedAt   string `json:"askedAt"`
	ExpiresIn int    `json:"expiresInSeconds"`
	expires   time.Time
}

// Person is who acted on the page: the principal that signed in, and the
// address the request came from (Options.ClientAddr).
type Person struct {
	Who  string
	From string
}

// Decision is how a person answered.
type Decision struct {
	Approved bool
	By       Person
}

type pending struct {
	a   Approval
	ans chan Decision // buffered 1: the one answer
}

// Approvals is the waiting room of writes that need a person's approval on
// the page. The zero value is not usable; call NewApprovals. It is safe for
// concurrent use.
type Approvals struct {
	max int
	now func() time.Time

	mu sync.Mutex
	m  map[string]*pending
}

// NewApprovals returns a waiting room of at most max approvals (zero:
// DefaultMaxPending) on the clock now (nil: time.Now).
func NewApprovals(max int, now func() time.Time) *Approvals {
	if max <= 0 {
		max = DefaultMaxPending
	}
	if now == nil {
		now = time.Now
	}
	return &Approvals{max: max, now: now, m: map[string]*pending{}}
}

// Ask shows a on the page and waits until a person decides, ttl passes
// (context.DeadlineExceeded) or ctx ends. Each approval is answered once.
func (ap *Approvals) Ask(ctx context.Context, a Approval, ttl time.Duration) (Decision, error) {
	return ap.AskNotify(ctx, a, ttl, nil)
}

// AskNotify is Ask, calling asked (if not nil) with the approval's id once
// the page lists it, before it waits: a run that waits can say so. When
// AskNotify returns, the page no longer lists it.
func (ap *Approvals) AskNotify(ctx context.Context, a Approval, ttl time.Duration, asked func(id string)) (Decision, error) {
	id := make([]byte, 16)
	rand.Read(id)
	a.ID = "apr_" + hex.EncodeToString(id)
	now := ap.now()
	a.AskedAt = now.UTC().Format(time.RFC3339)
	a.expires = now.Add(ttl)
	p := &pending{a: a, ans: make(chan Decision, 1)}
	ap.mu.Lock()
	if len(ap.m) >= ap.max {
		ap.mu.Unlock()
		return Decision{}, ErrTooManyPending
	}
	ap.m[a.ID] = p
	ap.mu.Unlock()
	defer func() {
		ap.mu.Lock()
		delete(ap.m, a.ID)
		ap.mu.Unlock()
	}()
	if asked != nil {
		asked(a.ID)
	}
	t := time.NewTimer(ttl)
	defer t.Stop()
	select {
	case d := <-p.ans:
		return d, nil
	case <-t.C:
		return Decision{}, context.DeadlineExceeded
	case <-ctx.Done():
		return Decision{}, ctx.Err()
	}
}

// Decide answers the approval id; ErrNotFound when no write waits under
// that id (never asked here, expired, or already decided).
func (ap *Approvals) Decide(id string, d Decision) error {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	p, ok := ap.m[id]
	if !ok {
		return ErrNotFound
	}
	delete(ap.m, id)
	p.ans <- d
	return nil
}

// WaitingFor returns the ids of the approvals the run runID waits for,
// oldest first.
func (ap *Approvals) WaitingFor(runID string) []string {
	if ap == nil || runID == "" {
		return nil
	}
	type w struct{ at, id string }
	var ws []w
	ap.mu.Lock()
	for id, p := range ap.m {
		if p.a.RunID == runID {
			ws = append(ws, w{p.a.AskedAt, id})
		}
	}
	ap.mu.Unlock()
	sort.Slice(ws, func(i, j int) bool { return ws[i].at < ws[j].at || ws[i].at == ws[j].at && ws[i].id < ws[j].id })
	ids := make([]string, len(ws))
	for i, x := range ws {
		ids[i] = x.id
	}
	return ids
}

// Pending returns the oldest maxShown approvals waiting, and how many wait.
func (ap *Approvals) Pending() ([]Approval, int) {
	if ap == nil {
		return []Approval{}, 0
	}
	now := ap.now()
	ap.mu.Lock()
	out := make([]Approval, 0, len(ap.m))
	for _, p := range ap.m {
		a := p.a
		a.ExpiresIn = max(int(a.expires.Sub(now).Seconds()), 0)
		out = append(out, a)
	}
	n := len(ap.m)
	ap.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].AskedAt != out[j].AskedAt {
			return out[i].AskedAt < out[j].AskedAt
		}
		return out[i].ID < out[j].ID
	})
	if len(out) > maxShown {
		out = out[:maxShown]
	}
	return out, n
}
