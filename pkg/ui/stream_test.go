package ui

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// streamWriter is a ResponseWriter that keeps what a stream wrote; with
// block set, each Write waits until release is closed, as a reader that
// stopped reading holds a socket's write.
type streamWriter struct {
	hd      http.Header
	block   bool
	release chan struct{}

	mu     sync.Mutex
	code   int
	buf    bytes.Buffer
	writes int
}

func newStreamWriter() *streamWriter {
	return &streamWriter{hd: http.Header{}, release: make(chan struct{})}
}

func (w *streamWriter) Header() http.Header { return w.hd }
func (w *streamWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.code = code
}
func (w *streamWriter) Write(p []byte) (int, error) {
	if w.block {
		<-w.release
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.code == 0 {
		w.code = 200
	}
	w.writes++
	return w.buf.Write(p)
}
func (w *streamWriter) Flush() {}

// frames returns the state events written so far.
func (w *streamWriter) frames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, ev := range strings.Split(w.buf.String(), "\n\n") {
		if d, ok := strings.CutPrefix(ev, "event: state\ndata: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// stream opens /ui/api/events with cookie on w; cancel ends the viewer, and
// done is closed once the handler returned.
func (p *page) stream(w http.ResponseWriter, cookie string) (cancel func(), done chan struct{}) {
	ctx, cancel := context.WithCancel(p.t.Context())
	r := httptest.NewRequestWithContext(ctx, "GET", "http://127.0.0.1:8080/ui/api/events", nil)
	r.Header.Set("Cookie", cookie)
	done = make(chan struct{})
	go func() {
		defer close(done)
		p.h.ServeHTTP(w, r)
	}()
	return cancel, done
}

func TestEventsOneComputationFor100Subscribers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPage(t, Options{})
		hub := p.h.o.Hub
		var ws []*streamWriter
		var ends []func()
		for range 100 { // a browser each, signed in each
			cookie, _ := p.signIn()
			w := newStreamWriter()
			cancel, _ := p.stream(w, cookie)
			ws, ends = append(ws, w), append(ends, cancel)
		}
		synctest.Wait()
		if open, _ := hub.Streams(); open != 100 {
			t.Fatalf("%d streams open, want 100", open)
		}
		asked := p.src.calls.Load()
		for range 3 {
			hub.Tick(t.Context())
		}
		synctest.Wait()
		if got := p.src.calls.Load() - asked; got != 3 {
			t.Errorf("3 ticks for 100 viewers asked the source %d times, want 3", got)
		}
		want := string(hub.JSON())
		for i, w := range ws {
			got := w.frames()
			// the last tick's on subscribing, then each of the 3
			if len(got) != 4 || got[3] != want {
				t.Fatalf("viewer %d read %d frames, the last %.80q; want 4, the last the hub's", i, len(got), got[len(got)-1])
			}
			if w.code != 200 || w.hd.Get("Content-Type") != "text/event-stream" || !strings.HasPrefix(w.buf.String(), "retry: 1000\n\n") {
				t.Errorf("viewer %d: %d %q, starting %.20q", i, w.code, w.hd.Get("Content-Type"), w.buf.String())
			}
		}
		for _, end := range ends {
			end()
		}
		synctest.Wait()
		if open, _ := hub.Streams(); open != 0 {
			t.Errorf("%d streams open after every viewer left", open)
		}
	})
}

