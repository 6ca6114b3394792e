// Package redistest runs a real redis-server on a free loopback port for one test or
// benchmark: no persistence, stopped at cleanup, and able to die (Stop, as a crash
// would) and come back empty on the same port (Restart). StartCluster runs a Redis
// Cluster of such servers.
//
// Without redis-server on PATH the test is skipped, unless SPECGATE_REQUIRE_REDIS=1 (as
// in CI), which makes it fail.
package redistest

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireEnv is the environment variable that turns a missing redis-server from a skip
// into a failure.
const RequireEnv = "SPECGATE_REQUIRE_REDIS"

const (
	startTimeout = 5 * time.Second // for one redis-server to answer PING
	startTries   = 20              // the port may be held for a moment after a kill
	pollEvery    = 10 * time.Millisecond
)

// Server is a redis-server process for one test. Its methods are safe for concurrent
// use; Stop and Restart are meant for the test's own goroutine.
type Server struct {
	tb   testing.TB
	port int
	args []string // beyond the port, bind and persistence

	mu     sync.Mutex // guards cmd and exited
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has exited
}

// Start starts redis-server for tb on a free loopback port and returns once it answers
// PING. The server is stopped at tb's cleanup.
func Start(tb testing.TB) *Server {
	tb.Helper()
	need(tb, "redis-server")
	s := &Server{tb: tb, port: freePort(tb)}
	tb.Cleanup(s.Stop)
	s.Restart()
	return s
}

// need skips tb, or fails it as RequireEnv says, when prog is not on PATH.
func need(tb testing.TB, prog string) {
	tb.Helper()
	if _, err := exec.LookPath(prog); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("%s is not on PATH and %s=1", prog, RequireEnv)
		}
		tb.Skipf("%s is not on PATH (set %s=1 to fail instead)", prog, RequireEnv)
	}
}

// freePort is a loopback port that was free a moment ago.
func freePort(tb testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Stop kills the server at once, as a crash would, and returns once it has exited.
// Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *Server) stopLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd, s.exited = nil, nil
}

// Restart starts the server again on the same port, empty, and returns once it answers
// PING; a running server is stopped first. It fails the test when the server does not
// come up.
func (s *Server) Restart() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
	port := strconv.Itoa(s.port)
	for range startTries {
		args := append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, s.args...)
		cmd := exec.Command("redis-server", args...)
		if err := cmd.Start(); err != nil {
			s.tb.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if waitPing(s.Addr(), exited) {
			s.cmd, s.exited = cmd, exited
			return
		}
		_ = cmd.Process.Kill() // it exited (port still held) or never answered
		<-exited
		time.Sleep(pollEvery) // waiting for the port to be free, not for limiter time
	}
	s.tb.Fatalf("redis-server did not start on port %s", port)
}

// waitPing polls addr until it answers PING; false when exited closes first or the
// start timeout passes.
func waitPing(addr string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		if Ping(addr) {
			return true
		}
		select {
		case <-exited:
			return false
		case <-time.After(pollEvery): // waiting for a process to come up
		}
	}
	return false
}

// Ping sends an inline PING to addr and reports whether +PONG came back within 200ms.
func Ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}
