package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// cmdCompletion is `specgate completion bash|zsh|fish`: a script that
// completes the commands, each command's flags and the values some take.
// It is made from the commands' own help, so it lists what they accept.
func cmdCompletion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newFlags("completion", stdout, stderr)
	rest, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return c.usageError("one SHELL is needed: bash, zsh or fish")
	}
	cmds := completionCommands(ctx)
	switch rest[0] {
	case "bash":
		writeBash(stdout, cmds)
	case "zsh":
		writeZsh(stdout, cmds)
	case "fish":
		writeFish(stdout, cmds)
	default:
		return c.usageError("%q is not a shell this completes: write bash, zsh or fish", rest[0])
	}
	return nil
}

// completedFlag is one flag of a command, as its help shows it.
type completedFlag struct {
	name  string // without the dashes
	value string // what it takes (FILE, LEVEL, ...); "" for a boolean
	usage string
}

type completedCommand struct {
	name, short string
	flags       []completedFlag
	// words are the fixed words its argument may be ("schema").
	words []string
	files bool // its argument is a file
}

// completionCommands reads each command's flags from its help.
func completionCommands(ctx context.Context) []completedCommand {
	var out []completedCommand
	for _, name := range commandOrder {
		cc := completedCommand{name: name, short: commandDocs[name].short}
		switch name {
		case "config":
			cc.words = []string{"schema"}
		case "completion":
			cc.words = []string{"bash", "zsh", "fish"}
		case "init", "run-script":
			cc.files = true
		}
		if name != "version" {
			var help bytes.Buffer
			run(ctx, []string{name, "--help"}, strings.NewReader(""), &help, io.Discard)
			cc.flags = parseHelpFlags(help.String())
		}
		out = append(out, cc)
	}
	out = append(out, completedCommand{name: "help", short: "show a command's help", words: commandOrder})
	return out
}

// parseHelpFlags reads the Flags: section of a help text.
func parseHelpFlags(help string) []completedFlag {
	_, section, ok := strings.Cut(help, "\nFlags:\n")
	if !ok {
		return nil
	}
	section, _, _ = strings.Cut(section, "\n\n")
	var flags []completedFlag
	for _, line := range strings.Split(section, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "--") {
			continue
		}
		f := completedFlag{name: strings.TrimPrefix(fields[0], "--")}
		rest := fields[1:]
		if len(rest) > 0 && strings.HasPrefix(rest[0], "[") {
			rest = rest[1:] // --http [ADDR]: on alone, so no value to complete
		} else if len(rest) > 0 && rest[0] == strings.ToUpper(rest[0]) && strings.IndexFunc(rest[0], func(r rune) bool { return r >= 'A' && r <= 'Z' }) >= 0 {
			f.value, rest = rest[0], rest[1:]
		}
		f.usage = strings.Join(rest, " ")
		flags = append(flags, f)
	}
	return flags
}

// valueWords are the values of a flag that takes one of a few words.
func valueWords(f completedFlag) []string {
	switch f.name {
	case "log-level":
		return []string{"debug", "info", "warn", "error"}
	case "log-format":
		return []string{"text", "json"}
	}
	return nil
}

// takesFile says whether a flag's value is a file (or a spec URL).
func takesFile(f completedFlag) bool {
	return strings.Contains(f.value, "FILE")
}

func commandNames(cmds []completedCommand) string {
	var names []string
	for _, c := range cmds {
		names = append(names, c.name)
	}
	return strings.Join(names, " ")
}

func writeBash(w io.Writer, cmds []completedCommand) {
	fmt.Fprintf(w, `# bash completion for specgate; load it with: source <(specgate completion bash)
_specgate() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W %q -- "$cur"))
        return
    fi
    local flags="" words="" files=""
    case "${COMP_WORDS[1]}" in
`, commandNames(cmds))
	var fileFlags []string
	for _, c := range cmds {
		var names []string
		for _, f := range c.flags {
			names = append(names, "--"+f.name)
			if takesFile(f) && !slices.Contains(fileFlags, "--"+f.name) {
				fileFlags = append(fileFlags, "--"+f.name)
			}
		}
		fmt.Fprintf(w, "        %s) flags=%q words=%q files=%t ;;\n", c.name, strings.Join(names, " "), strings.Join(c.words, " "), c.files)
	}
	fmt.Fprintf(w, `    esac
    case "$prev" in
        %s)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        --log-level)
            COMPREPLY=($(compgen -W "debug info warn error" -- "$cur"))
            return ;;
        --log-format)
            COMPREPLY=($(compgen -W "text json" -- "$cur"))
            return ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    elif [ -n "$words" ]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    elif [ "$files" = true ]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o filenames -F _specgate specgate
`, strings.Join(fileFlags, "|"))
}