// Every subscriber is handed the one frame a tick encodes, not a copy.
func TestSubscribersShareOneFrame(t *testing.T) {
	hub := NewHub(&fakeSource{}, HubOptions{})
	var subs []*Subscription
	for range 100 {
		s, err := hub.Subscribe()
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	hub.Tick(t.Context())
	first := <-subs[0].Frames()
	for _, s := range subs[1:] {
		if f := <-s.Frames(); &f[0] != &first[0] {
			t.Fatal("a subscriber was handed its own copy of the tick")
		}
	}
}

func TestSlowEventReaderIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPage(t, Options{})
		cookie, _ := p.signIn()
		hub := p.h.o.Hub
		slow := newStreamWriter()
		slow.block = true
		fast := newStreamWriter()
		_, slowDone := p.stream(slow, cookie)
		endFast, _ := p.stream(fast, cookie)
		synctest.Wait()
		for range 100 {
			hub.Tick(t.Context())
			synctest.Wait()
		}
		open, dropped := hub.Streams()
		if open != 1 || dropped != 1 {
			t.Errorf("%d open, %d dropped; want the fast one open and the slow one dropped", open, dropped)
		}
		if n := len(fast.frames()); n != 101 {
			t.Errorf("the fast reader read %d frames, want 101", n)
		}
		close(slow.release) // the stalled write returns (its deadline, on a socket)
		select {
		case <-slowDone:
		case <-time.After(time.Minute):
			t.Fatal("the dropped stream did not end")
		}
		if n := slow.writes; n != 1 {
			t.Errorf("the slow reader was written %d times after it stalled", n)
		}
		endFast()
	})
}

func TestEventStreamEnds(t *testing.T) {
	tests := []struct {
		name string
		end  func(p *page, cookie, csrf string)
	}{
		{"its lifetime passes", func(p *page, _, _ string) { time.Sleep(DefaultStreamLifetime) }},
		{"the session ends first", func(p *page, _, _ string) { time.Sleep(time.Hour) }},
		{"sign-out", func(p *page, cookie, csrf string) {
			p.do("POST", "/ui/api/signout", "", map[string]string{"Cookie": cookie, csrfHeader: csrf})
			p.h.o.Hub.Tick(p.t.Context())
		}},
		{"the hub stops", func(p *page, _, _ string) { p.h.o.Hub.stop() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := Options{}
				if tc.name == "the session ends first" {
					o.SessionTTL, o.StreamLifetime = time.Hour, 2*time.Hour
				}
				p := newPage(t, o)
				cookie, csrf := p.signIn()
				w := newStreamWriter()
				_, done := p.stream(w, cookie)
				synctest.Wait()
				tc.end(p, cookie, csrf)
				synctest.Wait()
				select {
				case <-done:
				default:
					t.Fatal("the stream goes on")
				}
				if open, _ := p.h.o.Hub.Streams(); open != 0 {
					t.Errorf("%d streams open", open)
				}
			})
		})
	}
}

func TestEventStreamsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPage(t, Options{})
		hub := NewHub(p.src, HubOptions{MaxStreams: 2})
		p.h.o.Hub = hub
		cookie, _ := p.signIn()
		other, _ := p.signIn()
		p.stream(newStreamWriter(), cookie)
		p.stream(newStreamWriter(), other)
		synctest.Wait()
		w := newStreamWriter()
		_, done := p.stream(w, cookie)
		<-done
		if w.code != http.StatusServiceUnavailable || w.hd.Get("Retry-After") == "" {
			t.Errorf("a third stream: %d, Retry-After %q; want 503 with Retry-After", w.code, w.hd.Get("Retry-After"))
		}
	})
}

func TestEventStreamsPerSessionAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPage(t, Options{})
		cookie, _ := p.signIn()
		other, _ := p.signIn()
		ends := make([]func(), 0, streamsPerSession)
		for range streamsPerSession {
			end, _ := p.stream(newStreamWriter(), cookie)
			ends = append(ends, end)
		}
		synctest.Wait()
		w := newStreamWriter()
		_, done := p.stream(w, cookie)
		<-done
		if w.code != http.StatusServiceUnavailable {
			t.Errorf("stream %d of one session: %d, want 503", streamsPerSession+1, w.code)
		}
		w = newStreamWriter()
		p.stream(w, other)
		synctest.Wait()
		if w.code != http.StatusOK {
			t.Errorf("another session's stream: %d, want 200", w.code)
		}
		ends[0]()
		synctest.Wait()
		w = newStreamWriter()
		p.stream(w, cookie)
		synctest.Wait()
		if w.code != http.StatusOK {
			t.Errorf("once one of its streams closed, the session's next: %d, want 200", w.code)
		}
	})
}
