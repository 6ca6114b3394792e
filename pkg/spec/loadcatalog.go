package spec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"
)

// ErrNoSpec is the error of a catalog none of whose specs loaded (and none
// of them required).
var ErrNoSpec = errors.New("no spec could be loaded")

// Source is one spec for LoadCatalog to load.
type Source struct {
	// Location is a file path or an http(s) URL.
	Location string
	// Options shape the spec's catalog; Options.Name names it in failures
	// too (if empty, the name the location gives).
	Options Options
	// Filter curates the loaded spec's endpoints. If nil, all are served.
	Filter *Filter
	// Required makes a failure of this spec fail the whole catalog.
	Required bool
	// NoCache loads the spec afresh even when the catalog cache is on: a
	// spec served by a mock gets a new base URL at every start.
	NoCache bool
}

// CatalogOptions configure LoadCatalog. The zero value loads without a
// cache, GOMAXPROCS specs at a time, and logs nothing.
type CatalogOptions struct {
	// CacheDir holds the derived catalogs between starts (see Cache). If
	// empty, every spec is parsed.
	CacheDir string
	// Logger is told of each spec loaded, failed, or slow. If nil, nothing
	// is logged.
	Logger *slog.Logger
	// SlowAfter is how long a spec may load before the log says it is still
	// loading, so a large one does not look like a hang. If zero, a second.
	SlowAfter time.Duration
	// Parallel bounds how many specs load at once. If zero, GOMAXPROCS.
	Parallel int
}

// SourceFailure is a spec that did not load, and why.
type SourceFailure struct {
	Spec   string
	Reason string
}

// Loaded is what LoadCatalog built.
type Loaded struct {
	Catalog *Catalog
	// Failures are the specs left out, in source order.
	Failures []SourceFailure
	// Warnings are each served spec's warnings, cache and curation ones
	// included, as "<spec>: <warning>".
	Warnings []string
}

// sourceName is the name a source's spec is reported by.
func sourceName(src Source) string {
	if src.Options.Name != "" {
		return src.Options.Name
	}
	return NameFromLocation(src.Location)
}

// LoadCatalog loads every source, a few at a time, through the catalog
// cache, curates each, and builds one catalog of those that loaded. A
// source that fails is reported in Failures and left out, unless it is
// Required: then LoadCatalog fails with its reason. When no source loads,
// the error wraps ErrNoSpec with every reason.
func LoadCatalog(ctx context.Context, sources []Source, opts CatalogOptions) (*Loaded, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.SlowAfter <= 0 {
		opts.SlowAfter = time.Second
	}
	par := opts.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	type result struct {
		spec *Spec
		err  error
		warn []string
	}
	results := make([]result, len(sources))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, src := range sources {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			s, warn, err := loadSource(ctx, src, opts.CacheDir, opts.SlowAfter, log)
			results[i] = result{spec: s, warn: warn, err: err}
		})
	}
	wg.Wait()
	out := &Loaded{}
	var specs []*Spec
	for i, r := range results {
		name := sourceName(sources[i])
		if r.err != nil {
			if sources[i].Required {
				return nil, fmt.Errorf("required spec %s: %w", name, r.err)
			}
			out.Failures = append(out.Failures, SourceFailure{Spec: name, Reason: r.err.Error()})
			log.Error("spec not loaded", "spec", name, "reason", r.err.Error())
			continue
		}
		for _, w := range append(r.warn, r.spec.Warnings...) {
			out.Warnings = append(out.Warnings, r.spec.Name+": "+w)
			log.Warn("spec warning", "spec", r.spec.Name, "warning", w)
		}
		specs = append(specs, r.spec)
	}
	if len(specs) == 0 {
		var reasons []string
		for _, f := range out.Failures {
			reasons = append(reasons, f.Reason)
		}
		return nil, fmt.Errorf("%w: %s", ErrNoSpec, strings.Join(reasons, "; "))
	}
	cat, err := NewCatalog(specs...)
	if err != nil {
		return nil, err
	}
	out.Catalog = cat
	return out, nil
}

// loadSource loads and curates one source, returning the warnings of the
// cache and of curation.
func loadSource(ctx context.Context, src Source, cacheDir string, slowAfter time.Duration, log *slog.Logger) (*Spec, []string, error) {
	start := time.Now()
	cache := Cache{Dir: cacheDir}
	if src.NoCache {
		cache = Cache{}
	}
	name := sourceName(src)
	// A log line, so a stop racing the timer at worst logs it late.
	slow := time.AfterFunc(slowAfter, func() {
		log.Info("spec still loading", "spec", name, "location", src.Location, "after", slowAfter)
	})
	res, err := cache.Load(ctx, src.Location, src.Options)
	slow.Stop()
	if err != nil {
		return nil, nil, err
	}
	var warn []string
	if res.CacheError != nil {
		warn = append(warn, res.CacheError.Error())
	}
	excluded := 0
	if src.Filter != nil {
		cur, err := src.Filter.Apply(res.Spec)
		if err != nil {
			return nil, nil, err
		}
		warn = append(warn, cur.Warnings...)
		excluded = cur.Excluded()
	}
	res.Spec.pack()
	log.Info("spec loaded", "spec", res.Spec.Name, "endpoints", len(res.Spec.Endpoints), "excluded", excluded,
		"cached", res.FromCache, "took", time.Since(start).Round(time.Millisecond))
	return res.Spec, warn, nil
}
