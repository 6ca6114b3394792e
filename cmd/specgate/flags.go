package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/specgate/specgate/internal/closest"
	"github.com/specgate/specgate/pkg/config"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// httpFlag is --http: alone it serves on the config's http.listen, with a
// value on that address; --http=false undoes it.
type httpFlag struct {
	on   bool
	addr string
}

func (h *httpFlag) String() string {
	if !h.on {
		return ""
	}
	return h.addr
}

func (h *httpFlag) Set(v string) error {
	switch v {
	case "true":
		h.on, h.addr = true, ""
	case "false":
		h.on, h.addr = false, ""
	default:
		h.on, h.addr = true, v
	}
	return nil
}

// takeAddr handles "--http ADDR": the flag stands alone as a boolean, so
// the address arrives as an argument. It returns the other arguments.
func (h *httpFlag) takeAddr(rest []string) []string {
	if h.on && h.addr == "" && len(rest) == 1 && strings.Contains(rest[0], ":") {
		h.addr = rest[0]
		return nil
	}
	return rest
}

// portOnly says what --http expects when it was given a bare port
// (--http 8080, --http=8080): net.Listen would take "8080" as a host, and
// the old answer, "unexpected arguments: 8080", did not say so. "" when
// the flag is fine.
func (h *httpFlag) portOnly(rest []string) string {
	port := h.addr
	if h.on && h.addr == "" && len(rest) == 1 {
		port = rest[0]
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return ""
	}
	return fmt.Sprintf("--http takes an address, HOST:PORT: write --http 127.0.0.1:%s (this machine only) or --http :%s (every interface)", port, port)
}

// IsBoolFlag lets --http stand alone.
func (h *httpFlag) IsBoolFlag() bool { return true }

// The flag values below answer a malformed value with the fix, as the
// config's errors do.

type durationValue time.Duration

func (d *durationValue) String() string {
	if d == nil || *d == 0 {
		return "0"
	}
	return time.Duration(*d).String()
}

func (d *durationValue) Set(s string) error {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f == 0 {
			*d = 0
			return nil
		}
		return fmt.Errorf("%s is a bare number: write a duration with a unit, such as %ss or %sms", s, s, s)
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a duration: write it like 10s, 250ms or 1m", s)
	}
	*d = durationValue(v)
	return nil
}

// timeoutValue is a --timeout: a duration (30s, 2m), or a bare number of
// seconds, as the flag took once.
type timeoutValue time.Duration

func (d *timeoutValue) String() string { return (*durationValue)(d).String() }

func (d *timeoutValue) Set(s string) error {
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		if f < 0 || f > float64(math.MaxInt64/int64(time.Second)) {
			return fmt.Errorf("%s is out of range: write a duration such as 30s or 2m", s)
		}
		*d = timeoutValue(f * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration: write it like 30s or 2m (a bare number counts seconds)", s)
	}
	*d = timeoutValue(v)
	return nil
}

type boolValue bool

func (b *boolValue) String() string   { return strconv.FormatBool(b != nil && bool(*b)) }
func (b *boolValue) IsBoolFlag() bool { return true }
func (b *boolValue) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q is not true or false: give the flag alone to turn it on, or =false to turn it off", s)
	}
	*b = boolValue(v)
	return nil
}

// intValue is a whole number; unit names what it counts, for the error.
type intValue struct {
	n    *int
	unit string
}

func (i intValue) String() string {
	if i.n == nil {
		return "0"
	}
	return strconv.Itoa(*i.n)
}

func (i intValue) Set(s string) error {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err == nil {
		*i.n = v
		return nil
	}
	return fmt.Errorf("%q is not a whole number of %s: write it like 10", s, i.unit)
}

// choiceValue is one of a few words.
type choiceValue struct {
	v     *string
	what  string
	words []string
}

func (c choiceValue) String() string {
	if c.v == nil {
		return ""
	}
	return *c.v
}

func (c choiceValue) Set(s string) error {
	w := strings.ToLower(strings.TrimSpace(s))
	if !slices.Contains(c.words, w) {
		return fmt.Errorf("%q is not a %s: write %s or %s", s, c.what,
			strings.Join(c.words[:len(c.words)-1], ", "), c.words[len(c.words)-1])
	}
	*c.v = w
	return nil
}

// common holds a command's flags; the groups a command takes are added by
// specFlags, governFlags and logFlags.
type common struct {
	// servesPage says serve serves the governance page (--http or --ui),
	// so approvals may wait there.
	servesPage bool
	fs         *flag.FlagSet
	name       string
	configPath string
	specs      stringList
	baseURL    string
	specID     string
	interval   time.Duration
	disable    bool
	noCache    bool
	readOnly   bool
	logLevel   string
	logFormat  string
	stdout     io.Writer
	stderr     io.Writer
	// json prints results and errors as JSON on stdout (--json).
	json        bool
	explicitSet map[string]bool
	// adjust, if set, changes the loaded config before it is validated.
	adjust func(*config.Config)
	// noServer, set by inProcess, reports whether an endpoint's spec has
	// no base URL a call can go to (invoke.BaseURL's rule).
	noServer func(endpointID string) bool
	// keepAnswers makes start keep the upstream answers readable in
	// answers, for a command that prints them whole (invoke --raw).
	keepAnswers bool
	answers     *cliAnswers
	// cfg is the config config returned, for the words of an error.
	cfg *config.Config
	// order is the flags in the order registered, for the help; hidden
	// ones are accepted but not shown.
	order  []string
	hidden map[string]bool
}

