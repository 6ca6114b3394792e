package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/config"
)

// A config from init named no schema, so an editor showed neither
// completion nor a key's documentation: its first line names
// specgate.schema.json, which init --out writes beside it (keeping one
// that is there already).
func TestInitNamesTheSchema(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "petstore.yaml")
	if code, _, errs := runCmd(t, "init", petstorePath(t), "--out", out); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(data), "\n"); first != "# yaml-language-server: $schema=specgate.schema.json" {
		t.Errorf("first line %q", first)
	}
	schema, err := os.ReadFile(filepath.Join(dir, "specgate.schema.json"))
	want, _ := config.SchemaJSON()
	if err != nil || !bytes.Equal(schema, want) {
		t.Errorf("specgate.schema.json beside the config: %v", err)
	}
	if code, stdout, errs := runCmd(t, "check", "--config", out, "--no-cache", "--validate=false"); code != 0 {
		t.Errorf("check of what init wrote: exit %d\n%s%s", code, stdout, errs)
	}

	// a schema file already there is kept
	other := filepath.Join(dir, "other.yaml")
	os.WriteFile(filepath.Join(dir, "specgate.schema.json"), []byte("{}"), 0o600)
	if code, _, errs := runCmd(t, "init", petstorePath(t), "--out", other); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errs)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "specgate.schema.json")); string(got) != "{}" {
		t.Error("init replaced a schema file without --force")
	}

	code, stdout, _ := runCmd(t, "init", petstorePath(t))
	if code != 0 || !strings.HasPrefix(stdout, "# yaml-language-server: $schema=specgate.schema.json\n") {
		t.Errorf("init to stdout: exit %d:\n%.200s", code, stdout)
	}
}
