package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// listUpstream answers a Stripe-like list of n items whose ids are long
// enough that the next page's cursor takes more than a quarter of a small
// budget.
func listUpstream(t *testing.T, n int) (url string, body []byte) {
	t.Helper()
	type item struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	var items []item
	for i := range n {
		items = append(items, item{ID: fmt.Sprintf("it_%s_%d", strings.Repeat("x", 300), i), Name: fmt.Sprintf("n%d", i)})
	}
	body, _ = json.Marshal(map[string]any{"object": "list", "data": items, "has_more": true})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	t.Cleanup(up.Close)
	return up.URL, body
}

func listSpec(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.json")
	if err := os.WriteFile(path, []byte(`{"openapi":"3.0.3","info":{"title":"shop","version":"1"},"paths":{"/items":{"get":{"operationId":"list",
	  "parameters":[{"name":"starting_after","in":"query","schema":{"type":"string"}}],
	  "responses":{"200":{"description":"ok"}}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// `specgate invoke` printed a preview with a responseId that died with the
// process: the CLI prints no responseId, a preview's hint names the flags,
// --raw prints the whole body, --jq filters the whole body, and a
// nextPageOf becomes the parameters it stood for.
func TestCLIInvokePrintsNoResponseIDItCannotRead(t *testing.T) {
	url, body := listUpstream(t, 200)
	spec := listSpec(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	invoke := func(extra ...string) (int, string, string) {
		args := append([]string{"invoke", "--spec", spec, "--base-url", url, "--log-level", "error", "--rate-limit-interval", "0", "shop.list"}, extra...)
		return runCmd(t, args...)
	}

	code, out, errs := invoke()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(out, "responseId") || strings.Contains(out, "read_response") || strings.Contains(out, "nextPageOf") {
		t.Errorf("the answer names a stored answer the process took with it:\n%s", out)
	}
	var res struct {
		Shaped   map[string]any `json:"shaped"`
		Hint     string         `json:"hint"`
		NextPage struct {
			Parameters map[string]any `json:"parameters"`
		} `json:"nextPage"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if res.Shaped == nil || !strings.Contains(res.Hint, "--raw") || !strings.Contains(res.Hint, "--jq '") || !strings.Contains(res.Hint, "--max-bytes") {
		t.Errorf("a preview's hint does not name the flags: %q", res.Hint)
	}

	code, out, errs = invoke("--max-bytes", "1024")
	if code != 0 {
		t.Fatalf("--max-bytes 1024: exit %d: %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if got, want := res.NextPage.Parameters["starting_after"], fmt.Sprintf("it_%s_199", strings.Repeat("x", 300)); got != want || strings.Contains(out, "nextPageOf") {
		t.Errorf("nextPage: got %v, want the starting_after parameter:\n%s", got, out)
	}

	code, out, errs = invoke("--raw")
	if code != 0 || out != string(body) {
		t.Errorf("--raw: exit %d (%s), printed %d bytes, want the %d the upstream sent", code, errs, len(out), len(body))
	}

	code, out, errs = invoke("--raw", "--jq", "[.data[].name]")
	var names []string
	if code != 0 || json.Unmarshal([]byte(out), &names) != nil || len(names) != 200 || names[199] != "n199" {
		t.Errorf("--raw --jq: exit %d (%s), %d names:\n%.300s", code, errs, len(names), out)
	}

	code, out, _ = invoke("--raw", "--jq", ".data[3].name")
	if code != 0 || out != "n3\n" {
		t.Errorf("--raw --jq of a string: exit %d, %q", code, out)
	}

	for _, bad := range []string{"100", "50000", "ten"} {
		if code, _, errs := invoke("--max-bytes", bad); code != exitUsage || !strings.Contains(errs, "--max-bytes") {
			t.Errorf("--max-bytes %s: exit %d, %q", bad, code, errs)
		}
	}
}

// --timeout took whole seconds on run-script and a duration on
// healthcheck: both take a duration now, and a bare number as seconds.
func TestTimeoutFlagTakesADuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"30", "30s", true},
		{"1.5", "1.5s", true},
		{"2m", "2m0s", true},
		{"250ms", "250ms", true},
		{"-1", "", false},
		{"soon", "", false},
	} {
		var v timeoutValue
		err := v.Set(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%q: error %v", tc.in, err)
			continue
		}
		if tc.ok && v.String() != tc.want {
			t.Errorf("%q: got %s, want %s", tc.in, v.String(), tc.want)
		}
	}
	code, _, errs := runCmd(t, "run-script", "--timeout", "soon", "-")
	if code != exitUsage || !strings.Contains(errs, "--timeout") || !strings.Contains(errs, "30s") {
		t.Errorf("run-script --timeout soon: exit %d, %q", code, errs)
	}
}