// hide registers, with add, flags a command accepts only so that command
// lines that gave them before still parse: they do nothing there, and its
// help does not show them.
func (c *common) hide(add func()) {
	n := len(c.order)
	add()
	if c.hidden == nil {
		c.hidden = map[string]bool{}
	}
	for _, name := range c.order[n:] {
		c.hidden[name] = true
	}
}

// newFlags makes a command's flag set with no flags yet.
func newFlags(name string, stdout, stderr io.Writer) *common {
	c := &common{fs: flag.NewFlagSet("specgate "+name, flag.ContinueOnError), name: name, stdout: stdout, stderr: stderr}
	// Parse errors are worded by parse; --help is printed by it.
	c.fs.SetOutput(io.Discard)
	c.fs.Usage = func() {}
	// not in c.order: every command has it, so the help lists it last
	c.fs.BoolVar(&c.json, "json", false, `print results and errors as JSON on stdout; an error is {"error": {"code", "message", "hint", ...}}`)
	return c
}

// wantsJSON reports whether args ask for --json: known before the flags
// parse, so that a flag error is answered in JSON too.
func wantsJSON(args []string) bool {
	on := false
	for _, a := range args {
		switch a {
		case "--":
			return on
		case "--json", "-json", "--json=true", "-json=true":
			on = true
		case "--json=false", "-json=false":
			on = false
		}
	}
	return on
}

// jsonError prints an error object as a tool's error result is written,
// for --json: code is a tool's error code, or usage or failed.
func jsonError(w io.Writer, code, message, hint string) {
	obj := map[string]any{"code": code, "message": message, "retryable": false}
	if hint != "" {
		obj["hint"] = hint
	}
	data, _ := json.Marshal(map[string]any{"error": obj})
	fmt.Fprintf(w, "%s\n", data)
}

// out is where results go: stdout, or stderr for a command given none.
func (c *common) out() io.Writer {
	if c.stdout != nil {
		return c.stdout
	}
	return c.stderr
}

// newCommon is the flag set of a command that loads the specs and governs
// calls (serve, check, invoke, run-script).
func newCommon(name string, stderr io.Writer) *common {
	c := newFlags(name, nil, stderr)
	c.specFlags()
	c.governFlags()
	c.logFlags("info")
	return c
}

// flag helpers register a flag and remember its place in the help. A
// usage names its value in backquotes (`FILE`), as flag.UnquoteUsage
// reads it.
func (c *common) str(p *string, name, def, usage string) {
	c.fs.StringVar(p, name, def, usage)
	c.order = append(c.order, name)
}

func (c *common) value(v flag.Value, name, usage string) {
	c.fs.Var(v, name, usage)
	c.order = append(c.order, name)
}

func (c *common) boolean(p *bool, name string, def bool, usage string) {
	*p = def
	c.value((*boolValue)(p), name, usage)
}

func (c *common) duration(p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	c.value((*durationValue)(p), name, usage)
}

// timeout registers a --timeout: a duration, or bare seconds.
func (c *common) timeout(p *time.Duration, def time.Duration, usage string) {
	*p = def
	c.value((*timeoutValue)(p), "timeout", usage)
}

func (c *common) integer(p *int, name string, def int, unit, usage string) {
	*p = def
	c.value(intValue{n: p, unit: unit}, name, usage)
}

// specFlags are the flags that say which specs to load.
func (c *common) specFlags() {
	c.str(&c.configPath, "config", "", "YAML config `FILE` (see config.example.yaml)")
	c.value(&c.specs, "spec", "a spec `FILE|URL` to serve (repeatable; adds to the config's)")
	c.str(&c.baseURL, "base-url", "", "base `URL` for every --spec given (overrides their servers)")
	c.str(&c.specID, "name", "", "the `NAME` endpoint ids of the one --spec start with (default: from its file name)")
	c.boolean(&c.readOnly, "read-only", false, "serve only GET, HEAD and OPTIONS endpoints (the config's read_only)")
	c.boolean(&c.noCache, "no-cache", false, "do not read or write the catalog cache")
}

// governFlags are the flags of the rate governance.
func (c *common) governFlags() {
	c.duration(&c.interval, "rate-limit-interval", 10*time.Second, "per-endpoint cooldown `DURATION` (10s, 1m; 0 for none)")
	c.boolean(&c.disable, "disable-ratelimiter", false, "turn the per-endpoint cooldown off (budgets still apply)")
}

// logFlags are the logging flags; one-shot commands log warnings only
// unless told otherwise, so their answer comes first.
func (c *common) logFlags(level string) {
	c.logLevel = level
	c.value(choiceValue{v: &c.logLevel, what: "log level", words: []string{"debug", "info", "warn", "error"}},
		"log-level", "log `LEVEL`: debug, info, warn, error")
	c.logFormat = "text"
	c.value(choiceValue{v: &c.logFormat, what: "log format", words: []string{"text", "json"}},
		"log-format", "log lines as `FORMAT`: text (key=value) or json (one object a line)")
}

