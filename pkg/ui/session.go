package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"sync"
	"time"
)

// cookieName is the session cookie; its value is a random id of which the
// server keeps only the hash.
const cookieName = "specgate_ui"

// csrfHeader carries a session's CSRF token on every POST.
const csrfHeader = "X-CSRF-Token"

// sessionKey is the hash of a session's cookie, which the table is keyed by.
type sessionKey = [sha256.Size]byte

type session struct {
	who     string
	csrf    string
	expires time.Time
	streams int // event streams open; guarded by sessions.mu
}

// sessions are the signed-in viewers, keyed by the hash of their cookie.
type sessions struct {
	ttl time.Duration
	max int

	mu sync.Mutex
	m  map[[sha256.Size]byte]*session
}

func newID() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// open starts a session for who and returns its cookie value.
func (ss *sessions) open(who string, now time.Time) (id string, s *session) {
	id = newID()
	s = &session{who: who, csrf: newID(), expires: now.Add(ss.ttl)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, v := range ss.m {
		if !now.Before(v.expires) {
			delete(ss.m, k)
		}
	}
	if len(ss.m) >= ss.max {
		// The session closest to its end gives way: a flood of sign-ins
		// must not grow the table.
		var oldest [sha256.Size]byte
		var at time.Time
		for k, v := range ss.m {
			if at.IsZero() || v.expires.Before(at) {
				oldest, at = k, v.expires
			}
		}
		delete(ss.m, oldest)
	}
	ss.m[sha256.Sum256([]byte(id))] = s
	return id, s
}

// get returns the live session the request's cookie names, if any.
func (ss *sessions) get(r *http.Request, now time.Time) (*session, [sha256.Size]byte, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil || len(c.Value) > 64 {
		return nil, [sha256.Size]byte{}, false
	}
	k := sha256.Sum256([]byte(c.Value))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[k]
	if !ok {
		return nil, k, false
	}
	if !now.Before(s.expires) {
		delete(ss.m, k)
		return nil, k, false
	}
	return s, k, true
}

// alive reports whether the session k is still open at now.
func (ss *sessions) alive(k sessionKey, now time.Time) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[k]
	return ok && now.Before(s.expires)
}

// openStream counts an event stream of session k, if it has fewer than
// max open; closeStream uncounts it.
func (ss *sessions) openStream(k sessionKey, max int) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[k]
	if !ok || s.streams >= max {
		return false
	}
	s.streams++
	return true
}

func (ss *sessions) closeStream(k sessionKey) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s, ok := ss.m[k]; ok && s.streams > 0 {
		s.streams--
	}
}

func (ss *sessions) close(k [sha256.Size]byte) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, k)
}

// csrfOK reports whether the request carries the session's CSRF token.
func (s *session) csrfOK(r *http.Request) bool {
	got := r.Header.Get(csrfHeader)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

// failures throttles wrong sign-in tokens per client address when no
// Verify does it.
type failures struct {
	per    int
	window time.Duration

	mu sync.Mutex
	m  map[string][]time.Time
}

// allow reports whether addr may try again; fail records a wrong token.
func (f *failures) allow(addr string, now time.Time) (bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ts := f.live(addr, now)
	if len(ts) < f.per {
		return true, 0
	}
	return false, ts[0].Add(f.window).Sub(now)
}

func (f *failures) fail(addr string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.m) > 10000 {
		f.m = map[string][]time.Time{}
	}
	f.m[addr] = append(f.live(addr, now), now)
}

// live drops addr's failures older than the window. The caller holds mu.
func (f *failures) live(addr string, now time.Time) []time.Time {
	ts := f.m[addr]
	i := 0
	for i < len(ts) && !now.Before(ts[i].Add(f.window)) {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(f.m, addr)
		return nil
	}
	f.m[addr] = ts
	return ts
}

func peer(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}
