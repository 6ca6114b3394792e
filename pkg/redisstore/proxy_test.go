package redisstore

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// proxy is a loopback TCP proxy to a Redis, for the faults one replica sees and the others
// do not: cut closes its connections and drops every new one until mended (a Redis gone,
// for this replica alone); stall swallows each script call (EVALSHA, EVAL) the client
// sends, so that it gets no answer, while every other command (PING, EXISTS) goes through
// (a Redis that answers, too slowly for this replica's timeout: its calls time out); mute
// swallows everything (a Redis that hangs, its connections open).
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex // guards the fields below
	conns map[net.Conn]bool
	cut   bool
	stall bool
	mute  bool
	wg    sync.WaitGroup
}

// newProxy starts a proxy to target on a free loopback port, closed at t's cleanup.
func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// URL is the redis:// URL through the proxy.
func (p *proxy) URL() string { return "redis://" + p.ln.Addr().String() + "/0" }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(s, c, true)
		go p.pipe(c, s, false)
	}
}

// pipe copies from src to dst until either ends; toRedis swallows script calls while
// stalled.
func (p *proxy) pipe(dst, src net.Conn, toRedis bool) {
	defer p.wg.Done()
	defer func() {
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if toRedis {
				p.mu.Lock()
				stall, mute := p.stall, p.mute
				p.mu.Unlock()
				if mute || stall && bytes.Contains(bytes.ToLower(buf[:n]), []byte("eval")) {
					continue // no answer: the client's timeout ends the call
				}
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // io.EOF or closed: the other side is closed with it
		}
	}
}

// setCut cuts the proxy (every connection closed, new ones dropped) or mends it.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// setStall swallows script calls from now on (on), or passes them again.
func (p *proxy) setStall(on bool) {
	p.mu.Lock()
	p.stall = on
	p.mu.Unlock()
}

// setMute swallows everything from now on (on), or passes it again.
func (p *proxy) setMute(on bool) {
	p.mu.Lock()
	p.mute = on
	p.mu.Unlock()
}

func (p *proxy) close() {
	p.ln.Close()
	p.setCut(true)
	p.wg.Wait()
}
