//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// These tests drive the built binary with hostile specs, arguments and
// upstreams (loopback only), and measure the process: wall time and peak
// resident memory as the kernel counts it. They are Linux-only for
// rusage's units.

// peakRSS is the peak resident memory of an exited process, in bytes.
func peakRSS(t *testing.T, ps *os.ProcessState) int64 {
	t.Helper()
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage")
	}
	return ru.Maxrss << 10 // kilobytes on Linux
}

// A 2 MB spec of one 2 MiB string and 400 aliases to it ran the process
// out of memory; it is refused within 5 s at under 300 MB.
func TestBinaryRefusesLongStringAliasBomb(t *testing.T) {
	bin := specgateBinary(t)
	dir := t.TempDir()
	bomb := filepath.Join(dir, "bomb.yaml")
	doc := "openapi: 3.0.3\ninfo: {title: t, version: \"1\"}\nx: &b \"" + strings.Repeat("A", 2<<20) +
		"\"\ny: [" + strings.TrimSuffix(strings.Repeat("*b,", 400), ",") + "]\npaths: {}\n"
	if err := os.WriteFile(bomb, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "check", "--spec", bomb, "--no-cache")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("check exited %v, want 1:\n%s", err, out)
	}
	if !strings.Contains(string(out), "aliases repeat too much text") {
		t.Errorf("output does not name the alias bomb:\n%.500s", out)
	}
	rss := peakRSS(t, cmd.ProcessState)
	t.Logf("refused in %v at %d MB peak", took.Round(time.Millisecond), rss>>20)
	if took > 5*time.Second {
		t.Errorf("took %v, want under 5s", took)
	}
	if rss > 300<<20 {
		t.Errorf("peak memory %d MB, want under 300", rss>>20)
	}
}

// stdioSession speaks MCP to the binary over stdio as raw lines, so what
// is checked is the bytes on the wire (a decoding client would hide
// invalid UTF-8).
type stdioSession struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan []byte
	stderr bytes.Buffer
	next   int
	wire   [][]byte // every line read
}

