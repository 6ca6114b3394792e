// Package ui serves the governance page at /ui: a person signs in with an
// admin token (or a one-time token printed at start) and watches each
// upstream's budget, the last ten minutes of calls, queue and 429s, the
// runs in flight (and cancels them) and the audit tail. Its figures come
// from a Source that the MCP server implements, read once a second by a
// Hub for every viewer; its assets are embedded and it loads nothing from
// any other origin.
package ui

import (
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed assets
var assets embed.FS

// Defaults of Options' zero fields.
const (
	DefaultSessionTTL  = 8 * time.Hour
	DefaultMaxSessions = 1000
	// maxPostBytes bounds a POST body: the page sends an id or two.
	maxPostBytes = 4 << 10
	// maxIDBytes bounds an id in a POST; run ids are far shorter.
	maxIDBytes = 128
)

// csp holds the page to its own origin; no inline script or style runs.
const csp = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

// ErrNotAdmin is Verify's error for a valid token without the admin scope.
var ErrNotAdmin = errors.New("the token has no admin scope")

// ThrottledError is Verify's error once a client address has failed too
// often; it is answered 429 with Retry-After.
type ThrottledError struct{ RetryAfter time.Duration }

func (e *ThrottledError) Error() string { return "too many failed sign-ins from this address" }

// Options configure a Handler. The zero value of each field is documented.
type Options struct {
	// Hub gives the state. Required.
	Hub *Hub
	// Source cancels runs. If nil, the Hub's.
	Source Source
	// Approvals are decided from the page. If nil, the Hub's (and with
	// none, deciding is 404).
	Approvals *Approvals
	// Verify checks a bearer token offered to sign in and names who it
	// stands for: ErrNotAdmin for a valid token without admin, a
	// *ThrottledError once its address failed too often, any other error
	// for a wrong token (which Verify counts against the address). If nil,
	// only OneTimeToken signs in.
	Verify func(r *http.Request, token string) (who string, err error)
	// OneTimeToken, if set, signs in once (as "one-time token"), by
	// /ui/?token=... or as a bearer token. If empty, none.
	OneTimeToken string
	// FailedPerMinute bounds wrong tokens per client address per minute
	// when Verify is nil. If zero, 10.
	FailedPerMinute int
	// SessionTTL is how long a session lasts. If zero, DefaultSessionTTL.
	SessionTTL time.Duration
	// MaxSessions bounds the sessions kept; past it the one nearest its end
	// is closed. If zero, DefaultMaxSessions.
	MaxSessions int
	// ClientAddr names the address a request came from, for the audit
	// lines of what a person does on the page. If nil, the socket's peer
	// (give the server's trusted-proxy rule to believe X-Forwarded-For).
	ClientAddr func(*http.Request) string
	// StreamLifetime is how long one event stream lasts before the browser
	// reconnects (never past its session's end). If zero,
	// DefaultStreamLifetime.
	StreamLifetime time.Duration
	// Now is the clock of sessions and throttling. If nil, time.Now.
	Now func() time.Time
}

// Handler serves /ui. It is safe for concurrent use.
type Handler struct {
	o    Options
	ss   *sessions
	fail *failures
	xo   *http.CrossOriginProtection
	mux  *http.ServeMux

	mu      sync.Mutex
	oneTime *[sha256.Size]byte // nil once used
}

var _ http.Handler = (*Handler)(nil)

// New returns the page's handler; mount it at /ui and /ui/.
func New(o Options) *Handler {
	if o.Source == nil && o.Hub != nil {
		o.Source = o.Hub.src
	}
	if o.Approvals == nil && o.Hub != nil {
		o.Approvals = o.Hub.o.Approvals
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.FailedPerMinute <= 0 {
		o.FailedPerMinute = 10
	}
	if o.ClientAddr == nil {
		o.ClientAddr = peer
	}
	if o.StreamLifetime <= 0 {
		o.StreamLifetime = DefaultStreamLifetime
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &Handler{o: o, xo: http.NewCrossOriginProtection(), mux: http.NewServeMux(),
		ss:   &sessions{ttl: o.SessionTTL, max: o.MaxSessions, m: map[[sha256.Size]byte]*session{}},
		fail: &failures{per: o.FailedPerMinute, window: time.Minute, m: map[string][]time.Time{}}}
	if o.OneTimeToken != "" {
		k := sha256.Sum256([]byte(o.OneTimeToken))
		h.oneTime = &k
	}
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	h.mux.Handle("GET /ui/{file}", http.StripPrefix("/ui/", files))
	h.mux.HandleFunc("GET /ui/{$}", h.serveIndex)
	h.mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	})
	h.mux.HandleFunc("POST /ui/api/signin", h.serveSignIn)
	h.mux.HandleFunc("POST /ui/api/signout", h.signedIn(true, h.serveSignOut))
	h.mux.HandleFunc("GET /ui/api/session", h.signedIn(false, h.serveSession))
	h.mux.HandleFunc("GET /ui/api/state", h.signedIn(false, h.serveState))
	h.mux.HandleFunc("GET /ui/api/events", h.signedIn(false, h.serveEvents))
	h.mux.HandleFunc("POST /ui/api/runs/cancel", h.signedIn(true, h.serveCancel))
	h.mux.HandleFunc("POST /ui/api/approvals/decide", h.signedIn(true, h.serveDecide))
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cache-Control", "no-store")
	// A cross-site request may not change anything, sign-in included:
	// Sec-Fetch-Site, else Origin against Host, as net/http checks them.
	if err := h.xo.Check(r); err != nil {
		writeError(w, http.StatusForbidden, "forbidden", "a cross-origin request may not do this", 0)
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) serveIndex(w http.ResponseWriter, r *http.Request) {
	if tok := r.URL.Query().Get("token"); tok != "" {
		// The URL printed at start: its token becomes a cookie, and the
		// address bar loses it.
		if !h.takeOneTime(w, r, tok) {
			return
		}
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	b, _ := assets.ReadFile("assets/index.html")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b)
}

// takeOneTime signs in with the one-time token, or answers why not.
func (h *Handler) takeOneTime(w http.ResponseWriter, r *http.Request, tok string) bool {
	now := h.o.Now()
	if ok, wait := h.fail.allow(peer(r), now); !ok {
		writeThrottled(w, wait)
		return false
	}
	if !h.useOneTime(tok) {
		h.fail.fail(peer(r), now)
		writeError(w, http.StatusUnauthorized, "unauthorized", "that sign-in link was used already or is wrong; restart specgate for a new one", 0)
		return false
	}
	h.start(w, r, "one-time token")
	return true
}

func (h *Handler) useOneTime(tok string) bool {
	if len(tok) > 256 {
		return false
	}
	k := sha256.Sum256([]byte(tok))
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.oneTime == nil || subtle.ConstantTimeCompare(k[:], h.oneTime[:]) != 1 {
		return false
	}
	h.oneTime = nil
	return true
}

// start opens a session and sets its cookie.
func (h *Handler) start(w http.ResponseWriter, r *http.Request, who string) *session {
	id, s := h.ss.open(who, h.o.Now())
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: id, Path: "/ui", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int(h.o.SessionTTL / time.Second)})
	return s
}

