package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

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

// IsBoolFlag lets --http stand alone.
func (h *httpFlag) IsBoolFlag() bool { return true }

// common holds the flags every command shares.
type common struct {
	fs          *flag.FlagSet
	configPath  string
	specs       stringList
	baseURL     string
	interval    time.Duration
	disable     bool
	noCache     bool
	readOnly    bool
	logLevel    string
	stderr      io.Writer
	explicitSet map[string]bool
}

func newCommon(name string, stderr io.Writer) *common {
	c := &common{fs: flag.NewFlagSet("specgate "+name, flag.ContinueOnError), stderr: stderr}
	c.fs.SetOutput(stderr)
	c.fs.StringVar(&c.configPath, "config", "", "YAML config file (see config.example.yaml)")
	c.fs.Var(&c.specs, "spec", "a spec file or http(s) URL to serve (repeatable)")
	c.fs.StringVar(&c.baseURL, "base-url", "", "base URL for every --spec given (overrides their servers)")
	c.fs.DurationVar(&c.interval, "rate-limit-interval", 10*time.Second, "per-endpoint cooldown")
	c.fs.BoolVar(&c.disable, "disable-ratelimiter", false, "turn the per-endpoint cooldown off (budgets still apply)")
	c.fs.BoolVar(&c.readOnly, "read-only", false, "serve only GET, HEAD and OPTIONS endpoints (the config's read_only)")
	c.fs.BoolVar(&c.noCache, "no-cache", false, "do not read or write the catalog cache")
	c.fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	return c
}

// parse parses flags anywhere among the arguments and returns the others.
func (c *common) parse(args []string) ([]string, error) {
	var rest []string
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitError{code: 0}
			}
			return nil, exitError{code: 2}
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

func (c *common) logger() *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: lvl}))
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
	for _, loc := range c.specs {
		cfg.Specs = append(cfg.Specs, config.Spec{Location: loc, BaseURL: c.baseURL})
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
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := curationFilters(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

func (c *common) usageError(format string, args ...any) error {
	fmt.Fprintf(c.stderr, format+"\n", args...)
	c.fs.Usage()
	return exitError{code: 2}
}
