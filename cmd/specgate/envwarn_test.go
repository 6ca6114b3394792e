package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// An unset ${GITHUB_TOKEN} in headers sent "Authorization: Bearer ", which
// GitHub answers with 401 where no header gets the anonymous quota, and
// each reference to the variable was a warning of its own (issue 33 item
// 5): the header is left out, with one warning for the variable.
func TestUnsetVariableLeavesTheHeaderOut(t *testing.T) {
	var mu sync.Mutex
	var got http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	defer up.Close()
	dir := t.TempDir()
	specPath := filepath.Join(dir, "gh.json")
	if err := os.WriteFile(specPath, []byte(`{"openapi":"3.0.3","info":{"title":"gh","version":"1"},"paths":{"/rate_limit":{"get":{"operationId":"rate",
	  "responses":{"200":{"description":"ok"}}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("NEWBIE_SET", "yes")
	t.Setenv("NEWBIE_GITHUB_TOKEN", "")
	os.Unsetenv("NEWBIE_GITHUB_TOKEN") // t.Setenv restores it
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("specs:\n  - name: gh\n    location: "+specPath+"\n    base_url: "+up.URL+"\n"+
		"    headers: {Authorization: \"Bearer ${NEWBIE_GITHUB_TOKEN}\", X-GitHub-Token: \"${NEWBIE_GITHUB_TOKEN}\", X-Set: \"${NEWBIE_SET}\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"invoke", "--config", cfg, "gh.rate"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if _, ok := got["Authorization"]; ok || got.Get("X-GitHub-Token") != "" || got.Get("X-Set") != "yes" {
		t.Errorf("upstream received %v", got)
	}
	if n := strings.Count(stderr.String(), "NEWBIE_GITHUB_TOKEN"); n != 1 {
		t.Errorf("%d warnings name the variable, want 1:\n%s", n, stderr.String())
	}
	if ua := got.Get("User-Agent"); !strings.HasPrefix(ua, "specgate/") {
		t.Errorf("User-Agent %q, want specgate/<version>", ua)
	}
	if !strings.Contains(stderr.String(), "left out of calls") {
		t.Errorf("the warning does not say the header is left out:\n%s", stderr.String())
	}
}