func (h *Handler) serveSignIn(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || tok == "" || len(auth) > 8<<10 {
		writeError(w, http.StatusUnauthorized, "unauthorized", "sign in with Authorization: Bearer <admin token>", 0)
		return
	}
	if h.useOneTime(tok) {
		s := h.start(w, r, "one-time token")
		writeJSON(w, map[string]string{"who": s.who, "csrf": s.csrf})
		return
	}
	var who string
	var err error
	if h.o.Verify != nil {
		who, err = h.o.Verify(r, tok)
	} else {
		now := h.o.Now()
		err = errors.New("wrong token")
		if ok, wait := h.fail.allow(peer(r), now); !ok {
			err = &ThrottledError{RetryAfter: wait}
		} else {
			h.fail.fail(peer(r), now)
		}
	}
	var te *ThrottledError
	switch {
	case err == nil:
		s := h.start(w, r, who)
		writeJSON(w, map[string]string{"who": s.who, "csrf": s.csrf})
	case errors.Is(err, ErrNotAdmin):
		writeError(w, http.StatusForbidden, "forbidden", "this token has no admin scope; the page needs one that has", 0)
	case errors.As(err, &te):
		writeThrottled(w, te.RetryAfter)
	default:
		writeError(w, http.StatusUnauthorized, "unauthorized", "the token is not valid", 0)
	}
}

