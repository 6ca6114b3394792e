package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/help")

// Each command's help (`specgate help CMD` and `CMD --help`, the same
// text on stdout) is kept in testdata/help/CMD.txt; -update rewrites them.
func TestHelpGolden(t *testing.T) {
	for _, name := range commandOrder {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "help", name)
			if code != 0 || stderr != "" {
				t.Fatalf("help %s: exit %d, stderr %q", name, code, stderr)
			}
			if name != "version" {
				code, dash, _ := runCmd(t, name, "--help")
				if code != 0 || dash != stdout {
					t.Errorf("%s --help (exit %d) differs from help %s:\n%s", name, code, name, dash)
				}
			}
			for _, want := range []string{"Usage:\n  specgate " + name, "Example:\n  ", "specgate "} {
				if !strings.Contains(stdout, want) {
					t.Errorf("help %s lacks %q", name, want)
				}
			}
			for _, line := range strings.Split(stdout, "\n") {
				if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "-") && !strings.HasPrefix(f[0], "--") {
					t.Errorf("help %s shows a single-dash flag: %q", name, line)
				}
			}
			path := filepath.Join("testdata", "help", name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if stdout != string(want) {
				t.Errorf("help %s differs from %s (run with -update if deliberate):\n%s", name, path, stdout)
			}
		})
	}
}

// A command's help lists only its own flags.
func TestHelpOwnFlags(t *testing.T) {
	tests := []struct {
		cmd     string
		has     []string
		hasNone []string
	}{
		{"init", []string{"--out FILE", "--force", "--name NAME"}, []string{"--rate-limit-interval", "--config", "--spec", "--http"}},
		{"search", []string{"--spec FILE|URL", "--limit N", "--json"}, []string{"--rate-limit-interval", "--http", "--params"}},
		{"serve", []string{"--http", "--rate-limit-interval DURATION", "--name NAME"}, []string{"--limit", "--params", "--out"}},
		{"invoke", []string{"--params JSON", "--body JSON", "--rate-limit-interval"}, []string{"--http", "--limit"}},
	}
	for _, tt := range tests {
		_, out, _ := runCmd(t, "help", tt.cmd)
		for _, s := range tt.has {
			if !strings.Contains(out, s) {
				t.Errorf("help %s lacks %q", tt.cmd, s)
			}
		}
		for _, s := range tt.hasNone {
			if strings.Contains(out, s) {
				t.Errorf("help %s lists %q, not its flag", tt.cmd, s)
			}
		}
	}
}

// A malformed flag value is answered with the fix, as a config error is;
// exit 2, nothing on stdout.
func TestFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--rate-limit-interval", "10"}, "--rate-limit-interval: 10 is a bare number: write a duration with a unit, such as 10s"},
		{[]string{"serve", "--rate-limit-interval=soon"}, `--rate-limit-interval: "soon" is not a duration: write it like 10s`},
		{[]string{"serve", "--read-only=yes"}, `--read-only: "yes" is not true or false`},
		{[]string{"search", "--limit", "many", "x"}, `--limit: "many" is not a whole number of hits`},
		{[]string{"run-script", "--timeout", "soon", "-"}, `--timeout: "soon" is not a duration: write it like 30s or 2m (a bare number counts seconds)`},
		{[]string{"serve", "--log-level", "loud"}, `--log-level: "loud" is not a log level: write debug, info, warn or error`},
		{[]string{"mock", "--window", "5"}, "--window: 5 is a bare number"},
		{[]string{"search", "--limit", "100", "x"}, "--limit: 100 is out of range: write a number of hits from 1 to 50"},
		{[]string{"invoke", "--body", "@/nonexistent/body.json", "x.y"}, "--body: open /nonexistent/body.json: no such file or directory"},
		{[]string{"run-script", "--timeout", "-5", "-"}, "--timeout: -5 is out of range"},
		{[]string{"serve", "--spce", "x"}, "unknown flag --spce (did you mean --spec?)"},
		{[]string{"serve", "--spec"}, "--spec needs a value"},
		{[]string{"init", "--nope", "x"}, "unknown flag --nope"},
		{[]string{"serv"}, `unknown command "serv" (did you mean serve?)`},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCmd(t, tt.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tt.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.args, code, stdout, stderr, tt.want)
		}
	}
}

// Flags a command took before, though they did nothing there, still
// parse; its help does not show them.
func TestHiddenCompatFlags(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	code, stdout, stderr := runCmd(t, "search", "--spec", "../../testdata/petstore-v3.yaml", "--rate-limit-interval", "1s", "--disable-ratelimiter", "--limit", "1", "pet")
	if code != 0 || stdout == "" {
		t.Errorf("search with the cooldown flags: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr = runCmd(t, "init", "../../testdata/petstore-v3.yaml", "--no-cache", "--rate-limit-interval", "10s", "--log-level", "warn")
	if code != 0 || !strings.Contains(stdout, "specs:") {
		t.Errorf("init with serve flags: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr = runCmd(t, "init", "../../testdata/petstore-v3.yaml", "--rate-limit-interval", "10")
	if code != 2 || !strings.Contains(stderr, "10 is a bare number") {
		t.Errorf("a hidden flag's bad value: exit %d, stderr %q", code, stderr)
	}
}

// The single-dash forms the flag package always took still work.
func TestSingleDashFlags(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	code, stdout, stderr := runCmd(t, "search", "-spec", "../../testdata/petstore-v3.yaml", "-limit=1", "pet")
	if code != 0 || strings.Count(stdout, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// `specgate serve --http 8080` answered "unexpected arguments: 8080" (issue
// 33 item 7): a bare port is a usage error that says what --http expects.
func TestServeHTTPBarePortSaysWhatItExpects(t *testing.T) {
	for _, args := range [][]string{{"--http", "8080"}, {"--http=8080"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), append([]string{"serve"}, args...), strings.NewReader(""), &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), "--http 127.0.0.1:8080") || !strings.Contains(stderr.String(), "--http :8080") {
				t.Errorf("exit %d: %s", code, stderr.String())
			}
		})
	}
}
