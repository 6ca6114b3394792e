// Command specgate lets LLM agents call any HTTP API that has an OpenAPI or
// Swagger description, through MCP tools (search, inspect, invoke) with rate
// governance on every call.
//
// Usage:
//
//	specgate serve   [flags]            serve MCP over stdio, or --http ADDR
//	specgate search  [flags] QUERY      search endpoints
//	specgate inspect [flags] ID         show one endpoint's contract
//	specgate invoke  [flags] ID         call one endpoint
//	specgate check   [flags]            load the config and specs, report problems
//	specgate init    SPEC|URL [--out FILE] [--force]   write a config for a spec
//	specgate mock    --spec S --http ADDR  serve a mock of the spec's upstream
//
// Run "specgate help" or "specgate CMD -h" for the flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

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
	case "mock":
		err = cmdMock(ctx, args[1:], stderr)
	case "run-script":
		err = cmdRunScript(ctx, args[1:], stdin, stdout, stderr)
	case scriptWorkerCommand:
		// Not in the usage: serve starts it, one process per script.
		return script.WorkerMain(args[1:], stdin, stdout)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionLine())
		return 0
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "specgate: unknown command %q\n", args[0])
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
	fmt.Fprintln(stderr, "specgate:", err)
	return 1
}

func usage(w io.Writer) {
	fmt.Fprint(w, `specgate: MCP tools for any OpenAPI-described HTTP API, with rate governance.

Usage:
  specgate serve   [flags]          serve MCP over stdio (default) or --http ADDR
  specgate search  [flags] QUERY    search endpoints
  specgate inspect [flags] ID       show one endpoint's contract
  specgate invoke  [flags] ID       call one endpoint (--params JSON, --body JSON)
  specgate run-script [flags] FILE.js   run a run_script program (- reads stdin) [--timeout SECONDS]
  specgate check   [flags]          load the config and specs and report problems
  specgate init    SPEC|URL [--out FILE] [--force]   write a commented config for a spec
  specgate mock    --spec S --http ADDR [--requests-per-window N --window D] [--cooldown D]
                                    serve a mock of the spec's upstream (answers from its
                                    examples and schemas, with an optional quota)
  specgate version

Common flags:
  --config FILE               YAML config (see config.example.yaml)
  --spec FILE|URL             a spec to serve (repeatable; adds to the config's)
  --base-url URL              base URL for every --spec given
  --rate-limit-interval DUR   per-endpoint cooldown (default 10s)
  --disable-ratelimiter       turn the per-endpoint cooldown off
  --read-only                 serve only GET, HEAD and OPTIONS endpoints
  --no-cache                  do not read or write the catalog cache
`)
}
