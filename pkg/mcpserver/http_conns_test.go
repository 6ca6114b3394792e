package mcpserver

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

// TestSlowBodyIsCut: a body trickled slower than BodyTimeout gets 408 and
// the connection closes, instead of staying open as long as the client
// likes.
func TestSlowBodyIsCut(t *testing.T) {
	f := newFixture(t, 0)
	ts := httptest.NewServer(f.srv.HTTPHandlerWith(HTTPOptions{BodyTimeout: 50 * time.Millisecond}))
	t.Cleanup(ts.Close)
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Headers promise 100 bytes; only one arrives.
	_, err = io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{")
	if err != nil {
		t.Fatal(err)
	}
	// The read blocks until the server answers; the test's own deadline
	// only guards against a hang.
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "BODY_TIMEOUT") {
		t.Fatalf("status %d body %s, want 408 BODY_TIMEOUT", resp.StatusCode, body)
	}
}

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
