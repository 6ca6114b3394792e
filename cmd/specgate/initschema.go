package main

import (
	"os"
	"path/filepath"

	"github.com/specgate/specgate/pkg/config"
)

// schemaFile is the JSON Schema a config from init names on its first
// line, for yaml-language-server (VS Code's YAML extension and others):
// beside the config, written by init --out, or by
// `specgate config schema > specgate.schema.json`.
const schemaFile = "specgate.schema.json"

// writeSchemaBeside writes the config schema beside the config at path;
// one already there is kept unless force, as init keeps every file.
func writeSchemaBeside(path string, force bool) error {
	dst := filepath.Join(filepath.Dir(path), schemaFile)
	if _, err := os.Stat(dst); err == nil && !force {
		return nil
	}
	data, err := config.SchemaJSON()
	if err != nil {
		return err
	}
	return writeNew(dst, string(data), true)
}