func startStdio(t *testing.T, env []string, args ...string) *stdioSession {
	t.Helper()
	s := &stdioSession{t: t, lines: make(chan []byte, 16)}
	s.cmd = exec.Command(specgateBinary(t), args...)
	s.cmd.Env = append(append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir()), env...)
	s.cmd.Stderr = &s.stderr
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.lines)
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				s.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}
	})
	s.request("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}`, 30*time.Second)
	s.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *stdioSession) write(msg string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, msg+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// rpcReply is a JSON-RPC response: a tool result or a protocol error.
type rpcReply struct {
	ID     *int `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// request sends one request with params as raw JSON and returns the line
// that answers it, failing past within.
func (s *stdioSession) request(method, params string, within time.Duration) ([]byte, rpcReply) {
	s.t.Helper()
	id := s.next
	s.next++
	s.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	timeout := time.After(within)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("%s: specgate closed stdout; stderr:\n%s", method, s.stderr.String())
			}
			s.wire = append(s.wire, line)
			var r rpcReply
			if err := json.Unmarshal(line, &r); err != nil {
				s.t.Fatalf("%s: not JSON: %v: %.300q", method, err, line)
			}
			if r.ID != nil && *r.ID == id {
				return line, r
			}
		case <-timeout:
			s.t.Fatalf("%s: no answer within %v", method, within)
		}
	}
}

// toolAnswer is one tool result, decoded from its text.
type toolAnswer struct {
	line  []byte
	isErr bool
	m     map[string]any
}

func (a toolAnswer) errorCode() string {
	e, _ := a.m["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// tool calls a tool with arguments as raw JSON; a JSON-RPC error fails the
// test, since every failure of a sound call must be a tool result.
func (s *stdioSession) tool(name, args string, within time.Duration) toolAnswer {
	s.t.Helper()
	line, r := s.request("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args), within)
	if r.Error != nil {
		s.t.Fatalf("%s %.200s: JSON-RPC error %d %s, want a tool result", name, args, r.Error.Code, r.Error.Message)
	}
	if r.Result == nil || len(r.Result.Content) == 0 {
		s.t.Fatalf("%s: no content: %.300s", name, line)
	}
	a := toolAnswer{line: line, isErr: r.Result.IsError}
	if err := json.Unmarshal([]byte(r.Result.Content[0].Text), &a.m); err != nil {
		s.t.Fatalf("%s: text is not JSON: %.300s", name, r.Result.Content[0].Text)
	}
	return a
}

// close ends the session (stdin closed) and returns the exited process.
func (s *stdioSession) close() *os.ProcessState {
	s.t.Helper()
	s.in.Close()
	done := make(chan error, 1)
	go func() {
		for range s.lines {
		}
		done <- s.cmd.Wait()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.t.Fatal("specgate did not exit after stdin closed")
	}
	return s.cmd.ProcessState
}

const hostileSpec = `{"openapi":"3.0.3","info":{"title":"hostile","version":"1"},
 "components":{"securitySchemes":{"qry":{"type":"apiKey","in":"query","name":"api_key"}},
  "schemas":{"C":{"$ref":"#/components/schemas/C"}}},
 "security":[{"qry":[]}],
 "paths":{
  "/echo":{"get":{"operationId":"echo","parameters":[
     {"name":"status","in":"query","schema":{"type":"integer"}},
     {"name":"filter","in":"query","schema":{"type":"object","additionalProperties":{"type":"string"}}}],
     "responses":{"200":{"description":"ok"}}}},
  "/num":{"post":{"operationId":"num","parameters":[{"name":"q","in":"query","schema":{"type":"integer"}}],
     "requestBody":{"content":{"application/json":{"schema":{"type":"object","properties":{"n":{"type":"integer"}}}}}},
     "responses":{"200":{"description":"ok"}}}},
  "/self":{"post":{"operationId":"self","requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/C"}}}},
     "responses":{"200":{"description":"ok"}}}},
  "/bighdr":{"get":{"operationId":"bighdr","responses":{"200":{"description":"ok"}}}},
  "/badutf8":{"get":{"operationId":"badutf8","responses":{"200":{"description":"ok"}}}}
 }}`

// hostileKey changes when percent-encoded.
const hostileKey = "sg+key/Zq=w=="

// TestBinaryHostileInputOverStdio is the list of checks against
// the built binary, over stdio: an escaped key never appears in any
// output; an object parameter cannot place the configured key; large
// integers reach the upstream exactly; a 1 MiB header yields an answer
// under 64 KiB; a self-referencing body schema and 1e400 give tool
// results; invalid UTF-8 from the upstream leaves valid UTF-8 on the
// wire; Retry-After: 999999999 is one upstream request and an
// upstream_rate_limit saying a long wait.
func TestBinaryHostileInputOverStdio(t *testing.T) {
	type hit struct{ method, uri, body string }
	var mu sync.Mutex
	var hits []hit
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		hits = append(hits, hit{r.Method, r.RequestURI, string(body)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/echo":
			// The upstream echoes the request URI, key and all, in the
			// body and in headers the answer repeats.
			w.Header().Set("Location", r.RequestURI)
			w.Header().Set("X-RateLimit-Policy", "uri="+r.RequestURI)
			status, _ := strconv.Atoi(r.URL.Query().Get("status"))
			if status == 0 {
				status = 200
			}
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "999999999")
			}
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"requestURI":%q}`, r.RequestURI)
		case "/bighdr":
			mib := strings.Repeat("h", 1<<20)
			w.Header().Set("Content-Type", "application/json; x="+mib)
			w.Header().Set("Location", "/"+mib)
			w.Header().Set("X-RateLimit-Foo", mib)
			io.WriteString(w, `[{"number":1}]`)
		case "/badutf8":
			w.Write([]byte("{\"title\":\"caf\xff\xfe \xc3\"}"))
		default:
			io.WriteString(w, `{"ok":true}`)
		}
	}))
	defer up.Close()
	count := func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, h := range hits {
			if strings.HasPrefix(h.uri, path) {
				n++
			}
		}
		return n
	}

	dir := t.TempDir()
	specPath := filepath.Join(dir, "hostile.json")
	if err := os.WriteFile(specPath, []byte(hostileSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "specgate.yaml")
	cfg := fmt.Sprintf(`
rate_limit_interval: 1ms
max_retries: 2
specs:
  - name: h
    location: %s
    base_url: %s
    auth:
      qry: {value: "${SG_HOSTILE_KEY}"}
`, specPath, up.URL)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startStdio(t, []string{"SG_HOSTILE_KEY=" + hostileKey}, "serve", "--config", cfgPath, "--no-cache", "--log-level", "debug")
	const within = 20 * time.Second

	for _, status := range []int{200, 401, 500} {
		a := s.tool("invoke", fmt.Sprintf(`{"endpointId":"h.echo","parameters":{"status":%d}}`, status), within)
		if status == 200 && a.isErr || status != 200 && !a.isErr {
			t.Errorf("echo %d: isError %v: %.300s", status, a.isErr, a.line)
		}
		// The stored answer, read again, is redacted as well.
		if id, _ := a.m["responseId"].(string); id != "" {
			if r := s.tool("read_response", fmt.Sprintf(`{"responseId":%q,"jq":".requestURI"}`, id), within); r.isErr || !strings.Contains(fmt.Sprint(r.m["body"]), "api_key=") {
				t.Errorf("read_response: %.300s", r.line)
			}
		} else if status == 200 {
			t.Errorf("echo 200 has no responseId: %.300s", a.line)
		}
	}

	t.Run("object parameter cannot place the configured key", func(t *testing.T) {
		before := count("/echo")
		a := s.tool("invoke", `{"endpointId":"h.echo","parameters":{"filter":{"api_key":"MODELKEY"}}}`, within)
		if a.errorCode() != "validation_failed" {
			t.Fatalf("got %.300s, want validation_failed", a.line)
		}
		if msg := fmt.Sprint(a.m["error"].(map[string]any)["problems"]); !strings.Contains(msg, `"filter"`) || !strings.Contains(msg, `"api_key"`) {
			t.Errorf("problems %s do not name the parameter and the key", msg)
		}
		if count("/echo") != before {
			t.Error("the refused call reached the upstream")
		}
	})

	t.Run("large integers reach the upstream exactly", func(t *testing.T) {
		a := s.tool("invoke", `{"endpointId":"h.num","parameters":{"q":12345678901234567890},"requestBody":{"n":9007199254740993}}`, within)
		if a.isErr {
			t.Fatalf("%.300s", a.line)
		}
		mu.Lock()
		last := hits[len(hits)-1]
		mu.Unlock()
		if last.body != `{"n":9007199254740993}` || !strings.HasPrefix(last.uri, "/num?q=12345678901234567890&") {
			t.Errorf("upstream received %s %s", last.uri, last.body)
		}
	})

	t.Run("1e400 is a tool error", func(t *testing.T) {
		for _, args := range []string{
			`{"endpointId":"h.num","requestBody":{"n":1e400}}`,
			`{"endpointId":"h.num","parameters":{"q":1e400}}`,
			`{"endpointId":"h.num","maxBytes":1e400}`,
		} {
			if a := s.tool("invoke", args, within); a.errorCode() != "validation_failed" {
				t.Errorf("%s: %.300s, want validation_failed", args, a.line)
			}
		}
	})

	t.Run("self-referencing body schema is a tool result", func(t *testing.T) {
		if a := s.tool("invoke", `{"endpointId":"h.self","requestBody":{"any":[1,{"thing":true}]}}`, within); a.isErr {
			t.Errorf("%.300s", a.line)
		}
		if a := s.tool("inspect", `{"endpointId":"h.self"}`, within); a.isErr {
			t.Errorf("inspect: %.300s", a.line)
		}
	})

	t.Run("1 MiB headers make an answer under 64 KiB", func(t *testing.T) {
		a := s.tool("invoke", `{"endpointId":"h.bighdr"}`, within)
		if a.isErr {
			t.Fatalf("%.300s", a.line)
		}
		t.Logf("answer to three 1 MiB headers: %d bytes on the wire", len(a.line))
		if len(a.line) > 64<<10 {
			t.Errorf("the message is %d bytes", len(a.line))
		}
	})

	t.Run("invalid UTF-8 from the upstream", func(t *testing.T) {
		a := s.tool("invoke", `{"endpointId":"h.badutf8"}`, within)
		if a.isErr || !utf8.Valid(a.line) {
			t.Fatalf("%q", a.line)
		}
		if body, _ := a.m["body"].(map[string]any); !strings.HasPrefix(fmt.Sprint(body["title"]), "caf\uFFFD") {
			t.Errorf("title %q", body["title"])
		}
	})

	t.Run("Retry-After 999999999", func(t *testing.T) {
		before := count("/echo")
		a := s.tool("invoke", `{"endpointId":"h.echo","parameters":{"status":429}}`, within)
		e, _ := a.m["error"].(map[string]any)
		if a.errorCode() != "upstream_rate_limit" || e["retryAfterSeconds"] != float64(86400) {
			t.Errorf("got %.400s, want upstream_rate_limit with retryAfterSeconds 86400", a.line)
		}
		if msg, _ := e["message"].(string); !strings.Contains(msg, "86400 seconds") {
			t.Errorf("message %q does not say how long", msg)
		}
		if n := count("/echo") - before; n != 1 {
			t.Errorf("%d upstream requests, want 1", n)
		}
	})

	// Every output: tool results, status, and the logs.
	s.tool("rate_limit_status", `{}`, within)
	ps := s.close()
	t.Logf("%d messages; peak memory %d MB", len(s.wire), peakRSS(t, ps)>>20)
	out := append(bytes.Join(s.wire, nil), s.stderr.Bytes()...)
	for i, line := range s.wire {
		if !utf8.Valid(line) {
			t.Errorf("message %d is not valid UTF-8: %.200q", i, line)
		}
	}
	forms := map[string]string{
		"raw":           hostileKey,
		"query escaped": url.QueryEscape(hostileKey),
		"path escaped":  url.PathEscape(hostileKey),
		"lower hex":     strings.ToLower(url.QueryEscape(hostileKey)),
		"JSON slashes":  strings.ReplaceAll(hostileKey, "/", `\/`),
		"base64":        base64.StdEncoding.EncodeToString([]byte(hostileKey)),
		"base64url":     base64.RawURLEncoding.EncodeToString([]byte(hostileKey)),
	}
	for name, f := range forms {
		if bytes.Contains(out, []byte(f)) {
			t.Errorf("the key's %s form %q is in specgate's output", name, f)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hits) == 0 || !strings.Contains(hits[0].uri, "api_key="+url.QueryEscape(hostileKey)) {
		t.Errorf("the upstream did not receive the escaped key: %v", hits)
	}
}

// A 225 KB spec with items nested 9,000 levels took 58 s and 1.7 GB at
// its first invoke: now check and serve leave the operation out at once,
// an invoke of it (with a body nested as deep) answers before its
// deadline, and the rest of the spec serves.
func TestBinaryDeeplyNestedSchema(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer up.Close()
	dir := t.TempDir()
	schema := strings.Repeat(`{"type":"array","items":`, 9000) + `{"type":"string"}` + strings.Repeat("}", 9000)
	doc := `{"openapi":"3.0.3","info":{"title":"deep","version":"1"},"paths":{
	  "/deep":{"post":{"operationId":"deep","requestBody":{"content":{"application/json":{"schema":` + schema + `}}},"responses":{"200":{"description":"ok"}}}},
	  "/ok":{"get":{"operationId":"ok","responses":{"200":{"description":"ok"}}}}}}`
	specPath := filepath.Join(dir, "deep.json")
	if err := os.WriteFile(specPath, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "specgate.yaml")
	cfg := fmt.Sprintf("call_timeout: 5s\nspecs:\n  - {name: deep, location: %s, base_url: %s}\n", specPath, up.URL)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	out, err := exec.Command(specgateBinary(t), "check", "--config", cfgPath, "--no-cache").CombinedOutput()
	took := time.Since(start)
	if err != nil || !strings.Contains(string(out), "nest deeper than 64 levels") {
		t.Errorf("check: %v\n%s", err, out)
	}
	t.Logf("check of a %d KB spec nested 9,000 levels: %v", len(doc)>>10, took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("check took %v", took)
	}

	s := startStdio(t, nil, "serve", "--config", cfgPath, "--no-cache")
	start = time.Now()
	a := s.tool("invoke", `{"endpointId":"deep.deep","requestBody":`+strings.Repeat("[", 9000)+strings.Repeat("]", 9000)+`}`, 5*time.Second)
	took = time.Since(start)
	if !a.isErr || a.errorCode() != "not_found" || !strings.Contains(string(a.line), "is in the spec but is not served: its schemas nest deeper than 64 levels") {
		t.Errorf("invoke of the deep operation: %.300s", a.line)
	}
	s.tool("inspect", `{"endpointId":"deep.deep"}`, 5*time.Second)
	if a := s.tool("invoke", `{"endpointId":"deep.ok"}`, 5*time.Second); a.isErr {
		t.Errorf("the rest of the spec does not serve: %.300s", a.line)
	}
	rss := peakRSS(t, s.close())
	t.Logf("invoke answered in %v (%s); peak memory %d MB", took.Round(time.Millisecond), a.errorCode(), rss>>20)
	if rss > 1<<30 {
		t.Errorf("peak memory %d MB, want well under a gigabyte", rss>>20)
	}
}

// A spec file named "x: y #z.yaml" gave the binary's init a config its
// check refused; now check accepts it and serves the spec from that file.
func TestBinaryInitHostileFileName(t *testing.T) {
	bin := specgateBinary(t)
	spec, err := os.ReadFile(petstorePath(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x: y #z.yaml")
	if err := os.WriteFile(path, spec, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "specgate.yaml")
	if out, err := exec.Command(bin, "init", path, "--out", cfg).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "check", "--config", cfg, "--no-cache", "--validate=false").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "x-y-z") {
		data, _ := os.ReadFile(cfg)
		t.Fatalf("check: %v\n%s\n--- config:\n%s", err, out, data)
	}
}
