package ui

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Bounds of the event stream.
const (
	// DefaultMaxStreams bounds the event streams open at once; past it a
	// viewer is answered 503 and its page polls instead.
	DefaultMaxStreams = 1000
	// streamBuffer is how many ticks a viewer may fall behind before it is
	// dropped: what a stream holds is bounded by it, whatever the reader.
	streamBuffer = 4
	// streamWriteTimeout bounds one event's write: a reader that stops
	// reading holds its connection no longer than this.
	streamWriteTimeout = 10 * time.Second
	// DefaultStreamLifetime is how long one stream lasts before the server
	// ends it and the browser reconnects, which checks the session again
	// and lets nothing grow over a page left open for a day.
	DefaultStreamLifetime = 30 * time.Minute
	// streamsPerSession bounds one session's streams, so that one signed-in
	// browser (a tab per view, a script) cannot take the hub's every place.
	streamsPerSession = 8
	// streamRetryMs is the reconnect delay the stream asks of the browser.
	streamRetryMs = 1000
)

// ErrTooManyStreams is Subscribe's error when MaxStreams are open, or the
// hub has stopped.
var ErrTooManyStreams = errors.New("too many event streams are open")

// Subscription is one viewer's event stream: each tick's frame, encoded
// once for every viewer. It is safe for concurrent use.
type Subscription struct {
	h    *Hub
	ch   chan []byte
	gone chan struct{} // closed when the hub drops it or stops
}

// Frames are the server-sent events to write, each whole ("event: state",
// one data line, a blank line). It holds at most streamBuffer of them.
func (s *Subscription) Frames() <-chan []byte { return s.ch }

// Done is closed when the hub dropped the subscription (its reader fell
// streamBuffer ticks behind) or stopped; the viewer reconnects.
func (s *Subscription) Done() <-chan struct{} { return s.gone }

// Close ends the subscription; closing twice is harmless.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.h.drop(s)
}

// Subscribe opens a stream of the hub's frames, starting with the last
// tick's; ErrTooManyStreams past HubOptions.MaxStreams or once Run ended.
func (h *Hub) Subscribe() (*Subscription, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || len(h.subs) >= h.o.MaxStreams {
		return nil, ErrTooManyStreams
	}
	s := &Subscription{h: h, ch: make(chan []byte, streamBuffer), gone: make(chan struct{})}
	if h.frame != nil {
		s.ch <- h.frame
	}
	h.subs[s] = struct{}{}
	return s, nil
}

// Streams returns how many event streams are open, and how many the hub
// dropped for falling behind since it started.
func (h *Hub) Streams() (open int, dropped int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs), h.dropped
}

// publish hands the frame to every subscriber; one whose buffer is full is
// dropped rather than waited for. The caller holds mu.
func (h *Hub) publish(frame []byte) {
	h.frame = frame
	for s := range h.subs {
		select {
		case s.ch <- frame:
		default:
			h.drop(s)
			h.dropped++
		}
	}
}

// drop ends s. The caller holds mu.
func (h *Hub) drop(s *Subscription) {
	if _, ok := h.subs[s]; !ok {
		return
	}
	delete(h.subs, s)
	close(s.gone)
}

// stop ends every stream and takes no more: the server is going away.
func (h *Hub) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	for s := range h.subs {
		h.drop(s)
	}
}

// frameOf is the server-sent event of one tick's state. The JSON holds no
// newline (encoding/json writes none), so it is one data line.
func frameOf(enc []byte) []byte {
	f := make([]byte, 0, len(enc)+len("event: state\ndata: \n\n"))
	f = append(f, "event: state\ndata: "...)
	f = append(f, enc...)
	return append(f, "\n\n"...)
}

// serveEvents streams the state, a frame a tick, until the viewer goes,
// falls behind, signs out, its session ends, or the stream's lifetime
// passes; the browser's EventSource reconnects on its own, and the page
// polls /ui/api/state while it cannot.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request, s *session, k sessionKey) {
	rc := http.NewResponseController(w)
	busy := func(msg string) {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "unavailable", msg, 0)
	}
	if !h.ss.openStream(k, streamsPerSession) {
		busy("this session has " + strconv.Itoa(streamsPerSession) + " event streams open; the page polls instead")
		return
	}
	defer h.ss.closeStream(k)
	sub, err := h.o.Hub.Subscribe()
	if err != nil {
		busy("too many viewers are streaming; the page polls instead")
		return
	}
	defer sub.Close()
	life := min(h.o.StreamLifetime, s.expires.Sub(h.o.Now()))
	end := time.NewTimer(max(life, 0))
	defer end.Stop()
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("X-Accel-Buffering", "no") // a buffering proxy would hold the ticks
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write([]byte("retry: " + strconv.Itoa(streamRetryMs) + "\n\n")) {
		return
	}
	for {
		select {
		case f := <-sub.Frames():
			select {
			case <-sub.Done():
				return // dropped: what it had buffered is stale
			default:
			}
			if !h.ss.alive(k, h.o.Now()) {
				return // signed out, or ended: the reconnect is answered 401
			}
			if !write(f) {
				return
			}
		case <-sub.Done():
			return
		case <-end.C:
			return
		case <-r.Context().Done():
			return
		}
	}
}
