package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// commandDoc is what a command's help says besides its flags.
type commandDoc struct {
	summary string
	short   string   // for the command list
	usage   string   // after "specgate CMD"
	args    []string // "NAME\twhat it is"
	example string   // one command per line
}

// commandOrder is the order of the commands in the help.
var commandOrder = []string{"serve", "search", "inspect", "invoke", "run-script", "check", "init", "config", "mock", "healthcheck", "completion", "version"}

var commandDocs = map[string]commandDoc{
	"serve": {
		short:   "serve MCP over stdio, or streamable HTTP with --http",
		summary: "Serve the specs' endpoints to LLM agents as MCP tools, over stdio (default) or streamable HTTP.",
		usage:   "[flags]",
		example: "specgate serve --spec testdata/petstore-v3.yaml\nspecgate serve --http 127.0.0.1:8080 --config specs/demo.yaml",
	},
	"search": {
		short:   "search the endpoints for a task",
		summary: "Search the endpoints for a task, best first, as the search tool answers.",
		usage:   "[flags] QUERY...",
		args:    []string{"QUERY\twhat the endpoint should do, in words (several arguments are joined)"},
		example: `specgate search --spec testdata/petstore-v3.yaml "find pet by id"`,
	},
	"inspect": {
		short:   "show one endpoint's contract",
		summary: "Show one endpoint's contract: parameters, body, responses, security and rate limit.",
		usage:   "[flags] ENDPOINT_ID",
		args:    []string{"ENDPOINT_ID\tan id from search: <spec>.<operationId>"},
		example: "specgate inspect --spec testdata/petstore-v3.yaml petstore-v3.getPetById",
	},
	"invoke": {
		short:   "call one endpoint",
		summary: "Call one endpoint, governed as the invoke tool is, and print its answer.",
		usage:   "[flags] ENDPOINT_ID",
		args:    []string{"ENDPOINT_ID\tan id from search: <spec>.<operationId>"},
		example: `specgate invoke --spec testdata/petstore-v3.yaml petstore-v3.getPetById --params '{"petId": 1}'`,
	},
	"run-script": {
		short:   "run a run_script program",
		summary: "Run a run_script program (JavaScript calling the endpoints) and print what it returns.",
		usage:   "[flags] FILE.js",
		args:    []string{"FILE.js\tthe program; - reads it from stdin"},
		example: `echo 'return await api.invoke("petstore-v3.getPetById", {parameters: {petId: 1}})' | specgate run-script --spec testdata/petstore-v3.yaml -`,
	},
	"check": {
		short:   "load the config and specs, report problems",
		summary: "Load the config and every spec and report problems; exit 1 on a failure.",
		usage:   "[flags]",
		example: "specgate check --config specs/demo.yaml",
	},
	"init": {
		short:   "write a commented config for a spec",
		summary: "Write a commented config for a spec, which `specgate check` loads as written.",
		usage:   "[flags] SPEC|URL",
		args:    []string{"SPEC|URL\tthe spec file or http(s) URL"},
		example: "specgate init testdata/petstore-v3.yaml --out specgate.yaml",
	},
	"config": {
		short:   "print the config file's JSON Schema",
		summary: "Print the JSON Schema of the config file (for editors: completion and checks).",
		usage:   "schema",
		args:    []string{"schema\tthe only subcommand"},
		example: "specgate config schema > specgate.schema.json",
	},
	"mock": {
		short:   "serve a mock of a spec's upstream",
		summary: "Serve a mock of the spec's upstream, answering from its examples and schemas, with an optional quota.",
		usage:   "[flags] --spec FILE|URL",
		example: "specgate mock --spec testdata/petstore-v3.yaml --http 127.0.0.1:8081 --requests-per-window 5 --window 10s",
	},
	"healthcheck": {
		short:   "exit 0 when a specgate answers 2xx",
		summary: "GET a specgate's /readyz (or URL) and exit 0 on a 2xx: the container image's health check.",
		usage:   "[flags] [URL]",
		args:    []string{"URL\tdefault http://127.0.0.1:8080/readyz"},
		example: "specgate healthcheck http://127.0.0.1:8080/healthz",
	},
	"completion": {
		short:   "print a shell completion script",
		summary: "Print a completion script for bash, zsh or fish: commands, their flags and the values some take.",
		usage:   "SHELL",
		args:    []string{"SHELL\tbash, zsh or fish"},
		example: "source <(specgate completion bash)     # in ~/.bashrc\nsource <(specgate completion zsh)      # in ~/.zshrc\nspecgate completion fish > ~/.config/fish/completions/specgate.fish",
	},
	"version": {
		short:   "print specgate's version",
		summary: "Print specgate's version.",
		usage:   "",
		example: "specgate version",
	},
}

