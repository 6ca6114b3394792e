package main

import (
	"bufio"
	"net/http"
	"net/http/cookiejar"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestServeUIListensOnLoopbackOnly(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"[::1]:0", true},
		{"0.0.0.0:0", false},
		{":0", false},
		{"192.0.2.1:0", false},
		{"no-port", false},
	} {
		ln, err := listenUI(tc.addr)
		if ln != nil {
			ln.Close()
		}
		if (err == nil) != tc.ok {
			t.Errorf("--ui %s: err = %v, want ok %v", tc.addr, err, tc.ok)
		}
	}
}

// serve --ui beside stdio prints a URL whose token signs in once.
func TestServeUIOneTimeLink(t *testing.T) {
	bin := specgateBinary(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cmd := exec.CommandContext(t.Context(), bin, "serve", "--spec", "../../testdata/petstore-v3.yaml", "--ui", "127.0.0.1:0")
	stdin, err := cmd.StdinPipe() // held open: the stdio client stays
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	link := regexp.MustCompile(`http://127\.0\.0\.1:\d+/ui/\?token=[A-Za-z0-9_-]+`)
	var url string
	sc := bufio.NewScanner(stderr)
	for url == "" && sc.Scan() {
		url = link.FindString(sc.Text())
	}
	if url == "" {
		t.Fatal("no sign-in link printed")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	base := url[:strings.Index(url, "/ui/")]
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	get := func(c *http.Client, u string) int {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(c, base+"/ui/api/state"); got != http.StatusUnauthorized {
		t.Errorf("state before sign-in: %d, want 401", got)
	}
	if got := get(c, url); got != http.StatusOK { // the redirect to /ui/ followed
		t.Errorf("the link: %d, want the page", got)
	}
	if got := get(c, base+"/ui/api/state"); got != http.StatusOK {
		t.Errorf("state after sign-in: %d, want 200", got)
	}
	other := &http.Client{Timeout: 10 * time.Second}
	if got := get(other, url); got != http.StatusUnauthorized {
		t.Errorf("the link used twice: %d, want 401", got)
	}
}
