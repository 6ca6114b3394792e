package serve

import (
	"net"
	"net/netip"
	"sync"
)

// LimitConnsPerIP returns a listener that closes, at once, a new
// connection from a client address that already holds perIP open ones, so
// that one client cannot exhaust the server's connections (slow bodies,
// idle keep-alives). Peers in trusted (load balancers, proxies) are not
// counted. perIP <= 0 returns ln unchanged. It is safe for concurrent use.
func LimitConnsPerIP(ln net.Listener, perIP int, trusted []netip.Prefix) net.Listener {
	if perIP <= 0 {
		return ln
	}
	return &perIPListener{Listener: ln, max: perIP, trusted: trusted, open: map[netip.Addr]int{}}
}

type perIPListener struct {
	net.Listener
	max     int
	trusted []netip.Prefix

	mu   sync.Mutex
	open map[netip.Addr]int // open connections by client address
}

func (l *perIPListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip, ok := peerAddr(c)
		if !ok || l.isTrusted(ip) {
			return c, nil
		}
		l.mu.Lock()
		if l.open[ip] >= l.max {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open[ip]++
		l.mu.Unlock()
		return &countedConn{Conn: c, l: l, ip: ip}, nil
	}
}

func (l *perIPListener) isTrusted(ip netip.Addr) bool {
	for _, p := range l.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func (l *perIPListener) release(ip netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip] <= 1 {
		delete(l.open, ip)
		return
	}
	l.open[ip]--
}

func peerAddr(c net.Conn) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// countedConn gives its slot back once, when closed.
type countedConn struct {
	net.Conn
	l    *perIPListener
	ip   netip.Addr
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}
