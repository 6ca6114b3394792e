package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A budget written for localhost does not hold for an operation whose own
// server is written 127.0.0.1: check says so, as serve's log does.
func TestCheckWarnsLoopbackBudgetNearMiss(t *testing.T) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "near.json")
	if err := os.WriteFile(specPath, []byte(`{"openapi":"3.0.3","info":{"title":"near","version":"1"},
	  "servers":[{"url":"http://localhost:9"}],"paths":{
	  "/a":{"get":{"operationId":"a","responses":{"200":{"description":"ok"}}}},
	  "/b":{"get":{"operationId":"b","servers":[{"url":"http://127.0.0.1:9"}],"responses":{"200":{"description":"ok"}}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, tt := range []struct {
		name, budget string
		want         []string
	}{
		{"localhost budget", "localhost:9", []string{`upstream 127.0.0.1:9 matches no budget, but budget "localhost:9" names the same machine another way`}},
		{"bare host budget", "localhost", []string{`upstream 127.0.0.1:9 matches no budget, but budget "localhost" names`}},
		{"a budget for each", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			upstreams := "  - {match: localhost:9, requests_per_window: 5, window: 1m}\n  - {match: 127.0.0.1:9, requests_per_window: 5, window: 1m}\n"
			if tt.budget != "" {
				upstreams = fmt.Sprintf("  - {match: %q, requests_per_window: 5, window: 1m}\n", tt.budget)
			}
			cfg := writeConfig(t, fmt.Sprintf("specs:\n  - {name: near, location: %s}\nupstreams:\n%s", specPath, upstreams))
			code, stdout, stderr := runCmd(t, "check", "--config", cfg, "--validate=false")
			if code != 0 {
				t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
			}
			got := 0
			for _, line := range strings.Split(stdout, "\n") {
				if strings.Contains(line, "matches no budget") {
					got++
				}
			}
			if got != len(tt.want) {
				t.Errorf("%d near-miss warnings, want %d:\n%s", got, len(tt.want), stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}
