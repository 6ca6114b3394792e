package main

import (
	"bytes"
	"context"
	"encoding/json"
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
