package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fastAPISpec is what a FastAPI app serves at /openapi.json: no servers
// (calls go back to where the spec came from), a generic file name.
const fastAPISpec = `{"openapi":"3.1.0","info":{"title":"Read Item API","version":"0.1.0"},"paths":{"/items/{item_id}":{"get":{
  "operationId":"read_item","parameters":[{"name":"item_id","in":"path","required":true,"schema":{"type":"integer"}}],
  "responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object"}}}}}}}}}`

// localAPI serves fastAPISpec and its one operation on loopback.
func localAPI(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/openapi.json" {
			w.Write([]byte(fastAPISpec))
			return
		}
		w.Write([]byte(`{"item_id":` + strings.TrimPrefix(r.URL.Path, "/items/") + `}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// `specgate invoke --spec http://127.0.0.1:8000/openapi.json openapi.read_item`
// was refused by block_private_networks (with --base-url too), and the spec
// was named "openapi" (issue 33 item 1). The operator's own local API is
// called, and the spec is named after its title.
func TestCLIInvokeLocalAPIIsNotBlocked(t *testing.T) {
	srv := localAPI(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	tests := []struct {
		name  string
		extra []string
	}{
		{"spec location on loopback", nil},
		{"with --base-url", []string{"--base-url", srv.URL}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"invoke", "--spec", srv.URL + "/openapi.json", "--log-level", "error", "--no-cache"}, tt.extra...)
			args = append(args, "read-item-api.read_item", "--params", `{"item_id":7}`)
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), `"item_id": 7`) {
				t.Errorf("answer:\n%s", stdout.String())
			}
		})
	}
}

// A spec on loopback whose own server is another private address passed
// check, and every call was then refused (issue 33 item 1): check warns.
func TestCheckWarnsWhenTheSpecsBaseURLIsBlocked(t *testing.T) {
	srv := localAPI(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Replace(fastAPISpec, `"paths"`, `"servers":[{"url":"http://10.0.0.5:8080"}],"paths"`, 1)))
	}))
	t.Cleanup(remote.Close)
	for _, tt := range []struct {
		name, yaml string
		wantWarn   bool
	}{
		{"own server on loopback", "specs:\n  - location: " + srv.URL + "/openapi.json\n", false},
		{"spec's server private", "specs:\n  - location: " + remote.URL + "/openapi.json\n", true},
		{"the operator's base_url", "specs:\n  - location: " + remote.URL + "/openapi.json\n    base_url: http://10.0.0.5:8080\n", false},
		{"blocking off", "block_private_networks: false\nspecs:\n  - location: " + remote.URL + "/openapi.json\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(cfg, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), []string{"check", "--config", cfg, "--no-cache"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
			}
			out := stdout.String()
			if !strings.Contains(out, "ok   read-item-api:") {
				t.Errorf("the spec is not named after its title:\n%s", out)
			}
			if got := strings.Contains(out, "block_private_networks"); got != tt.wantWarn {
				t.Errorf("warned %v, want %v:\n%s", got, tt.wantWarn, out)
			}
		})
	}
}

// `specgate init http://127.0.0.1:8000/openapi.json` wrote a config whose
// calls were refused and whose spec was named openapi (issue 33 item 1):
// it is named after its title, and check then serve it call the app.
func TestInitLocalAPIWritesAConfigThatCalls(t *testing.T) {
	srv := localAPI(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"init", srv.URL + "/openapi.json", "--out", cfg}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr.String())
	}
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `name: "read-item-api"`) {
		t.Errorf("config:\n%s", data)
	}
	stdout.Reset()
	args := []string{"invoke", "--config", cfg, "--log-level", "error", "--no-cache", "read-item-api.read_item", "--params", `{"item_id":3}`}
	if code := run(t.Context(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("invoke: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
}

// Slack declares its token again as a required "token" header: inspect
// showed it to the model, which had none to give, with the token configured
// (issue 33 item 4). A parameter the config fills is left out.
func TestInspectHidesAParameterTheConfigFills(t *testing.T) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "slack.json")
	if err := os.WriteFile(specPath, []byte(`{"openapi":"3.0.3","info":{"title":"slack","version":"1"},"servers":[{"url":"https://slack.com/api"}],
	 "components":{"securitySchemes":{"slackAuth":{"type":"oauth2","flows":{"authorizationCode":{
	   "authorizationUrl":"https://slack.com/oauth/authorize","tokenUrl":"https://slack.com/api/oauth.access","scopes":{}}}}}},
	 "paths":{"/users.list":{"get":{"operationId":"users_list","security":[{"slackAuth":[]}],"parameters":[
	   {"name":"token","in":"header","required":true,"schema":{"type":"string"}},
	   {"name":"limit","in":"query","schema":{"type":"integer"}}],"responses":{"200":{"description":"ok"}}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("SLACK_ACCESS_TOKEN", "xoxb-test")
	for _, tt := range []struct {
		name, auth string
		wantToken  bool
	}{
		{"token configured", "    auth: {slackAuth: {token: \"${SLACK_ACCESS_TOKEN}\"}}\n", false},
		{"nothing configured", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := filepath.Join(dir, "c.yaml")
			if err := os.WriteFile(cfg, []byte("specs:\n  - name: slack\n    location: "+specPath+"\n"+tt.auth), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), []string{"inspect", "--config", cfg, "--log-level", "error", "slack.users_list"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			out := stdout.String()
			if got := strings.Contains(out, `"name": "token"`); got != tt.wantToken {
				t.Errorf("token shown %v, want %v:\n%s", got, tt.wantToken, out)
			}
			if !strings.Contains(out, `"name": "limit"`) || strings.Contains(out, "xoxb-test") {
				t.Errorf("inspect:\n%s", out)
			}
		})
	}
}
