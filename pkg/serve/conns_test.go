package serve

import (
	"io"
	"net"
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
