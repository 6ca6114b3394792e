package main

import (
	"io"

	"github.com/specgate/specgate/pkg/config"
)

// cmdConfig is `specgate config schema`: the config file's JSON Schema on
// stdout, for editors (yaml-language-server) and CI checks.
func cmdConfig(args []string, stdout, stderr io.Writer) error {
	c := newFlags("config", stdout, stderr)
	rest, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(rest) != 1 || rest[0] != "schema" {
		return c.usageError("the subcommand is schema")
	}
	data, err := config.SchemaJSON()
	if err != nil {
		return err
	}
	_, err = stdout.Write(data)
	return err
}
