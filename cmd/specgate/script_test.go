package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary be its own script worker, as the specgate
// binary is: serve starts os.Executable() script-worker.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == scriptWorkerCommand {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestRunScriptFromTheShell: specgate run-script FILE.js runs the program
// in a worker against the demo petstore mock and prints the answer.
func TestRunScriptFromTheShell(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.js")
	code := `const found = await api.search("find pets by status", {limit: 3});
const r = await api.invoke("petstore.findPetsByStatus", {parameters: {status: "available"}});
console.log("status", r.statusCode);
return {first: found.endpoints[0].id, status: r.statusCode, isArray: Array.isArray(r.body)};`
	if err := os.WriteFile(file, []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.yaml")
	spec, _ := filepath.Abs("../../specs/petstore.yaml")
	if _, err := os.Stat(spec); err != nil {
		t.Skip("demo spec absent")
	}
	if err := os.WriteFile(cfg, []byte("specs:\n  - name: petstore\n    location: "+spec+"\n    mock: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"run-script", "--config", cfg, "--no-cache", file}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		Result struct {
			First   string `json:"first"`
			Status  int    `json:"status"`
			IsArray bool   `json:"isArray"`
		} `json:"result"`
		Calls struct {
			Total int `json:"total"`
		} `json:"calls"`
		Logs []string `json:"logs"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if got.Result.Status != 200 || !got.Result.IsArray || got.Result.First == "" || got.Calls.Total != 2 {
		t.Errorf("answer %s", out.String())
	}
	if len(got.Logs) != 1 || got.Logs[0] != "status 200" {
		t.Errorf("logs %q", got.Logs)
	}
}

// `specgate help run-script`'s own example failed with "invoke is not
// defined" (issue 33 item 7): it runs, against a loopback petstore.
func TestHelpRunScriptExampleRuns(t *testing.T) {
	ex := commandDocs["run-script"].example
	start, end := strings.Index(ex, "'"), strings.LastIndex(ex, "'")
	if start < 0 || end <= start {
		t.Fatalf("no script in the example %q", ex)
	}
	code := ex[start+1 : end]
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":1,"name":"doggie","photoUrls":[]}`))
	}))
	defer up.Close()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var stdout, stderr bytes.Buffer
	args := []string{"run-script", "--spec", "../../testdata/petstore-v3.yaml", "--base-url", up.URL + "/api/v3", "--log-level", "error", "-"}
	if c := run(t.Context(), args, strings.NewReader(code), &stdout, &stderr); c != 0 {
		t.Fatalf("exit %d: %s%s", c, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "doggie") {
		t.Errorf("answer:\n%s", stdout.String())
	}
}