// signedIn serves next only for a live session, and a POST only with the
// session's CSRF token.
func (h *Handler) signedIn(post bool, next func(http.ResponseWriter, *http.Request, *session, [sha256.Size]byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, k, ok := h.ss.get(r, h.o.Now())
		if !ok {
			writeError(w, http.StatusUnauthorized, "unauthorized", "sign in first", 0)
			return
		}
		if post && !s.csrfOK(r) {
			writeError(w, http.StatusForbidden, "forbidden", "the CSRF token is missing or not this session's; reload the page", 0)
			return
		}
		next(w, r, s, k)
	}
}

func (h *Handler) serveSignOut(w http.ResponseWriter, _ *http.Request, _ *session, k [sha256.Size]byte) {
	h.ss.close(k)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) serveSession(w http.ResponseWriter, _ *http.Request, s *session, _ [sha256.Size]byte) {
	writeJSON(w, map[string]string{"who": s.who, "csrf": s.csrf})
}

func (h *Handler) serveState(w http.ResponseWriter, _ *http.Request, _ *session, _ [sha256.Size]byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(h.o.Hub.JSON())
}

func (h *Handler) serveCancel(w http.ResponseWriter, r *http.Request, s *session, _ [sha256.Size]byte) {
	var req struct {
		RunID string `json:"runId"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if req.RunID == "" || len(req.RunID) > maxIDBytes {
		writeError(w, http.StatusBadRequest, "bad_request", "runId must be a run's id", 0)
		return
	}
	switch err := h.o.Source.CancelRun(r.Context(), req.RunID, h.person(r, s)); {
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no run with that id is in flight here", 0)
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the run could not be cancelled; try again", 0)
	default:
		writeJSON(w, map[string]string{"runId": req.RunID, "status": "cancelled"})
	}
}

func (h *Handler) serveDecide(w http.ResponseWriter, r *http.Request, s *session, _ [sha256.Size]byte) {
	var req struct {
		ID     string `json:"id"`
		Action string `json:"action"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if req.ID == "" || len(req.ID) > maxIDBytes || (req.Action != "approve" && req.Action != "decline") {
		writeError(w, http.StatusBadRequest, "bad_request", `send {"id": an approval's id, "action": "approve" or "decline"}`, 0)
		return
	}
	err := ErrNotFound
	if h.o.Approvals != nil {
		err = h.o.Approvals.Decide(req.ID, Decision{Approved: req.Action == "approve", By: h.person(r, s)})
	}
	if err != nil {
		writeError(w, http.StatusNotFound, "not_found", "no write waits under that id here: decided already, expired, or asked elsewhere", 0)
		return
	}
	writeJSON(w, map[string]string{"id": req.ID, "action": req.Action})
}

// person names who sent r, signed in as s, and from where.
func (h *Handler) person(r *http.Request, s *session) Person {
	return Person{Who: s.who, From: h.o.ClientAddr(r)}
}

// readJSON decodes a small JSON body into v, or answers why not.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPostBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", "the request body is over "+strconv.Itoa(maxPostBytes)+" bytes", 0)
			return false
		}
		writeError(w, http.StatusBadRequest, "bad_request", "the request body could not be read", 0)
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "the request body is not the JSON expected", 0)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeThrottled(w http.ResponseWriter, wait time.Duration) {
	secs := math.Ceil(wait.Seconds())
	w.Header().Set("Retry-After", strconv.Itoa(max(int(secs), 1)))
	writeError(w, http.StatusTooManyRequests, "too_many_requests", "too many failed sign-ins from this address", secs)
}

func writeError(w http.ResponseWriter, status int, code, msg string, retry float64) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	e := map[string]any{"code": code, "message": msg}
	if retry > 0 {
		e["retryAfterSeconds"] = retry
	}
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}
