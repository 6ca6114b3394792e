package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// `specgate invoke --body '{"n":9007199254740993}'` sent …992: the flags
// were decoded through float64. They keep every digit now; a number no
// float64 holds is a flag error.
func TestCLIInvokeLargeIntegersExact(t *testing.T) {
	var mu sync.Mutex
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.URL.RequestURI()+" "+string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(append([]byte(`{"got":`), body...), '}'))
	}))
	defer up.Close()
	spec := filepath.Join(t.TempDir(), "num.json")
	if err := os.WriteFile(spec, []byte(`{"openapi":"3.0.3","info":{"title":"num","version":"1"},"paths":{"/num":{"post":{"operationId":"num",
	  "parameters":[{"name":"q","in":"query","schema":{"type":"integer"}}],
	  "requestBody":{"content":{"application/json":{"schema":{"type":"object","properties":{"n":{"type":"integer"}}}}}},
	  "responses":{"200":{"description":"ok"}}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	invoke := func(params, body string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"invoke", "--spec", spec, "--base-url", up.URL, "--log-level", "error",
			"--rate-limit-interval", "1ms", "num.num", "--params", params, "--body", body}, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	code, stdout, stderr := invoke(`{"q":12345678901234567890}`, `{"n":9007199254740993}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mu.Lock()
	sent := strings.Join(got, "\n")
	mu.Unlock()
	if sent != `/num?q=12345678901234567890 {"n":9007199254740993}` {
		t.Errorf("upstream received %q", sent)
	}
	if !strings.Contains(stdout, `"n": 9007199254740993`) {
		t.Errorf("answer does not show the exact value:\n%s", stdout)
	}

	code, _, stderr = invoke(`{}`, `{"n":[1e400]}`)
	if code != 2 || !strings.Contains(stderr, "--body is not JSON: number 1e400 is out of range") {
		t.Errorf("1e400: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = invoke(`[1]`, `{}`)
	if code != 2 || !strings.Contains(stderr, "--params is not a JSON object") {
		t.Errorf("array params: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = invoke(`{}`, `{} {}`)
	if code != 2 || !strings.Contains(stderr, "--body is not JSON") {
		t.Errorf("two bodies: exit %d, stderr %q", code, stderr)
	}
}

// An http_error on the CLI said to read the upstream's message and did not
// print it (issue 33 item 3): the body is printed, bounded.
func TestCLIInvokePrintsTheUpstreamsErrorBody(t *testing.T) {
	long := strings.Repeat("x", 5000)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"message":"No such customer: 'cus_1'","pad":"` + long + `"}}`))
	}))
	defer up.Close()
	spec := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(spec, []byte(`{"openapi":"3.0.3","info":{"title":"c","version":"1"},"paths":{"/c":{"get":{"operationId":"get",
	  "responses":{"200":{"description":"ok"}}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"invoke", "--spec", spec, "--base-url", up.URL, "--log-level", "error", "c.get"}, strings.NewReader(""), &stdout, &stderr)
	out := stderr.String()
	if code == 0 || !strings.Contains(out, "error http_error") || !strings.Contains(out, "The upstream answered 400:") || !strings.Contains(out, `No such customer: 'cus_1'`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if len(out) > 4000 {
		t.Errorf("%d bytes printed: the body is not bounded", len(out))
	}
}

// Every CLI failure was exit 1 (issue 33 item 7): the exit code says the
// class, as help and README list them.
func TestCLIExitCodesByClass(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("n") == "429" {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer up.Close()
	spec := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(spec, []byte(`{"openapi":"3.0.3","info":{"title":"c","version":"1"},"paths":{"/c":{"get":{"operationId":"get",
	  "parameters":[{"name":"n","in":"query","required":true,"schema":{"type":"integer"}}],
	  "responses":{"200":{"description":"ok"}}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"upstream error", []string{"c.get", "--params", `{"n":1}`}, 4},
		{"refused by the upstream's limit", []string{"c.get", "--params", `{"n":429}`}, 3},
		{"validation failed", []string{"c.get"}, 5},
		{"not found", []string{"c.nothing"}, 5},
		{"usage", []string{"c.get", "--params", `[1]`}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"invoke", "--spec", spec, "--base-url", up.URL, "--log-level", "error"}, tt.args...)
			if code := run(t.Context(), args, strings.NewReader(""), &stdout, &stderr); code != tt.want {
				t.Errorf("exit %d, want %d: %s", code, tt.want, stderr.String())
			}
		})
	}
}

// Errors were text only (issue 33 item 7): with --json, results and errors
// are JSON on stdout, whatever failed, and the exit code keeps its class.
func TestCLIJSONOutput(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	defer up.Close()
	spec := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(spec, []byte(`{"openapi":"3.0.3","info":{"title":"c","version":"1"},"paths":{"/c":{"get":{"operationId":"get",
	  "responses":{"200":{"description":"ok"}}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	base := []string{"--spec", spec, "--base-url", up.URL, "--log-level", "error", "--json"}
	tests := []struct {
		name string
		args []string
		code int
		want string // a key the JSON on stdout has
	}{
		{"invoke result", append([]string{"invoke", "c.get"}, base...), 0, "statusCode"},
		{"tool error", append([]string{"invoke", "c.nothing"}, base...), 5, "error"},
		{"usage error", append([]string{"invoke"}, base...), 2, "error"},
		{"flag error", []string{"search", "--json", "--nope", "x"}, 2, "error"},
		{"search", append([]string{"search", "thing"}, base...), 0, "endpoints"},
		{"check", append([]string{"check", "--validate=false"}, base...), 0, "specs"},
		{"config error", []string{"check", "--json", "--config", filepath.Join(t.TempDir(), "none.yaml")}, 1, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tt.args, strings.NewReader(""), &stdout, &stderr)
			var obj map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &obj); err != nil {
				t.Fatalf("stdout is not one JSON object (%v):\n%s\nstderr: %s", err, stdout.String(), stderr.String())
			}
			if code != tt.code || obj[tt.want] == nil {
				t.Errorf("exit %d (want %d), no %q in %s", code, tt.code, tt.want, stdout.String())
			}
		})
	}
}
