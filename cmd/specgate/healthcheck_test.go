package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() || r.URL.Path != "/readyz" {
			http.Error(w, "loading", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	code, _, stderr := runCmd(t, "healthcheck", srv.URL+"/readyz")
	if code != 1 || !strings.Contains(stderr, "503") {
		t.Errorf("not ready: exit %d, stderr %q", code, stderr)
	}
	ready.Store(true)
	if code, _, stderr := runCmd(t, "healthcheck", srv.URL+"/readyz"); code != 0 {
		t.Errorf("ready: exit %d, stderr %q", code, stderr)
	}
	srv.Close()
	if code, _, _ := runCmd(t, "healthcheck", "--timeout", "1s", srv.URL+"/readyz"); code != 1 {
		t.Errorf("down: exit %d, want 1", code)
	}
}
