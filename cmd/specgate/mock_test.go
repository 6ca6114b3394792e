package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/config"
)

// TestDemoConfigInvokesTheMock is `make run` on a machine with no network:
// specs/demo.yaml serves the bundled Petstore from its in-process mock, and
// search then invoke through MCP answer a pet.
func TestDemoConfigInvokesTheMock(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var stderr bytes.Buffer
	c := newCommon("serve", &stderr)
	if _, err := c.parse([]string{"--config", "../../specs/demo.yaml", "--no-cache", "--log-level", "warn"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cl, a, err := inProcess(ctx, c)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	defer cl.Close()
	if got := a.cfg.Specs[0].BaseURL; got != "" {
		t.Errorf("the loaded config was changed: base_url %q", got)
	}

	call := func(name string, args map[string]any) map[string]any { return mustCall(t, cl, name, args) }
	found := call("search", map[string]any{"query": "find pet by id"})
	if !strings.Contains(string(mustJSON(found)), `"petstore.getPetById"`) {
		t.Fatalf("search did not find getPetById: %v", found)
	}
	inspect := call("inspect", map[string]any{"endpointId": "petstore.getPetById"})
	if base, _ := inspect["baseUrl"].(string); !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/api/v3$`).MatchString(base) {
		t.Errorf("base URL %q is not the loopback mock", base)
	}
	res := call("invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}})
	if res["statusCode"] != float64(200) {
		t.Fatalf("invoke = %v", res)
	}
	pet, _ := res["body"].(map[string]any)
	for _, k := range []string{"id", "name", "photoUrls"} {
		if _, ok := pet[k]; !ok {
			t.Errorf("the answer is not pet-shaped, no %q: %v", k, res["body"])
		}
	}
	// specgate read the mock's quota from its headers.
	if rl, _ := res["rateLimit"].(map[string]any); rl["upstreamRemaining"] != float64(4) {
		t.Errorf("rateLimit = %v, want upstreamRemaining 4 of the mock's 5", res["rateLimit"])
	}
}

// TestMockCommand runs `specgate mock` on the shared Petstore with 5
// requests per 10 s: the 6th request is a 429 with Retry-After and
// X-RateLimit-Limit: 5, an unknown path is 404, and nothing reaches stdout.
func TestMockCommand(t *testing.T) {
	const petstore = "../../../shared/specs/petstore-v3.yaml"
	if _, err := os.Stat(petstore); err != nil {
		t.Skip("no shared specs")
	}
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	var stdout bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"mock", "--spec", petstore, "--http", "127.0.0.1:0",
			"--requests-per-window", "5", "--window", "10s"}, nil, &stdout, pw)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var base string
	for lines.Scan() {
		if m := regexp.MustCompile(`at (http://\S+)$`).FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		t.Fatal("no address on stderr")
	}
	go io.Copy(io.Discard, pr)
	if !strings.HasSuffix(base, "/api/v3") {
		t.Errorf("served at %s, want the server URL's path /api/v3", base)
	}
	get := func(path string) *http.Response {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := get("/nothing"); resp.StatusCode != 404 {
		t.Errorf("unknown path = %d, want 404", resp.StatusCode)
	}
	for i := 1; i <= 5; i++ {
		if resp := get("/pet/1"); resp.StatusCode != 200 {
			t.Fatalf("request %d = %d", i, resp.StatusCode)
		}
	}
	resp := get("/pet/1")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || resp.Header.Get("X-RateLimit-Limit") != "5" {
		t.Errorf("6th = %d, Retry-After %q, X-RateLimit-Limit %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("X-RateLimit-Limit"))
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
	if stdout.Len() > 0 {
		t.Errorf("wrote to stdout: %q", stdout.String())
	}
}

func TestMockCommandFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--requests-per-window", "0", "--window", "10s"}, "--requests-per-window must be positive"},
		{[]string{"--requests-per-window", "-2", "--window", "10s"}, "--requests-per-window must be positive"},
		{[]string{"--requests-per-window", "5"}, "--window is required"},
		{[]string{"--window", "10s"}, "--window needs --requests-per-window"},
		{[]string{"--requests-per-window", "5", "--window", "0s"}, "--window must be positive"},
		{[]string{"--cooldown", "-1s"}, "--cooldown must be positive"},
		{nil, "--spec is required"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"mock"}, tt.args...)
		if tt.args != nil {
			args = append(args, "--spec", "../../specs/petstore.yaml")
		}
		if code := run(t.Context(), args, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}

// TestMockIgnoresBaseURL: a spec served by its mock calls the mock even
// with a base_url, and both serve and check say it is ignored.
func TestMockIgnoresBaseURL(t *testing.T) {
	body := "specs:\n  - name: petstore\n    location: " + petstorePath(t) + "\n    base_url: https://petstore.example/api/v3\n    mock: true\n"
	cfg, err := config.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	out, _, err := startMocks(t.Context(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Specs[0].BaseURL; !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/api/v3$`).MatchString(got) {
		t.Errorf("base URL %q is not the loopback mock", got)
	}
	if cfg.Specs[0].BaseURL != "https://petstore.example/api/v3" {
		t.Errorf("the loaded config was changed: base_url %q", cfg.Specs[0].BaseURL)
	}
	if !strings.Contains(logs.String(), `msg="base_url is ignored: the spec is served by its mock" spec=petstore`) {
		t.Errorf("serve did not warn:\n%s", logs.String())
	}
	code, stdout, stderr := runCmd(t, "check", "--config", writeConfig(t, body), "--no-cache", "--validate=false")
	if code != 0 || !strings.Contains(stdout, "warning: base_url is ignored: the spec is served by its mock") {
		t.Errorf("check: exit %d\n%s%s", code, stdout, stderr)
	}
}
