package serve

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestConnectionsPerIPCapped: past the cap, a client's new connections are
// closed at once; a closed one frees its slot.
func TestConnectionsPerIPCapped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := LimitConnsPerIP(ln, 2, nil)
	defer lim.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := lim.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := dial(), dial()
	first, second := <-accepted, <-accepted
	third := dial()
	// The third is closed by the listener: a read sees EOF.
	_ = third.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := third.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("third connection: read error %v, want EOF", err)
	}
	first.Close()
	fourth := dial()
	got := <-accepted
	if got == nil {
		t.Fatal("a freed slot was not given to the next connection")
	}
	got.Close()
	second.Close()
	_, _, _ = a, b, fourth
}

// TestSlowBodyIsCut: a body that does not arrive within BodyTimeout gets
// 408 and the connection closes, instead of staying open as long as the
// client likes. The same holds for a body nobody reads (/healthz, a refused
// request): net/http waited for those with no deadline before answering,
// and after a 408 it waited for the rest of the body.
func TestSlowBodyIsCut(t *testing.T) {
	ts := httptest.NewServer(NewHandler(newStub(), Options{BodyTimeout: 50 * time.Millisecond}))
	t.Cleanup(ts.Close)
	for _, tt := range []struct {
		name, path, extra string
		status            int
		code              string
	}{
		{"mcp", "/mcp", "", http.StatusRequestTimeout, "BODY_TIMEOUT"},
		{"healthz", "/healthz", "", http.StatusOK, "ok"},
		{"unknown path", "/nothing", "", http.StatusNotFound, ""},
		{"refused origin", "/mcp", "Origin: https://evil.example\r\n", http.StatusForbidden, "FORBIDDEN"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ts.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Headers promise 100 bytes; only one arrives.
			_, err = io.WriteString(c, "POST "+tt.path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+tt.extra+
				"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{")
			if err != nil {
				t.Fatal(err)
			}
			// The reads block until the server answers and closes; the
			// test's own deadline only guards against a hang.
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer to a trickled body: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.code) {
				t.Fatalf("status %d body %s, want %d %s", resp.StatusCode, body, tt.status, tt.code)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the answer: read error %v, want EOF (connection closed)", err)
			}
		})
	}
}