// run-script answered {runId, status: running} past scripts.answer_within
// and a large result with a responseId, both naming what ended with the
// process: the command waits for the end and prints no responseId.
func TestCLIRunScriptWaitsAndPrintsNoResponseID(t *testing.T) {
	url, _ := listUpstream(t, 1)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("scripts:\n  answer_within: 1ms\nspecs:\n  - location: "+listSpec(t)+"\n    base_url: "+url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	// a loop that outlasts 1ms, then a result far over the budget
	code := `let n = 0; for (let i = 0; i < 200000; i++) { n += i % 7; }
const r = await api.invoke("shop.list", {});
const out = []; for (let i = 0; i < 3000; i++) { out.push({i, n, id: r.body.data[0].id}); }
return out;`
	var stdout, stderr strings.Builder
	exit := run(t.Context(), []string{"run-script", "--config", cfg, "--log-level", "error", "--timeout", "60", "-"}, strings.NewReader(code), &stdout, &stderr)
	if exit != 0 {
		t.Fatalf("exit %d: %s", exit, stderr.String())
	}
	out := stdout.String()
	var res struct {
		Status string         `json:"status"`
		Shaped map[string]any `json:"shaped"`
		Hint   string         `json:"hint"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v:\n%.500s", err, out)
	}
	if res.Status != "done" || res.Shaped == nil || strings.Contains(out, "responseId") || strings.Contains(out, "read_response") || !strings.Contains(res.Hint, "--max-bytes") {
		t.Errorf("status %q, hint %q:\n%.800s", res.Status, res.Hint, out)
	}
}

// A spec with no server answered upstream_unreachable with "set base_url
// in the config" when there was no config, and said nothing of the unset
// ${K8S_BASE_URL} the config's base_url named: the error names the one
// place to fix, is not retryable and says no "Try again later".
func TestCLIConfigErrorNamesThePlaceToFix(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "k8s.json")
	if err := os.WriteFile(spec, []byte(`{"openapi":"3.0.3","info":{"title":"k","version":"1"},"paths":{"/pods":{"get":{"operationId":"list",
	  "responses":{"200":{"description":"ok"}}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("specs:\n  - name: k8s\n    location: "+spec+"\n    base_url: ${K8S_BASE_URL}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	os.Unsetenv("K8S_BASE_URL")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no config", []string{"--spec", spec, "k8s.list"}, []string{"--base-url"}},
		{"unset variable", []string{"--config", cfg, "k8s.list"}, []string{"${K8S_BASE_URL} is unset", "specs[k8s].base_url", "export K8S_BASE_URL="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCmd(t, append([]string{"invoke", "--log-level", "error"}, tc.args...)...)
			if code != exitOther || strings.Contains(errs, "Try again later") || strings.Contains(errs, "in the config") && tc.name == "no config" {
				t.Errorf("exit %d:\n%s", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("lacks %q:\n%s", w, errs)
				}
			}
			code, out, _ := runCmd(t, append([]string{"invoke", "--log-level", "error", "--json"}, tc.args...)...)
			var env struct {
				Error struct{ Code, Hint string } `json:"error"`
			}
			if code != exitOther || json.Unmarshal([]byte(out), &env) != nil || env.Error.Code != "upstream_unreachable" || !strings.Contains(env.Error.Hint, tc.want[len(tc.want)-1]) {
				t.Errorf("--json: exit %d: %s", code, out)
			}
		})
	}
}
