package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestSecretsStayOnTheWire plants a recognisable secret in every kind of
// upstream credential and asserts that each appears nowhere but on the
// wire to the right host: not in tool results, errors, inspect,
// rate_limit_status, `specgate check` output or logs, in either log
// format; with --log-format json every log line is one JSON object.
func TestSecretsStayOnTheWire(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) { secretsStayOnTheWire(t, format) })
	}
}

func secretsStayOnTheWire(t *testing.T, logFormat string) {
	secrets := map[string]string{
		"SG_HEADER_KEY":    "sgsecret-header-4f1c",
		"SG_QUERY_KEY":     "sgsecret-query-9a2b",
		"SG_COOKIE_KEY":    "sgsecret-cookie-77de",
		"SG_BASIC_USER":    "sgsecret-user-0c3a",
		"SG_BASIC_PASS":    "sgsecret-pass-e5b1",
		"SG_BEARER":        "sgsecret-bearer-12ab",
		"SG_CLIENT_ID":     "sgsecret-clientid-3c3c",
		"SG_CLIENT_SECRET": "sgsecret-clientsecret-8d8d",
		"SG_STATIC":        "sgsecret-static-6e6e",
	}
	const accessToken = "sgsecret-accesstoken-5f5f"
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	var mu sync.Mutex
	var wire bytes.Buffer
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		fmt.Fprintf(&wire, "%s %s %v %s\n", r.Method, r.URL.RequestURI(), r.Header, body)
		mu.Unlock()
		switch r.URL.Path {
		case "/token":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":%q,"token_type":"bearer","expires_in":3600}`, accessToken)
		case "/echo":
			// A hostile upstream echoes the credential back in an error.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Echo", r.Header.Get("X-Api-Key"))
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"bad key %s"}`, r.Header.Get("X-Api-Key"))
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}
	}))
	defer up.Close()

	dir := t.TempDir()
	spec, err := filepath.Abs("../../testdata/auth-kinds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`
rate_limit_interval: 0s
audit_log: %s
specs:
  - name: auth
    location: %s
    base_url: %s
    headers: {X-Static: "${SG_STATIC}"}
    auth:
      headerKey: {value: "${SG_HEADER_KEY}"}
      queryKey: {value: "${SG_QUERY_KEY}"}
      cookieKey: {value: "${SG_COOKIE_KEY}"}
      basic: {username: "${SG_BASIC_USER}", password: "${SG_BASIC_PASS}"}
      bearer: {token: "${SG_BEARER}"}
      oauth: {client_id: "${SG_CLIENT_ID}", client_secret: "${SG_CLIENT_SECRET}", token_url: "%s/token"}
`, filepath.Join(dir, "audit.jsonl"), spec, up.URL, up.URL)
	cfgPath := filepath.Join(dir, "specgate.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())

	var seen bytes.Buffer
	logLines := 0
	runCmd := func(args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		run(context.Background(), append(args, "--config", cfgPath, "--log-level", "debug", "--log-format", logFormat), strings.NewReader(""), &stdout, &stderr)
		seen.Write(stdout.Bytes())
		seen.Write(stderr.Bytes())
		if logFormat != "json" || args[0] == "check" {
			return
		}
		// The one-shot commands write only log lines and tool errors on
		// stderr; each log line is a JSON object with time, level, msg.
		for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			if !strings.HasPrefix(line, "{") {
				continue
			}
			logLines++
			var obj map[string]any
			if err := json.Unmarshal([]byte(line), &obj); err != nil || obj["msg"] == nil || obj["level"] == nil || obj["time"] == nil {
				t.Errorf("%v: log line is not a slog JSON object (%v): %s", args, err, line)
			}
		}
	}
	runCmd("check")
	for _, id := range []string{"withHeaderKey", "withQueryKey", "withCookieKey", "withBasic", "withBearer", "withOAuth", "echoFail"} {
		runCmd("inspect", "auth."+id)
		runCmd("invoke", "auth."+id)
	}
	runCmd("search", "basic auth")

	// rate_limit_status through the tools, in process.
	c := newCommon("status", io.Discard)
	if _, err := c.parse([]string{"--config", cfgPath}); err != nil {
		t.Fatal(err)
	}
	cl, _, err := inProcess(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, name := range []string{"rate_limit_status"} {
		out, err := callTool(t.Context(), cl, name, map[string]any{}, newFlags(name, nil, &seen))
		if err != nil {
			t.Fatal(err)
		}
		seen.Write(out)
	}
	audit, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	seen.Write(audit)

	mu.Lock()
	onWire := wire.String()
	mu.Unlock()
	all := seen.String()
	basic := base64.StdEncoding.EncodeToString([]byte(secrets["SG_BASIC_USER"] + ":" + secrets["SG_BASIC_PASS"]))
	for name, v := range secrets {
		if strings.Contains(all, v) {
			t.Errorf("%s appears in specgate's output", name)
		}
	}
	for _, v := range []string{accessToken, basic} {
		if strings.Contains(all, v) {
			t.Errorf("derived credential %q appears in specgate's output", v[:12])
		}
	}
	// Each secret did reach the upstream, where it belongs.
	for _, want := range []string{
		"X-Api-Key:[" + secrets["SG_HEADER_KEY"],
		"appid=" + secrets["SG_QUERY_KEY"],
		"session=" + secrets["SG_COOKIE_KEY"],
		"Basic " + basic,
		"Bearer " + secrets["SG_BEARER"],
		"Bearer " + accessToken,
		secrets["SG_STATIC"],
	} {
		if !strings.Contains(onWire, want) {
			t.Errorf("the upstream never received %q", want[:min(len(want), 24)])
		}
	}
	if n := strings.Count(all, `"statusCode": 200`); n != 6 {
		t.Errorf("%d successful invokes, want 6:\n%s", n, all)
	}
	if !strings.Contains(all, "http_error") {
		t.Errorf("the echoing upstream's 400 is not in the output:\n%s", all)
	}
	if logFormat == "json" && logLines < 10 {
		t.Errorf("only %d JSON log lines at debug level", logLines)
	}
	if !strings.Contains(all, "ok   auth: 7 endpoints") {
		t.Errorf("check output missing:\n%s", all)
	}
}
