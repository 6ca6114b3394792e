package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGovernancePageInABrowser runs test/browser: Debian's chromium, driven
// by puppeteer-core, signs in to /ui on loopback, follows it by server-sent
// events and by the poll while the stream is gone, compares a budget with
// rate_limit_status, sees a busy upstream's queue, watches a run advance,
// approves one write and declines another, sees a run wait for an
// approval, cancels a run, compares a refusing upstream's 429s and block
// with rate_limit_status, and finds nothing loaded from another origin;
// its screenshots (the upstream idle, busy and refusing among them) go to
// test/browser/screenshots (or SPECGATE_SCREENSHOTS). It skips when
// chromium, node or test/browser/node_modules is missing, unless
// SPECGATE_REQUIRE_BROWSER is set (CI sets it).
func TestGovernancePageInABrowser(t *testing.T) {
	require := os.Getenv("SPECGATE_REQUIRE_BROWSER") != ""
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	node, nerr := exec.LookPath("node")
	_, cerr := os.Stat(chromium)
	_, perr := os.Stat(filepath.Join("..", "..", "test", "browser", "node_modules", "puppeteer-core"))
	if nerr != nil || cerr != nil || perr != nil {
		if require {
			t.Fatalf("node, chromium or puppeteer-core is missing (apt-get install chromium; cd test/browser && npm ci --ignore-scripts): %v %v %v", nerr, cerr, perr)
		}
		t.Skip("node, chromium or test/browser/node_modules not present; apt-get install chromium and run `cd test/browser && npm ci --ignore-scripts`")
	}
	bin := specgateBinary(t)
	cmd := exec.CommandContext(t.Context(), node, "--test", "ui.test.mjs")
	cmd.Dir = filepath.Join("..", "..", "test", "browser")
	cmd.Env = append(os.Environ(), "SPECGATE_BIN="+bin, "CHROMIUM="+chromium, "XDG_CACHE_HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("node --test failed: %v\n%s", err, out.String())
	}
	tests := regexp.MustCompile(`(?m)^# tests (\d+)$`).FindStringSubmatch(out.String())
	pass := regexp.MustCompile(`(?m)^# pass (\d+)$`).FindStringSubmatch(out.String())
	if tests == nil || pass == nil || tests[1] != pass[1] || tests[1] == "0" || !strings.Contains(out.String(), "# fail 0") {
		t.Fatalf("the browser tests did not all pass:\n%s", out.String())
	}
	if m := regexp.MustCompile(`screenshots in (\S+)`).FindStringSubmatch(out.String()); m != nil {
		t.Logf("screenshots in %s", m[1])
	}
}