// parse parses flags anywhere among the arguments and returns the others.
// --help prints the command's help on stdout; a malformed flag is named
// with its fix on stderr (exit 2).
func (c *common) parse(args []string) ([]string, error) {
	var rest []string
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				out := c.stdout
				if out == nil {
					out = c.stderr
				}
				c.help(out)
				return nil, exitError{code: 0}
			}
			if wantsJSON(args) {
				jsonError(c.out(), "usage", c.flagError(err), "Run 'specgate help "+c.name+"' for its flags.")
				return nil, exitError{code: exitUsage}
			}
			if jsonLogsRequested(args) {
				logError(c.stderr, "specgate "+c.name+": "+c.flagError(err), "hint", "Run 'specgate help "+c.name+"' for its flags.")
				return nil, exitError{code: exitUsage}
			}
			fmt.Fprintf(c.stderr, "specgate %s: %s\nRun 'specgate help %s' for its flags.\n", c.name, c.flagError(err), c.name)
			return nil, exitError{code: exitUsage}
		}
		args = c.fs.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			rest = append(rest, args[1:]...)
			break
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
	c.explicitSet = map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { c.explicitSet[f.Name] = true })
	return rest, nil
}

var (
	invalidValueRE = regexp.MustCompile(`^invalid (?:boolean )?value ".*" for (?:flag )?-([A-Za-z0-9_-]+): (.*)$`)
	undefinedRE    = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	needsArgRE     = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// flagError words a flag package error with --double-dash names and, for
// an unknown flag, the nearest one the command has.
func (c *common) flagError(err error) string {
	msg := err.Error()
	if m := invalidValueRE.FindStringSubmatch(msg); m != nil {
		return "--" + m[1] + ": " + m[2]
	}
	if m := needsArgRE.FindStringSubmatch(msg); m != nil {
		return "--" + m[1] + " needs a value"
	}
	if m := undefinedRE.FindStringSubmatch(msg); m != nil {
		out := fmt.Sprintf("unknown flag --%s", m[1])
		if near := c.nearestFlag(m[1]); near != "" {
			out += fmt.Sprintf(" (did you mean --%s?)", near)
		}
		return out
	}
	return msg
}

func (c *common) nearestFlag(name string) string {
	var names []string
	c.fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return closest.Name(name, names)
}

func (c *common) logger() *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(c.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(c.stderr, opts))
}

// config loads the config file (or the defaults), applies the flags on top
// and validates the result.
func (c *common) config() (*config.Config, error) {
	var cfg *config.Config
	if c.configPath != "" {
		var err error
		if cfg, err = config.Load(c.configPath); err != nil {
			return nil, err
		}
	} else {
		cfg = config.Default()
	}
	// SPECGATE_* variables override the file's top-level keys; flags
	// override both
	if _, err := cfg.ApplyEnv(os.LookupEnv); err != nil {
		return nil, err
	}
	if c.specID != "" && len(c.specs) != 1 {
		return nil, fmt.Errorf("--name names the one --spec given, and there are %d", len(c.specs))
	}
	for _, loc := range c.specs {
		cfg.Specs = append(cfg.Specs, config.Spec{Name: c.specID, Location: loc, BaseURL: c.baseURL})
	}
	if c.baseURL != "" && len(c.specs) == 0 {
		return nil, errors.New("--base-url applies to the --spec flags given, and there are none")
	}
	if c.explicitSet["rate-limit-interval"] {
		cfg.RateLimitInterval = config.Duration(c.interval)
	}
	if c.explicitSet["disable-ratelimiter"] {
		cfg.DisableRateLimiter = c.disable
	}
	if len(cfg.Specs) == 0 {
		return nil, errors.New("no spec to serve: give --spec FILE or a --config with specs")
	}
	if c.explicitSet["read-only"] {
		cfg.ReadOnly = c.readOnly
	}
	if c.adjust != nil {
		c.adjust(cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := curationFilters(cfg); err != nil {
		return nil, err
	}
	c.cfg = cfg
	return cfg, nil
}

func (c *common) usageError(format string, args ...any) error {
	if c.json {
		jsonError(c.out(), "usage", fmt.Sprintf(format, args...), "Run 'specgate help "+c.name+"' for its arguments.")
		return exitError{code: exitUsage}
	}
	if c.logFormat == "json" {
		logError(c.stderr, "specgate "+c.name+": "+fmt.Sprintf(format, args...), "hint", "Run 'specgate help "+c.name+"' for its arguments.")
		return exitError{code: exitUsage}
	}
	fmt.Fprintf(c.stderr, "specgate %s: %s\n", c.name, fmt.Sprintf(format, args...))
	if d, ok := commandDocs[c.name]; ok {
		fmt.Fprintf(c.stderr, "Usage: specgate %s %s\nRun 'specgate help %s' for more.\n", c.name, d.usage, c.name)
	}
	return exitError{code: 2}
}
