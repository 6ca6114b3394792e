//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// mockBombSpec asks the mock for values no answer should hold: before the
// mock bounded them, /long ran `serve` out of memory at call time (a
// 2,000,000,000-rune string padded one rune at a time: 1.67 GB after
// 11.7 s) and /wide never answered (100,000,000 properties).
const mockBombSpec = `openapi: 3.0.3
info: {title: bombs, version: "1"}
paths:
  /long:
    get:
      operationId: long
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, required: [s], properties: {s: {type: string, minLength: 2000000000}}}
  /wide:
    get:
      operationId: wide
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, minProperties: 100000000}
  /huge:
    get:
      operationId: huge
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                required: [n, p]
                properties:
                  n: {type: integer, minimum: 1e308, maximum: 1e308}
                  p: {type: string, pattern: "^(a{1000}){1000}$"}
`

// TestBinaryMockBombsAnswerBounded serves the spec with mock: true and
// calls each operation: every call answers within seconds, the process
// stays small, and the log says once which answer was cut short.
func TestBinaryMockBombsAnswerBounded(t *testing.T) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "bombs.yaml")
	if err := os.WriteFile(specPath, []byte(mockBombSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "specgate.yaml")
	cfg := fmt.Sprintf("specs:\n  - name: bombs\n    location: %q\n    mock: true\n    rate_limit_interval: 0s\n", specPath)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startStdio(t, nil, "serve", "--config", cfgPath, "--no-cache")
	for _, op := range []string{"long", "wide", "huge", "long"} {
		start := time.Now()
		a := s.tool("invoke", fmt.Sprintf(`{"endpointId":"bombs.%s","maxBytes":4096}`, op), 10*time.Second)
		took := time.Since(start)
		if a.isErr {
			t.Errorf("%s: %.300s", op, a.line)
		}
		t.Logf("%s answered in %v (%d bytes on the wire)", op, took.Round(time.Millisecond), len(a.line))
		if took > 5*time.Second {
			t.Errorf("%s took %v", op, took)
		}
		if op == "huge" && strings.Contains(string(a.line), "-9223372036854775808") {
			t.Errorf("huge: 1e308 answered as the lowest int64: %.300s", a.line)
		}
	}
	ps := s.close()
	rss := peakRSS(t, ps)
	t.Logf("peak memory %d MB", rss>>20)
	if rss > 300<<20 {
		t.Errorf("peak memory %d MB, want under 300", rss>>20)
	}
	logs := s.stderr.String()
	for _, op := range []string{"long", "wide", "huge"} {
		if n := len(regexp.MustCompile(`a short value is served.*endpoint=bombs\.`+op+`\b`).FindAllString(logs, -1)); n != 1 {
			t.Errorf("%s: %d warnings of a clipped answer, want 1:\n%.2000s", op, n, logs)
		}
	}
}

// aliasBombYAMLConfig is a 1 MB config of one 1 MiB string aliased 2,000
// times: before the alias budget, `check` ran out of memory after 36.6 s
// at 2 GB.
func aliasBombYAMLConfig() string {
	var b strings.Builder
	b.WriteString("specs:\n  - name: x\n    location: x.yaml\n    include: [&s ")
	b.WriteString(strings.Repeat("a", 1<<20))
	b.WriteString("]\n    exclude:\n")
	for range 2000 {
		b.WriteString("      - *s\n")
	}
	return b.String()
}

func TestBinaryCheckRefusesConfigAliasBomb(t *testing.T) {
	bin := specgateBinary(t)
	cfgPath := filepath.Join(t.TempDir(), "specgate.yaml")
	if err := os.WriteFile(cfgPath, []byte(aliasBombYAMLConfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "check", "--config", cfgPath, "--no-cache")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err == nil || cmd.ProcessState.ExitCode() == 0 {
		t.Fatalf("check exited %v, want a refusal:\n%.500s", err, out)
	}
	if !strings.Contains(string(out), "aliases repeat too much text") {
		t.Errorf("output does not name the alias bomb:\n%.500s", out)
	}
	if len(out) > 4096 {
		t.Errorf("check wrote %d bytes; the refusal should be short", len(out))
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