// zshQuote quotes s for a single-quoted zsh word inside an _arguments
// spec, where [ ] and : are special.
func zshQuote(s string) string {
	s = strings.NewReplacer(`'`, `'\''`, `[`, `\[`, `]`, `\]`, `:`, `\:`).Replace(s)
	return s
}

// shortUsage is a flag's usage cut for a completion menu.
func shortUsage(s string) string {
	for _, cut := range []string{";", " (default", " (one "} {
		if i := strings.Index(s, cut); i > 0 {
			s = strings.TrimSpace(s[:i])
		}
	}
	if len(s) > 70 {
		s = s[:67] + "..."
	}
	// a cut inside parentheses drops them
	if strings.Count(s, "(") > strings.Count(s, ")") {
		if i := strings.LastIndex(s, " ("); i > 0 {
			s = s[:i]
		}
	}
	return s
}

func writeZsh(w io.Writer, cmds []completedCommand) {
	fmt.Fprintf(w, "#compdef specgate\n# zsh completion for specgate; load it with: source <(specgate completion zsh)\n_specgate() {\n    local -a commands\n    commands=(\n")
	for _, c := range cmds {
		fmt.Fprintf(w, "        '%s:%s'\n", c.name, zshQuote(c.short))
	}
	fmt.Fprintf(w, "    )\n    if (( CURRENT == 2 )); then\n        _describe 'command' commands\n        return\n    fi\n    local cmd=$words[2]\n    shift words\n    (( CURRENT-- ))\n    case $cmd in\n")
	for _, c := range cmds {
		fmt.Fprintf(w, "        %s)\n            _arguments", c.name)
		for _, f := range c.flags {
			spec := "--" + f.name + "[" + zshQuote(shortUsage(f.usage)) + "]"
			switch {
			case valueWords(f) != nil:
				spec += ":" + strings.ToLower(f.value) + ":(" + strings.Join(valueWords(f), " ") + ")"
			case takesFile(f):
				spec += ":" + strings.ToLower(f.value) + ":_files"
			case f.value != "":
				spec += ":" + zshQuote(strings.ToLower(f.value)) + ": "
			}
			fmt.Fprintf(w, " \\\n                '%s'", spec)
		}
		switch {
		case len(c.words) > 0:
			fmt.Fprintf(w, " \\\n                '1:%s:(%s)'", c.name, strings.Join(c.words, " "))
		case c.files:
			fmt.Fprintf(w, " \\\n                '1:file:_files'")
		}
		fmt.Fprintf(w, "\n            ;;\n")
	}
	fmt.Fprintf(w, "    esac\n}\nif (( $+functions[compdef] )); then\n    compdef _specgate specgate\nfi\n")
}

// fishQuote quotes s for a single-quoted fish word.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func writeFish(w io.Writer, cmds []completedCommand) {
	fmt.Fprintf(w, "# fish completion for specgate; load it with: specgate completion fish | source\ncomplete -c specgate -f\n")
	for _, c := range cmds {
		fmt.Fprintf(w, "complete -c specgate -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.short))
	}
	for _, c := range cmds {
		cond := fishQuote("__fish_seen_subcommand_from " + c.name)
		for _, f := range c.flags {
			line := fmt.Sprintf("complete -c specgate -n %s -l %s", cond, f.name)
			switch {
			case valueWords(f) != nil:
				line += " -x -a " + fishQuote(strings.Join(valueWords(f), " "))
			case takesFile(f):
				line += " -r -F"
			case f.value != "":
				line += " -x"
			}
			fmt.Fprintf(w, "%s -d %s\n", line, fishQuote(shortUsage(f.usage)))
		}
		if len(c.words) > 0 {
			fmt.Fprintf(w, "complete -c specgate -n %s -a %s\n", cond, fishQuote(strings.Join(c.words, " ")))
		}
		if c.files {
			fmt.Fprintf(w, "complete -c specgate -n %s -F\n", cond)
		}
	}
}
