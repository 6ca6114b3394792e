package main

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/pkg/config"
)

// With --log-format json the banner was text among JSON lines, and a
// replica that made no call said ready long after Redis went away. Every
// stderr line is one JSON object now (the banner's URL and client config
// are fields of one), and /readyz says degraded within 5 s of Redis
// going away while the replica is idle.
func TestServeJSONLogsAndIdleReadiness(t *testing.T) {
	r := redistest.Start(t)
	bin := specgateBinary(t)
	spec, _ := filepath.Abs("../../specs/petstore.yaml")
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("store:\n  backend: redis\n  redis_url: "+r.URL()+"\nspecs:\n  - name: petstore\n    location: "+spec+"\n    mock: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	cmd := exec.Command(bin, "serve", "--http", addr, "--config", cfg, "--log-format", "json", "--no-cache")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var all []string
	// await reads lines until one has msg, within d.
	await := func(msg string, d time.Duration) map[string]any {
		t.Helper()
		deadline := time.After(d)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("serve ended before logging %q:\n%s", msg, strings.Join(all, "\n"))
				}
				all = append(all, l)
				var obj map[string]any
				if err := json.Unmarshal([]byte(l), &obj); err != nil {
					t.Errorf("a stderr line is not JSON: %q", l)
					continue
				}
				if m, _ := obj["msg"].(string); strings.Contains(m, msg) {
					return obj
				}
			case <-deadline:
				t.Fatalf("no %q logged within %s:\n%s", msg, d, strings.Join(all, "\n"))
			}
		}
	}
	readyz := func() string {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	banner := await("serving MCP", 30*time.Second)
	if banner["url"] != "http://"+addr+"/mcp" {
		t.Errorf("banner url %v, want http://%s/mcp", banner["url"], addr)
	}
	cc, _ := json.Marshal(banner["client_config"])
	if !strings.Contains(string(cc), `"url":"http://`+addr+`/mcp"`) {
		t.Errorf("client_config %s", cc)
	}
	await("ready", 30*time.Second)
	if body := readyz(); strings.Contains(body, "degraded") {
		t.Fatalf("/readyz degraded with Redis up: %s", body)
	}

	r.Stop()
	gone := time.Now()
	await("redis store unreachable", 5*time.Second)
	if body := readyz(); !strings.Contains(body, "degraded") {
		t.Errorf("/readyz %s after Redis went away", body)
	}
	if d := time.Since(gone); d > 5*time.Second {
		t.Errorf("degraded after %s", d)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	for l := range lines {
		all = append(all, l)
		if !json.Valid([]byte(l)) {
			t.Errorf("a stderr line is not JSON: %q", l)
		}
	}
	cmd.Wait()
}

// The team banner printed http://[::]:8080/mcp, which no client can use,
// and a client config without the bearer header team mode needs.
func TestBannerGivesAUsableURLAndTheBearerHeader(t *testing.T) {
	host, _ := os.Hostname()
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	for _, tc := range []struct {
		listen, want string
	}{
		{"[::]:8080", "http://" + host + ":8080/mcp"},
		{"0.0.0.0:8080", "http://" + host + ":8080/mcp"},
		{"127.0.0.1:8080", "http://127.0.0.1:8080/mcp"},
		{"[::1]:8080", "http://[::1]:8080/mcp"},
		{"192.0.2.7:8080", "http://192.0.2.7:8080/mcp"},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.listen)
		if err != nil {
			t.Fatal(err)
		}
		b := newBanner(addr, true, "http://"+addr.String()+"/ui/")
		if b.url != tc.want || strings.Contains(b.page, "[::]") || strings.Contains(b.page, "0.0.0.0") {
			t.Errorf("%s: url %s, page %s; want %s", tc.listen, b.url, b.page, tc.want)
		}
		var out strings.Builder
		b.write(&out, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if !strings.Contains(out.String(), `"Authorization": "Bearer <your token>"`) || strings.Contains(out.String(), "[::]") {
			t.Errorf("%s: banner\n%s", tc.listen, out.String())
		}
	}
	var cfg config.HTTP
	if authNeeded(&cfg) {
		t.Error("no auth configured, yet a bearer header")
	}
	cfg.Auth.JWT.Issuer = "https://id.example"
	if !authNeeded(&cfg) {
		t.Error("JWT auth without a bearer header")
	}
}

// A flag or usage error of serve --log-format json was a text line.
func TestServeJSONLogsErrorsAreJSON(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--log-format", "json", "--spce", "x"},
		{"serve", "--log-format=json", "--http", "8080"},
		{"serve", "--log-format", "json", "--config", "/nonexistent/specgate.yaml"},
	} {
		code, _, stderr := runCmd(t, args...)
		if code == 0 || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
		for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
			if !json.Valid([]byte(l)) {
				t.Errorf("%q: stderr line %q is not JSON", args, l)
			}
		}
	}
}
