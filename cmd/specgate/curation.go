package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/spec"
)

// curationFilters compiles each spec's read_only, include and exclude into a
// filter, by config index. Every pattern that does not parse is reported at
// once, naming its key, before any spec is loaded.
func curationFilters(cfg *config.Config) ([]*spec.Filter, error) {
	out := make([]*spec.Filter, len(cfg.Specs))
	var errs []error
	for i := range cfg.Specs {
		sc := &cfg.Specs[i]
		f, err := spec.NewFilter(spec.Curation{
			Key:      curationKey(i, sc),
			ReadOnly: cfg.ForSpec(sc).ReadOnly,
			Include:  sc.Include,
			Exclude:  sc.Exclude,
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[i] = f
	}
	if len(errs) > 0 {
		return nil, &config.Error{File: cfg.Source, Problems: strings.Split(errors.Join(errs...).Error(), "\n")}
	}
	return out, nil
}

// curationKey names a spec's config entry the way config.Validate does.
func curationKey(i int, sc *config.Spec) string {
	if sc.Name != "" {
		return "specs[" + sc.Name + "]"
	}
	return fmt.Sprintf("specs[%d]", i)
}

// allReadOnly reports whether every spec is served read-only, for the
// server's instructions.
func allReadOnly(cfg *config.Config) bool {
	for i := range cfg.Specs {
		if !cfg.ForSpec(&cfg.Specs[i]).ReadOnly {
			return false
		}
	}
	return len(cfg.Specs) > 0
}

// printCuration writes what curation did to one spec, for `specgate check`:
// one line per rule, then its warnings.
func printCuration(w io.Writer, rep *spec.CurationReport) {
	if len(rep.Rules) == 0 {
		return
	}
	fmt.Fprintf(w, "     curation: %d of %d endpoints served, %d excluded\n", rep.Kept, rep.Total, rep.Excluded())
	for _, r := range rep.Rules {
		switch r.Kind {
		case "read_only":
			fmt.Fprintf(w, "       %s removed %d\n", r.Key, r.Removed)
		case "include":
			fmt.Fprintf(w, "       %s %q kept %d\n", r.Key, r.Pattern, r.Kept)
		default:
			fmt.Fprintf(w, "       %s %q removed %d\n", r.Key, r.Pattern, r.Removed)
		}
	}
	for _, warn := range rep.Warnings {
		fmt.Fprintf(w, "     warning: %s\n", warn)
	}
}

// slowLoadAfter is how long a spec may load before the log says so.
const slowLoadAfter = time.Second

// watchSlow calls report once if the returned stop is not called within
// after; a large spec (GitHub's is 13 MB) then does not look like a hang.
// Once stop has returned, report is not running and never will.
func watchSlow(after time.Duration, report func(elapsed time.Duration)) (stop func()) {
	var mu sync.Mutex
	stopped := false
	t := time.AfterFunc(after, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			report(after)
		}
	})
	return func() {
		t.Stop()
		mu.Lock()
		stopped = true
		mu.Unlock()
	}
}

// stillLoading is the message a slow spec gets before it finishes.
func stillLoading(name, location string, elapsed time.Duration) string {
	return fmt.Sprintf("spec %s (%s) is still loading after %s", name, location, elapsed)
}
