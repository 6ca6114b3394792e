package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionFrom(t *testing.T) {
	info := func(main string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/specgate/specgate", Version: main}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	tests := []struct {
		name    string
		ldflags string
		read    func() (*debug.BuildInfo, bool)
		want    string
	}{
		{"ldflags win", "v1.2.3-4-gabc", info("v9.9.9"), "v1.2.3-4-gabc"},
		{"go install @v1.2.3", "", info("v1.2.3"), "v1.2.3"},
		{"clone, clean", "", info("(devel)", "vcs.revision", "0123456789abcdef0123", "vcs.modified", "false"), "dev-0123456789ab"},
		{"clone, changed", "", info("(devel)", "vcs.revision", "0123456789abcdef0123", "vcs.modified", "true"), "dev-0123456789ab-dirty"},
		{"no vcs", "", info("(devel)"), "dev"},
		{"no build info", "", func() (*debug.BuildInfo, bool) { return nil, false }, "dev"},
	}
	for _, tt := range tests {
		if got := versionFrom(tt.ldflags, tt.read); got != tt.want {
			t.Errorf("%s: versionFrom = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// The version given with -ldflags, as make build gives it, is what
// `specgate version`, `--version` and the MCP serverInfo report.
func TestVersionLdflags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "specgate")
	out, err := exec.Command("go", "build", "-ldflags", "-X main.version=v7.8.9-test", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		if !strings.HasPrefix(string(out), "specgate v7.8.9-test (go") {
			t.Errorf("specgate %s printed %q", arg, out)
		}
	}
	_, init := stdioClient(t, bin, nil, "serve", "--spec", "../../testdata/petstore-v3.yaml", "--no-cache", "--log-level", "error")
	if init.ServerInfo.Version != "v7.8.9-test" {
		t.Errorf("serverInfo.version = %q, want v7.8.9-test", init.ServerInfo.Version)
	}
}

// Without -ldflags, the test binary reports what its build recorded, never
// an empty version.
func TestVersionCommand(t *testing.T) {
	var stdout bytes.Buffer
	if code := run(t.Context(), []string{"version"}, strings.NewReader(""), &stdout, &bytes.Buffer{}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if f := strings.Fields(stdout.String()); len(f) < 2 || f[0] != "specgate" || f[1] == "" {
		t.Errorf("version printed %q", stdout.String())
	}
}