// help prints the command's help: summary, usage, arguments, its flags in
// --double-dash form, and an example.
func (c *common) help(w io.Writer) {
	writeHelp(w, c.name, c)
}

func writeHelp(w io.Writer, name string, c *common) {
	d := commandDocs[name]
	fmt.Fprintf(w, "%s\n\nUsage:\n  specgate %s", d.summary, name)
	if d.usage != "" {
		fmt.Fprintf(w, " %s", d.usage)
	}
	fmt.Fprintln(w)
	if len(d.args) > 0 {
		fmt.Fprintf(w, "\nArguments:\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, a := range d.args {
			fmt.Fprintf(tw, "  %s\n", a)
		}
		tw.Flush()
	}
	if c != nil {
		if lines := c.flagLines(); len(lines) > 0 {
			fmt.Fprintf(w, "\nFlags:\n")
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			for _, l := range lines {
				fmt.Fprintf(tw, "  %s\n", l)
			}
			tw.Flush()
		}
	}
	if d.example != "" {
		fmt.Fprintf(w, "\nExample:\n")
		for _, l := range strings.Split(d.example, "\n") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}

// flagLines are the command's flags, in the order registered (the rest
// sorted), each "--name VALUE\tusage (default D)".
func (c *common) flagLines() []string {
	var names []string
	names = append(names, c.order...)
	var other []string
	c.fs.VisitAll(func(f *flag.Flag) {
		if !slices.Contains(names, f.Name) {
			other = append(other, f.Name)
		}
	})
	names = append(names, other...)
	var lines []string
	for _, n := range names {
		f := c.fs.Lookup(n)
		if f == nil || c.hidden[n] {
			continue
		}
		meta, usage := flag.UnquoteUsage(f)
		head := "--" + f.Name
		switch {
		case isBool(f) && meta != "":
			// --http alone, or with its ADDR.
			head += " [" + meta + "]"
		case isBool(f):
		case meta == "value" || meta == "":
			head += " VALUE"
		default:
			head += " " + meta
		}
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && !strings.Contains(usage, "(default") {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		lines = append(lines, head+"\t"+usage)
	}
	return lines
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// usage is the top-level help.
func usage(w io.Writer) {
	fmt.Fprintf(w, "specgate: MCP tools for any OpenAPI-described HTTP API, with rate governance.\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, n := range commandOrder {
		d := commandDocs[n]
		fmt.Fprintf(tw, "  specgate %s %s\t%s\n", n, d.usage, d.short)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun 'specgate help COMMAND' (or 'specgate COMMAND --help') for its arguments, flags and an example.\n")
	fmt.Fprintf(w, "Flags are written --flag VALUE or --flag=VALUE; a boolean flag alone is on, --flag=false off.\n")
	fmt.Fprintf(w, "\nExit codes:\n")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, l := range []string{
		"0	done",
		"1	any other failure: config, spec, script_error, internal",
		"2	usage: flags and arguments",
		"3	refused by a limit (rate_limit, queue_full, queue_timeout, upstream_rate_limit): waiting works",
		"4	the upstream failed (http_error, upstream_unreachable, timeout, auth_error)",
		"5	the call was not sent (validation_failed, not_found, not_approved)",
	} {
		fmt.Fprintf(tw, "  %s\n", l)
	}
	tw.Flush()
}
