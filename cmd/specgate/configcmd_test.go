package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/specgate/specgate/pkg/config"
)

func TestConfigSchemaCommand(t *testing.T) {
	code, stdout, stderr := runCmd(t, "config", "schema")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	want, err := config.SchemaJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(stdout), want) {
		t.Error("config schema printed another schema than config.SchemaJSON")
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(stdout), &s); err != nil || s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("not a 2020-12 schema (%v): %.200s", err, stdout)
	}
	if code, _, stderr := runCmd(t, "config", "scheme"); code != 2 || !bytes.Contains([]byte(stderr), []byte("the subcommand is schema")) {
		t.Errorf("config scheme: exit %d, stderr %q", code, stderr)
	}
}
