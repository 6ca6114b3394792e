package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/specgate/specgate/pkg/inauth"
)

// defaultSessionIdle is how long an HTTP session lives unused when
// Options.SessionIdle is zero.
const defaultSessionIdle = 30 * time.Minute

// sessionOwnerKey carries, in an HTTP request's context, the key of the
// principal that sends it, for httpSessions to bind a session to.
type sessionOwnerKey struct{}

// overHTTPKey marks a request that came over streamable HTTP; its value
// says whether Options.Sessions is on.
type overHTTPKey struct{}

// OverHTTP reports whether ctx is a request's that came over streamable
// HTTP and, if so, whether sessions are on there.
func OverHTTP(ctx context.Context) (sessions, ok bool) {
	sessions, ok = ctx.Value(overHTTPKey{}).(bool)
	return sessions, ok
}

var errUnknownSession = errors.New("no such session for this caller")

// httpSessions are the 2025-era MCP sessions this process opened over
// streamable HTTP (Options.Sessions). Each belongs to the principal
// whose initialize opened it: a request that names another principal's
// session is refused as if it did not exist, so a session ID is never a
// credential. It is an mcp-go SessionIdManagerResolver that binds the
// manager it returns to the request's principal. Sessions unused for idle
// are ended by sweep; past max, the least recently used session of the
// principal holding the most is ended first.
// Safe for concurrent use.
type httpSessions struct {
	idle time.Duration
	max  int
	now  func() time.Time

	mu        sync.Mutex
	byID      map[string]*httpSession
	ended     []string // removed here, still to be closed in mcp-go
	nextSweep time.Time
}

type httpSession struct {
	owner string
	seen  time.Time
}

func newHTTPSessions(idle time.Duration, max int, now func() time.Time) *httpSessions {
	if idle <= 0 {
		idle = defaultSessionIdle
	}
	if max <= 0 {
		max = 10000
	}
	return &httpSessions{idle: idle, max: max, now: now, byID: map[string]*httpSession{}}
}

var _ server.SessionIdManagerResolver = (*httpSessions)(nil)

// ResolveSessionIdManager returns the session IDs as the principal of r
// sees them. A nil r (mcp-go's own sweeper, which specgate does not start)
// owns nothing.
func (t *httpSessions) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	owner := ""
	if r != nil {
		owner, _ = r.Context().Value(sessionOwnerKey{}).(string)
	}
	return sessionIDs{t: t, owner: owner}
}

// open starts a session for owner and returns its ID.
func (t *httpSessions) open(owner string) string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	id := "mcp-session-" + hex.EncodeToString(b)
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byID) >= t.max {
		t.expireLocked(now)
	}
	if len(t.byID) >= t.max {
		oldest := t.evictionLocked(owner)
		delete(t.byID, oldest)
		t.ended = append(t.ended, oldest)
	}
	t.byID[id] = &httpSession{owner: owner, seen: now}
	return id
}

// evictionLocked picks the session to end for a new one of owner when the
// table is full: the least recently used session of the principals holding
// the most (owner's new one counted), so one principal opening sessions in
// a loop ends its own, never another's while it holds more.
func (t *httpSessions) evictionLocked(owner string) string {
	held := map[string]int{owner: 1}
	for _, s := range t.byID {
		held[s.owner]++
	}
	most := 0
	for _, n := range held {
		most = max(most, n)
	}
	oldest, at := "", time.Time{}
	for k, s := range t.byID {
		if held[s.owner] == most && (oldest == "" || s.seen.Before(at) || s.seen.Equal(at) && k < oldest) {
			oldest, at = k, s.seen
		}
	}
	return oldest
}

// use reports whether id is a live session of owner, and marks it used.
func (t *httpSessions) use(id, owner string) bool {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.byID[id]
	if !ok || s.owner != owner || now.Sub(s.seen) > t.idle {
		return false
	}
	s.seen = now
	return true
}

// end removes id unless it belongs to someone other than owner; an unknown
// id is already ended.
func (t *httpSessions) end(id, owner string) (notAllowed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.byID[id]
	if !ok {
		return false
	}
	if s.owner != owner {
		return true
	}
	delete(t.byID, id)
	return false
}

// expireLocked moves the sessions idle past t.idle to t.ended.
func (t *httpSessions) expireLocked(now time.Time) {
	for id, s := range t.byID {
		if now.Sub(s.seen) > t.idle {
			delete(t.byID, id)
			t.ended = append(t.ended, id)
		}
	}
	t.nextSweep = now.Add(t.idle / 4)
}

// sweep returns the sessions ended since the last sweep (idle, or evicted
// when full), for the caller to close in mcp-go. It looks at every session
// at most once a quarter of idle.
func (t *httpSessions) sweep(now time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !now.Before(t.nextSweep) {
		t.expireLocked(now)
	}
	ended := t.ended
	t.ended = nil
	return ended
}

// sessionIDs is mcp-go's view of httpSessions for one principal.
type sessionIDs struct {
	t     *httpSessions
	owner string
}

func (m sessionIDs) Generate() string { return m.t.open(m.owner) }

// Validate lets a request without a session through: it is served on its
// own, as with sessions off (and says so if it needs the user).
func (m sessionIDs) Validate(id string) (isTerminated bool, err error) {
	if id == "" || m.t.use(id, m.owner) {
		return false, nil
	}
	return false, errUnknownSession
}

func (m sessionIDs) Terminate(id string) (isNotAllowed bool, err error) {
	return m.t.end(id, m.owner), nil
}

// checkSession answers 404 to a GET or DELETE naming a session that is not
// the caller's, and 400 to a 2025-era GET naming none, before mcp-go sees
// them: mcp-go does not validate the session of a GET stream, so another
// principal's could be listened on. A POST's session is validated by
// mcp-go through sessionIDs (a 2026-07-28 POST has none).
func (h *handler) checkSession(w http.ResponseWriter, r *http.Request, owner string) bool {
	if h.sessions == nil || r.Method == http.MethodPost {
		return true
	}
	id := r.Header.Get(server.HeaderKeySessionID)
	switch {
	case id != "":
		if h.sessions.use(id, owner) {
			return true // a DELETE ends it through sessionIDs.Terminate
		}
		inauth.WriteError(w, http.StatusNotFound, "SESSION_NOT_FOUND", "no such session: initialize again", 0)
		return false
	case r.Method == http.MethodGet && !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)):
		inauth.WriteError(w, http.StatusBadRequest, "BAD_REQUEST", "a GET stream needs the Mcp-Session-Id of a session this caller opened", 0)
		return false
	}
	return true
}

// closeSessions ends in mcp-go the sessions sweep found ended, as a DELETE
// of each would: mcp-go keeps a registered session until then.
func (h *handler) closeSessions(ctx context.Context) {
	for _, id := range h.sessions.sweep(h.now()) {
		r, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodDelete, "/mcp", nil)
		if err != nil {
			continue
		}
		// The context still names the inbound connection's local address,
		// so on a loopback listener mcp-go's DNS-rebinding guard reads this
		// DELETE's Host: left empty, it was refused and no ended session
		// was ever freed.
		r.Host = "localhost"
		r.Header.Set(server.HeaderKeySessionID, id)
		h.streamable.ServeHTTP(discardResponse{header: http.Header{}}, r)
	}
}

// discardResponse is the ResponseWriter of closeSessions' DELETEs.
type discardResponse struct{ header http.Header }

func (d discardResponse) Header() http.Header         { return d.header }
func (d discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d discardResponse) WriteHeader(int)             {}
