// Command specgate lets LLM agents call any HTTP API that has an OpenAPI or
// Swagger description, through MCP tools (search, inspect, invoke) with rate
// governance on every call.
//
// Usage:
//
//	specgate serve      [flags]            serve MCP over stdio, or --http ADDR
//	specgate search     [flags] QUERY      search endpoints
//	specgate inspect    [flags] ID         show one endpoint's contract
//	specgate invoke     [flags] ID         call one endpoint
//	specgate run-script [flags] FILE.js    run a run_script program
//	specgate check      [flags]            load the config and specs, report problems
//	specgate init       [flags] SPEC|URL   write a config for a spec
//	specgate config     schema             print the config file's JSON Schema
//	specgate mock       --spec S           serve a mock of the spec's upstream
//	specgate healthcheck [URL]             exit 0 when a specgate answers 2xx
//	specgate completion bash|zsh|fish      print a shell completion script
//	specgate version
//
// Run "specgate help CMD" or "specgate CMD --help" for a command's
// arguments, flags and an example.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/specgate/specgate/internal/closest"
	"github.com/specgate/specgate/pkg/script"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// exitError carries an exit status; its message has been printed.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(ctx, args[1:], stdin, stdout, stderr)
	case "search":
		err = cmdSearch(ctx, args[1:], stdout, stderr)
	case "inspect":
		err = cmdInspect(ctx, args[1:], stdout, stderr)
	case "invoke":
		err = cmdInvoke(ctx, args[1:], stdout, stderr)
	case "check":
		err = cmdCheck(ctx, args[1:], stdout, stderr)
	case "init":
		err = cmdInit(ctx, args[1:], stdout, stderr)
	case "healthcheck":
		err = cmdHealthcheck(ctx, args[1:], stdout, stderr)
	case "config":
		err = cmdConfig(args[1:], stdout, stderr)
	case "mock":
		err = cmdMock(ctx, args[1:], stdout, stderr)
	case "run-script":
		err = cmdRunScript(ctx, args[1:], stdin, stdout, stderr)
	case "completion":
		err = cmdCompletion(ctx, args[1:], stdout, stderr)
	case scriptWorkerCommand:
		// Not in the usage: serve starts it, one process per script.
		return script.WorkerMain(args[1:], stdin, stdout)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionLine())
		return 0
	case "help", "-h", "--help":
		if len(args) > 1 && args[1] != "help" {
			if _, ok := commandDocs[args[1]]; !ok {
				fmt.Fprintf(stderr, "specgate help: unknown command %q%s\n", args[1], nearestCommand(args[1]))
				return 2
			}
			if args[1] == "version" {
				writeHelp(stdout, "version", nil)
				return 0
			}
			return run(ctx, []string{args[1], "--help"}, stdin, stdout, stderr)
		}
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "specgate: unknown command %q%s\n\n", args[0], nearestCommand(args[0]))
		usage(stderr)
		return 2
	}
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if wantsJSON(args[1:]) {
		jsonError(stdout, "failed", err.Error(), "")
		return 1
	}
	if jsonLogsRequested(args[1:]) {
		logError(stderr, "specgate "+args[0]+" failed", "err", err.Error())
		return 1
	}
	fmt.Fprintln(stderr, "specgate:", err)
	return 1
}

// nearestCommand is " (did you mean X?)" for a misspelt command.
func nearestCommand(name string) string {
	if n := closest.Name(name, commandOrder); n != "" {
		return fmt.Sprintf(" (did you mean %s?)", n)
	}
	return ""
}
