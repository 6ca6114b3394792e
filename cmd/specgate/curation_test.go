package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/specgate/specgate/pkg/config"
)

// petstorePath is the shared fixture, absolute so configs in t.TempDir find it.
func petstorePath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../testdata/petstore-v3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "specgate.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheckReportsCuration(t *testing.T) {
	cfg := writeConfig(t, `read_only: true
specs:
  - name: petstore
    location: `+petstorePath(t)+`
    include: ["tag:pet", "GET /store/*", "tag:nosuch"]
    exclude: ["findPetsByTags", "PATCH /**"]
`)
	code, out, errs := runCmd(t, "check", "--config", cfg, "--no-cache", "--validate=false")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"ok   petstore: 3 endpoints, 16 excluded (",
		"     curation: 3 of 19 endpoints served, 16 excluded\n",
		"       specs[petstore].read_only removed 11\n",
		`       specs[petstore].include[0] "tag:pet" kept 3` + "\n",
		`       specs[petstore].include[1] "GET /store/*" kept 1` + "\n",
		`       specs[petstore].exclude[0] "findPetsByTags" removed 1` + "\n",
		`     warning: specs[petstore].include[2]: no endpoint has tag "nosuch" (tags: pet, store, user)` + "\n",
		`     warning: specs[petstore].exclude[1]: "PATCH /**" matches no endpoint` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

func TestCheckCurationErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name, spec, want string
	}{
		{"pattern that does not parse", `include: ["tag:pet", "GET /pet", "FETCH /x"]`,
			`specs[stripe].include[2]: "FETCH /x": "FETCH" is not an HTTP method`},
		{"empty pattern", `exclude: [""]`, `specs[stripe].exclude[0]: is empty`},
		{"include that leaves nothing", `include: ["nothing*"]`,
			`FAIL stripe: specs[stripe].include: selects none of the spec's 19 endpoints`},
		{"exclude that leaves nothing", `exclude: ["/**"]`,
			`FAIL stripe: specs[stripe].exclude: removes all 19 endpoints left`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeConfig(t, "specs:\n  - name: stripe\n    location: "+petstorePath(t)+"\n    "+tt.spec+"\n")
			code, out, errs := runCmd(t, "check", "--config", cfg, "--no-cache", "--validate=false")
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if !strings.Contains(out+errs, tt.want) {
				t.Errorf("output lacks %q:\nstdout: %s\nstderr: %s", tt.want, out, errs)
			}
		})
	}
}

func TestServeLogsExcludedCounts(t *testing.T) {
	cfg, err := config.Parse([]byte("specs:\n  - name: petstore\n    location: " + petstorePath(t) + "\n    exclude: [\"DELETE /**\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	l, err := loadSpecs(t.Context(), cfg, "", slog.New(slog.NewTextHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.cat.Len(); got != 16 {
		t.Errorf("catalog holds %d endpoints, want 16", got)
	}
	if why, ok := l.cat.Excluded("petstore.deleteUser"); !ok || !strings.Contains(why, `specs[petstore].exclude[0] ("DELETE /**")`) {
		t.Errorf("Excluded(deleteUser) = %q, %v", why, ok)
	}
	if !strings.Contains(logs.String(), `msg="spec loaded" spec=petstore endpoints=16 excluded=3 `) {
		t.Errorf("log lacks the excluded count:\n%s", logs.String())
	}
}

func TestReadOnlyFlagAndInstructions(t *testing.T) {
	c := newCommon("serve", &bytes.Buffer{})
	if _, err := c.parse([]string{"--spec", petstorePath(t), "--read-only"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.config()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.ReadOnly || !allReadOnly(cfg) {
		t.Error("--read-only did not set read_only")
	}
	f := false
	cfg.Specs[0].ReadOnly = &f
	if allReadOnly(cfg) {
		t.Error("a spec with read_only: false still counts as read-only")
	}
}

func TestWatchSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		var elapsed atomic.Int64
		stop := watchSlow(time.Second, func(d time.Duration) { calls.Add(1); elapsed.Store(int64(d)) })
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if calls.Load() != 0 {
			t.Fatal("reported after 999ms")
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		stop()
		if calls.Load() != 1 || time.Duration(elapsed.Load()) != time.Second {
			t.Fatalf("%d reports, elapsed %s; want one after 1s", calls.Load(), time.Duration(elapsed.Load()))
		}

		fast := watchSlow(time.Second, func(time.Duration) { t.Error("a load that finished in time was reported") })
		time.Sleep(500 * time.Millisecond)
		fast()
		time.Sleep(time.Hour)
		synctest.Wait()
	})
	if got, want := stillLoading("github", "specs/github.json", time.Second), "spec github (specs/github.json) is still loading after 1s"; got != want {
		t.Errorf("stillLoading = %q, want %q", got, want)
	}
}
