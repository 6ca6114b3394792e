package main

import (
	"strings"
	"testing"
)

// SPECGATE_* variables set the top-level keys over the file, and flags
// override them.
func TestEnvironmentOverridesTheFileAndFlagsTheEnvironment(t *testing.T) {
	cfg := writeConfig(t, "read_only: false\nspecs:\n  - name: petstore\n    location: "+petstorePath(t)+"\n")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("SPECGATE_READ_ONLY", "true")
	code, out, errs := runCmd(t, "check", "--config", cfg, "--no-cache", "--validate=false")
	if code != 0 || !strings.Contains(out, "read_only removed") {
		t.Errorf("SPECGATE_READ_ONLY=true: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCmd(t, "check", "--config", cfg, "--no-cache", "--validate=false", "--read-only=false")
	if code != 0 || strings.Contains(out, "read_only removed") {
		t.Errorf("--read-only=false over SPECGATE_READ_ONLY=true: exit %d\n%s%s", code, out, errs)
	}
	t.Setenv("SPECGATE_RATE_LIMIT_INTERVAL", "10")
	code, _, errs = runCmd(t, "check", "--config", cfg, "--no-cache", "--validate=false")
	if code == 0 || !strings.Contains(errs, "SPECGATE_RATE_LIMIT_INTERVAL") {
		t.Errorf("a malformed variable: exit %d, %q", code, errs)
	}
}
