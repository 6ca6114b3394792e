package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/mcpserver"
	"github.com/specgate/specgate/pkg/mock"
	"github.com/specgate/specgate/pkg/spec"
)

// cmdMock is `specgate mock`: one spec's mock upstream over HTTP. It
// writes only to stderr.
func cmdMock(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newFlags("mock", stdout, stderr)
	var location, addr string
	var requests int
	var window, cooldown time.Duration
	c.str(&location, "spec", "", "the spec `FILE|URL` to mock (required)")
	c.str(&addr, "http", "127.0.0.1:8081", "`ADDR` to listen on")
	c.integer(&requests, "requests-per-window", 0, "requests", "admit at most `N` requests in any sliding --window; more get 429")
	c.duration(&window, "window", 0, "the sliding window `DURATION` of --requests-per-window")
	c.duration(&cooldown, "cooldown", 0, "least `DURATION` between two requests to one operation; sooner gets 429")
	c.logFlags("info")
	rest, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return c.usageError("unexpected arguments: %s", strings.Join(rest, " "))
	}
	if location == "" {
		return c.usageError("--spec is required")
	}
	opts, err := mockFlags(c.explicitSet, requests, window, cooldown)
	if err != nil {
		return c.usageError("%v", err)
	}
	opts.Logger = c.logger()

	s, err := spec.Load(ctx, location, spec.Options{})
	if err != nil {
		return err
	}
	m, err := mock.New(s, opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if jsonLogs(opts.Logger) {
		opts.Logger.Info("specgate mock", "spec", s.Name, "operations", len(s.Endpoints), "quota", strings.TrimPrefix(quotaText(opts), ", "),
			"url", "http://"+ln.Addr().String()+m.BasePath())
	} else {
		fmt.Fprintf(stderr, "specgate mock of %s (%d operations%s) at http://%s%s\n",
			s.Name, len(s.Endpoints), quotaText(opts), ln.Addr(), m.BasePath())
	}
	hs := &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err = hs.Shutdown(shutdown)
	<-errc
	return err
}

// mockFlags turns the quota flags into mock options, naming the flag at
// fault; set holds the flags given.
func mockFlags(set map[string]bool, requests int, window, cooldown time.Duration) (mock.Options, error) {
	switch {
	case set["requests-per-window"] && requests <= 0:
		return mock.Options{}, fmt.Errorf("--requests-per-window must be positive (got %d); leave it out for no request quota", requests)
	case requests > 0 && !set["window"]:
		return mock.Options{}, errors.New(`--window is required with --requests-per-window (the sliding window, e.g. "10s")`)
	case set["window"] && !set["requests-per-window"]:
		return mock.Options{}, errors.New("--window needs --requests-per-window (how many requests each window admits)")
	case set["window"] && window <= 0:
		return mock.Options{}, fmt.Errorf("--window must be positive (got %s)", window)
	case set["cooldown"] && cooldown <= 0:
		return mock.Options{}, fmt.Errorf("--cooldown must be positive (got %s); leave it out for no cooldown", cooldown)
	}
	return mock.Options{RequestsPerWindow: requests, Window: window, Cooldown: cooldown}, nil
}

// mockOptions turns a spec's mock: key into the mock's options.
func mockOptions(m config.Mock) mock.Options {
	var o mock.Options
	if m.RequestsPerWindow != nil {
		o.RequestsPerWindow = *m.RequestsPerWindow
	}
	if m.Window != nil {
		o.Window = time.Duration(*m.Window)
	}
	if m.Cooldown != nil {
		o.Cooldown = time.Duration(*m.Cooldown)
	}
	return o
}

func quotaText(o mock.Options) string {
	var parts []string
	if o.RequestsPerWindow > 0 {
		parts = append(parts, fmt.Sprintf("%d requests per %s", o.RequestsPerWindow, o.Window))
	}
	if o.Cooldown > 0 {
		parts = append(parts, fmt.Sprintf("cooldown %s per operation", o.Cooldown))
	}
	if len(parts) == 0 {
		return ", no quota"
	}
	return ", " + strings.Join(parts, ", ")
}

// startMocks starts, on loopback ports, the mock upstream of every spec
// whose config says mock, and returns the config to load the specs with:
// a copy in which those specs point at their mock. The mocks stop when ctx
// ends. A spec that does not load is left as it is: loading it again
// reports the failure as for any spec. real are the upstream keys those
// specs call without their mock: a budget written for the real API (as
// specs/demo.yaml's, for when its mock line is deleted) matches them.
func startMocks(ctx context.Context, cfg *config.Config, log *slog.Logger) (out *config.Config, real []string, err error) {
	if !slices.ContainsFunc(cfg.Specs, func(sc config.Spec) bool { return sc.Mock.On }) {
		return cfg, nil, nil
	}
	copied := *cfg
	out = &copied
	out.Specs = slices.Clone(cfg.Specs)
	for i := range out.Specs {
		sc := &out.Specs[i]
		if !sc.Mock.On {
			continue
		}
		name := specName(*sc)
		if sc.BaseURL != "" {
			log.Warn("base_url is ignored: the spec is served by its mock", "spec", name, "base_url", sc.BaseURL)
		}
		s, err := spec.Load(ctx, sc.Location, spec.Options{
			Name:     name,
			MaxBytes: int64(cfg.MaxSpecBytes),
			Timeout:  time.Duration(cfg.SpecFetchTimeout),
		})
		if err != nil {
			continue
		}
		if base := sc.BaseURL; base != "" || s.BaseURL != "" {
			if base == "" {
				base = s.BaseURL
			}
			real = append(real, sc.UpstreamKey(mcpserver.HostKey(base)))
		}
		opts := mockOptions(sc.Mock)
		opts.Logger = log.With("mock", name)
		m, err := mock.New(s, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("specs[%s].mock: %w", name, err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, fmt.Errorf("specs[%s].mock: %w", name, err)
		}
		hs := &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
		go hs.Serve(ln)
		go func() {
			<-ctx.Done()
			hs.Close()
		}()
		sc.BaseURL = "http://" + ln.Addr().String() + m.BasePath()
		log.Info("mock upstream", "spec", name, "url", sc.BaseURL, "quota", strings.TrimPrefix(quotaText(opts), ", "))
	}
	return out, real, nil
}
