package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestSIGTERMFinishesInFlightCalls sends SIGTERM to `specgate serve --http`
// while a call waits on its upstream: the call still completes, new
// requests are refused, and the process exits cleanly.
func TestSIGTERMFinishesInFlightCalls(t *testing.T) {
	bin := specgateBinary(t)
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":7}`)
	}))
	defer up.Close()
	defer close(release)

	srv := startServe(t, bin, "--spec", "../../testdata/petstore-v3.yaml", "--base-url", up.URL+"/api/v3", "--no-cache")
	url := "http://" + srv.addr + "/mcp"
	c := httpMCPClient(t, url, nil)
	ctx := t.Context()
	cmd := srv.cmd

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	result := make(chan outcome, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "invoke"
		req.Params.Arguments = map[string]any{"endpointId": "petstore-v3.getPetById", "parameters": map[string]any{"petId": 7}}
		res, err := c.CallTool(ctx, req)
		result <- outcome{res, err}
	}()
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the call never reached the upstream")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// New requests are refused while the call drains: the listener is
	// closed, or a kept-alive connection gets 503.
	refused := false
	for range 200 {
		resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			refused = true
			break
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			refused = true
			break
		}
		time.Sleep(10 * time.Millisecond) // the signal is asynchronous: poll, bounded
	}
	if !refused {
		t.Error("new requests were still served after SIGTERM")
	}
	release <- struct{}{}
	out := <-result
	if out.err != nil || out.res.IsError {
		t.Fatalf("the in-flight call did not finish: %v %+v", out.err, out.res)
	}
	if !strings.Contains(out.res.Content[0].(mcp.TextContent).Text, `"statusCode":200`) {
		t.Errorf("in-flight call result: %s", out.res.Content[0].(mcp.TextContent).Text)
	}
	srv.waitExit(t)
}

// TestSIGTERMAnswersQueuedCalls sends SIGTERM while one call is in flight
// and three wait in the upstream's queue: the waiting ones are answered at
// once with a retryable queue_full that says the server is shutting down,
// none of them reaches the upstream, and the one in flight still finishes.
func TestSIGTERMAnswersQueuedCalls(t *testing.T) {
	bin := specgateBinary(t)
	var hits atomic.Int32
	arrived := make(chan struct{}, 8)
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":7}`)
	}))
	defer up.Close()
	defer close(release)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "specgate.yaml")
	spec, err := filepath.Abs("../../testdata/petstore-v3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(up.URL, "http://")
	conf := fmt.Sprintf(`rate_limit_interval: 0s
cache_ttl: 0s
specs:
  - {name: petstore-v3, location: %q, base_url: %q}
upstreams:
  - {match: %q, max_concurrent: 1, queue_depth: 8, queue_timeout: 20s}
http:
  shutdown_timeout: 20s
`, spec, up.URL+"/api/v3", host)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, bin, "--config", cfg)
	base := "http://" + srv.addr
	c := httpMCPClient(t, base+"/mcp", nil)
	ctx := t.Context()
	cmd := srv.cmd
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	results := make(chan outcome, 4)
	call := func(id int) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "invoke"
		req.Params.Arguments = map[string]any{"endpointId": "petstore-v3.getPetById", "parameters": map[string]any{"petId": id}}
		res, err := c.CallTool(ctx, req)
		results <- outcome{res, err}
	}
	go call(1)
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the first call never reached the upstream")
	}
	for id := 2; id <= 4; id++ {
		go call(id)
	}
	// wait until the three are queued, as /metrics tells (bounded poll)
	queued := false
	for range 500 {
		resp, err := http.Get(base + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), "specgate_queue_depth{upstream=\""+host+"\"} 3") {
				queued = true
				break
			}
		}
		time.Sleep(10 * time.Millisecond) // the calls are asynchronous: poll, bounded
	}
	if !queued {
		t.Fatal("three calls never waited in the queue")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		var out outcome
		select {
		case out = <-results:
		case <-time.After(10 * time.Second):
			t.Fatal("a queued call was not answered after SIGTERM")
		}
		if out.err != nil || !out.res.IsError {
			t.Fatalf("queued call: %v %+v", out.err, out.res)
		}
		text := out.res.Content[0].(mcp.TextContent).Text
		for _, want := range []string{`"code":"queue_full"`, `"retryable":true`, `"scope":"proxy"`, "shutting down"} {
			if !strings.Contains(text, want) {
				t.Errorf("queued call's answer lacks %s: %s", want, text)
			}
		}
	}
	release <- struct{}{}
	out := <-results
	if out.err != nil || out.res.IsError {
		t.Fatalf("the in-flight call did not finish: %v %+v", out.err, out.res)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("upstream got %d requests, want only the one in flight", n)
	}
	srv.waitExit(t)
}

// serveProcess is a `specgate serve --http ADDR` process started by a test;
// done yields its exit once it has ended.
type serveProcess struct {
	cmd  *exec.Cmd
	addr string
	done chan error
}

// startServe starts bin serve --http on a free port with args and returns
// once it logs that it serves MCP.
func startServe(t testing.TB, bin string, args ...string) *serveProcess {
	t.Helper()
	p := &serveProcess{addr: freePort(t), done: make(chan error, 1)}
	p.cmd = exec.Command(bin, append([]string{"serve", "--http", p.addr}, args...)...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			if strings.Contains(lines.Text(), "serving MCP") {
				close(serving)
				break
			}
		}
		io.Copy(io.Discard, stderr)
		p.done <- p.cmd.Wait()
	}()
	select {
	case <-serving:
	case err := <-p.done:
		t.Fatalf("specgate exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatal("specgate did not start serving")
	}
	return p
}

// waitExit fails the test unless the process exits cleanly within 30s.
func (p *serveProcess) waitExit(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("specgate exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatal("specgate did not exit after SIGTERM")
	}
}

// httpMCPClient connects mcp-go's streamable HTTP client to url, sending
// headers (a bearer token, say) on every request, and initializes a session.
func httpMCPClient(t testing.TB, url string, headers map[string]string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(headers))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: t.Name(), Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return c
}
