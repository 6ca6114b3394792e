package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/mcpserver"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/search"
	"github.com/specgate/specgate/pkg/spec"
)

// loaded is the outcome of loading every configured spec.
type loaded struct {
	cat      *spec.Catalog
	ix       *search.Index
	failures []mcpserver.LoadFailure
	warnings []string
}

// specName is the name a config entry gives its spec.
func specName(sc config.Spec) string {
	if sc.Name != "" {
		return sc.Name
	}
	return spec.NameFromLocation(sc.Location)
}

// nameSpecs names each spec of cfg that has no name and a generic file
// name (openapi.json) after its title, as a load would: settings are keyed
// by the name before the specs load. A spec that cannot be read keeps the
// file name; its load reports why.
func nameSpecs(ctx context.Context, cfg *config.Config) {
	for i := range cfg.Specs {
		sc := &cfg.Specs[i]
		if sc.Name != "" || !spec.IsGenericName(spec.NameFromLocation(sc.Location)) {
			continue
		}
		n, err := spec.PeekName(ctx, sc.Location, spec.Options{MaxBytes: int64(cfg.MaxSpecBytes), Timeout: time.Duration(cfg.SpecFetchTimeout)})
		if err == nil && cfg.SpecByName(n) == nil {
			sc.Name = n
		}
	}
}

// errNoSpec is the load failure of a config none of whose specs loaded
// (and none of them required): serve answers every call with it.
var errNoSpec = spec.ErrNoSpec

// catalogSources turns cfg's specs into the catalog's sources, curation
// compiled; a pattern that does not parse fails them all at once.
func catalogSources(cfg *config.Config) ([]spec.Source, error) {
	filters, err := curationFilters(cfg)
	if err != nil {
		return nil, err
	}
	out := make([]spec.Source, len(cfg.Specs))
	for i, sc := range cfg.Specs {
		settings := cfg.ForSpec(&cfg.Specs[i])
		out[i] = spec.Source{
			Location: sc.Location,
			Options: spec.Options{
				Name:              specName(sc),
				BaseURL:           sc.BaseURL,
				AllowExternalRefs: settings.AllowExternalRefs,
				MaxBytes:          int64(cfg.MaxSpecBytes),
				Timeout:           time.Duration(cfg.SpecFetchTimeout),
			},
			Filter:   filters[i],
			Required: sc.Required,
			NoCache:  sc.Mock.On,
		}
	}
	return out, nil
}

// loadSpecs loads every spec of cfg into a catalog and indexes it. A spec
// that fails is reported and skipped unless it is required.
//
// With search.embeddings, the endpoints are embedded too; limiter, when not
// nil, governs the embeddings endpoint like any upstream.
func loadSpecs(ctx context.Context, cfg *config.Config, cacheDir string, log *slog.Logger, limiter *ratelimit.Limiter) (*loaded, error) {
	sources, err := catalogSources(cfg)
	if err != nil {
		return nil, err
	}
	l, err := spec.LoadCatalog(ctx, sources, spec.CatalogOptions{CacheDir: cacheDir, Logger: log, SlowAfter: slowLoadAfter})
	if err != nil {
		return nil, err
	}
	out := &loaded{cat: l.Catalog, warnings: l.Warnings}
	for _, f := range l.Failures {
		out.failures = append(out.failures, mcpserver.LoadFailure{Spec: f.Spec, Reason: f.Reason})
	}
	var sem *search.SemanticOptions
	if e := cfg.Search.Embeddings; e != nil {
		var gate func(context.Context) (func(int, http.Header), error)
		if limiter != nil {
			gate = embeddingsGate(limiter, e.URL)
		}
		o := semanticOptions(e, cacheDir, log, gate)
		sem = &o
	}
	// The index is cached beside the catalogs it is built from.
	if out.ix, err = search.Build(ctx, out.cat, search.Options{CacheDir: cacheDir}, sem); err != nil {
		return nil, err
	}
	if cached, err := out.ix.FromCache(); err != nil {
		log.Warn("search index cache", "reason", err.Error())
	} else if cacheDir != "" {
		log.Info("search index ready", "endpoints", out.ix.Len(), "cached", cached)
	}
	// Loading a large spec leaves garbage behind; give it back now rather
	// than at the next GC cycle.
	debug.FreeOSMemory()
	// So does start-up in the binary's own pages (see releaseImage).
	if n, err := releaseImage(); err != nil {
		log.Debug("the executable's pages stay resident", "err", err)
	} else {
		log.Debug("released the executable's read-only pages", "bytes", n)
	}
	return out, nil
}

// load loads the catalog in the background of a started server: specs
// served by a mock load pointed at it, every endpoint is registered with
// the limiter, and budgets that match nothing are refused. The outcome is
// published to the server and sent on a.loaded.
func (a *app) load(ctx context.Context, cacheDir string, upstream func(*spec.Endpoint) string) {
	cfg, log, limiter, srv := a.cfg, a.log, a.limiter, a.srv
	lcfg, mocked, err := startMocks(ctx, cfg, log)
	var l *loaded
	if err == nil {
		l, err = loadSpecs(ctx, lcfg, cacheDir, log, limiter)
	}
	if err == nil {
		err = registerEndpoints(lcfg, limiter, l.cat, upstream)
		for _, w := range limiter.LoopbackNearMisses() {
			log.Warn(w)
		}
	}
	if err == nil {
		if p := unmatchedBudgets(lcfg, limiter, append(upstreamKeys(lcfg, l.cat.Endpoints(), upstream), mocked...)); len(p) > 0 {
			if len(l.failures) == 0 {
				err = errors.New(strings.Join(p, "; "))
			}
			for _, w := range p {
				// a spec that did not load may be what the budget is for
				log.Warn(w)
			}
		}
	}
	if err != nil {
		if errors.Is(err, errNoSpec) {
			srv.Fail(err)
		} else {
			srv.Fail(fmt.Errorf("%w: %w", errNoSpec, err))
		}
		a.loaded <- err
		return
	}
	a.cat = l.cat
	srv.Publish(l.cat, l.ix, l.failures)
	log.Info("ready", "specs", len(l.cat.Specs()), "endpoints", l.cat.Len())
	a.loaded <- nil
}

// semanticOptions turns search.embeddings into the index's options; gate,
// when not nil, admits each request to the embeddings endpoint.
func semanticOptions(e *config.Embeddings, cacheDir string, log *slog.Logger, gate func(context.Context) (func(int, http.Header), error)) search.SemanticOptions {
	weight := 0.0 // the index's default
	if e.Weight != nil {
		weight = *e.Weight
		if weight == 0 {
			weight = -1 // 0 in the file: vectors kept, ranking lexical
		}
	}
	return search.SemanticOptions{
		Embedder:  &search.HTTPEmbedder{URL: e.URL, Model: e.Model, APIKey: e.APIKey.Reveal(), Gate: gate},
		Model:     e.Model,
		BatchSize: e.BatchSize,
		Timeout:   time.Duration(e.Timeout),
		Weight:    weight,
		CacheDir:  cacheDir,
		Logger:    log,
	}
}

// embeddingsGate admits each request to the embeddings endpoint through
// the limiter, as a call to the upstream of its host: a budget written for
// that host holds, and what its answers say (429s, Retry-After,
// X-RateLimit-*) is learned as for any upstream.
func embeddingsGate(l *ratelimit.Limiter, rawURL string) func(context.Context) (func(int, http.Header), error) {
	key := mcpserver.HostKey(rawURL)
	return func(ctx context.Context) (func(int, http.Header), error) {
		t, err := l.Acquire(ctx, ratelimit.Request{Endpoint: "search.embeddings", Upstream: key})
		if err != nil {
			var le *ratelimit.LimitError
			var qe *ratelimit.QueueError
			switch {
			case errors.As(err, &le):
				return nil, &search.RateLimitedError{Wait: le.RetryAfter}
			case errors.As(err, &qe):
				return nil, &search.RateLimitedError{Wait: qe.RetryAfter}
			}
			return nil, err
		}
		return func(status int, h http.Header) {
			if status != 0 {
				t.Observe(status, h, nil)
			}
			t.Release()
		}, nil
	}
}

// upstreamKey returns the upstream an endpoint's calls count against: the
// group its spec joins, else the host:port of its base URL.
func upstreamKeyFunc(cfg *config.Config) func(*spec.Endpoint) string {
	groups := map[string]string{}
	for _, sc := range cfg.Specs {
		if sc.Upstream != "" {
			groups[specName(sc)] = sc.Upstream
		}
	}
	return func(e *spec.Endpoint) string {
		if g, ok := groups[e.Spec]; ok {
			return g
		}
		return mcpserver.HostKey(e.BaseURL)
	}
}

// newLimiter builds the limiter with the configured budgets; endpoints are
// registered once the catalog is loaded.
func newLimiter(cfg *config.Config, store ratelimit.Store) (*ratelimit.Limiter, error) {
	if _, err := classMatchers(cfg); err != nil {
		return nil, err
	}
	var budgets []ratelimit.Budget
	for _, u := range cfg.Upstreams {
		b := ratelimit.Budget{
			Match:         u.Match,
			Requests:      u.RequestsPerWindow,
			Window:        time.Duration(u.Window),
			WindowPad:     time.Duration(u.WindowPad),
			Tokens:        int64(u.TokensPerWindow),
			MinInterval:   time.Duration(u.MinInterval),
			MaxConcurrent: u.MaxConcurrent.Limit,
			Adaptive:      u.MaxConcurrent.Auto,
			MinConcurrent: u.MaxConcurrent.Min,
			QueueDepth:    u.QueueDepth,
			QueueTimeout:  time.Duration(u.QueueTimeout),
			Weights:       u.Weights,
			Shadow:        !u.Enforced(),
			// a 304 given back only where the upstream says it does not count them
			FreeNotModified: u.CountNotModified != nil && !*u.CountNotModified,
			PerPrincipal:    u.PerPrincipal.RequestsPerWindow,
		}
		b.OnLimit = onLimit(u.OnLimit)
		budgets = append(budgets, b)
		for _, c := range u.Classes {
			cb := ratelimit.Budget{
				Match:         classBudget(u.Match, c.Match),
				Requests:      c.RequestsPerWindow,
				Window:        time.Duration(c.Window),
				WindowPad:     b.WindowPad,
				MinInterval:   time.Duration(c.MinInterval),
				MaxConcurrent: c.MaxConcurrent.Limit,
				Adaptive:      c.MaxConcurrent.Auto,
				MinConcurrent: c.MaxConcurrent.Min,
				OnLimit:       b.OnLimit,
				QueueDepth:    b.QueueDepth,
				QueueTimeout:  b.QueueTimeout,
				Weights:       b.Weights,
				Shadow:        b.Shadow,
			}
			if c.OnLimit != "" {
				cb.OnLimit = onLimit(c.OnLimit)
			}
			budgets = append(budgets, cb)
		}
	}
	return ratelimit.New(ratelimit.Options{Budgets: budgets, Store: store})
}

func onLimit(o config.OnLimit) ratelimit.OnLimit {
	if o == config.OnLimitReject {
		return ratelimit.Reject
	}
	return ratelimit.Wait
}

// classBudget names the budget of an upstream's class, as refusals and
// rate_limit_status show it: "api.github.com POST /**".
func classBudget(upstream, match string) string { return upstream + " " + strings.TrimSpace(match) }

// classMatchers compiles every upstream's class patterns, by upstream match;
// a pattern that does not parse is reported with its key.
func classMatchers(cfg *config.Config) (map[string][]classMatcher, error) {
	out := map[string][]classMatcher{}
	var problems []string
	for _, u := range cfg.Upstreams {
		for i, c := range u.Classes {
			p, err := spec.ParsePattern(c.Match)
			if err != nil {
				problems = append(problems, fmt.Sprintf("upstreams[%s].classes[%d].match: %q: %v", u.Match, i, c.Match, err))
				continue
			}
			out[u.Match] = append(out[u.Match], classMatcher{p, classBudget(u.Match, c.Match)})
		}
	}
	if len(problems) > 0 {
		return nil, &config.Error{File: cfg.Source, Problems: problems}
	}
	return out, nil
}

type classMatcher struct {
	pattern spec.Pattern
	budget  string
}

// registerEndpoints gives every endpoint its cooldown and upstream.
func registerEndpoints(cfg *config.Config, l *ratelimit.Limiter, cat *spec.Catalog, upstream func(*spec.Endpoint) string) error {
	classes, err := classMatchers(cfg)
	if err != nil {
		return err
	}
	all := cat.Endpoints()
	eps := make([]ratelimit.Endpoint, 0, len(all))
	for _, e := range all {
		set := cfg.ForEndpoint(cfg.SpecByName(e.Spec), e.ID, e.OperationID)
		interval := set.RateLimitInterval
		if set.DisableRateLimiter {
			interval = 0
		}
		re := ratelimit.Endpoint{ID: e.ID, Upstream: upstream(e), Interval: interval, Cost: e.RateLimitCost()}
		if sc := cfg.SpecByName(e.Spec); sc != nil {
			if _, o, ok := sc.Override(e.ID, e.OperationID); ok && o.Cost != nil {
				re.Cost = *o.Cost
			}
		}
		if len(classes) > 0 && re.Upstream != "" {
			if m, ok := l.BudgetFor(re.Upstream); ok {
				for _, c := range classes[m] {
					if c.pattern.Match(e) {
						re.Classes = append(re.Classes, c.budget)
					}
				}
			}
		}
		eps = append(eps, re)
	}
	// one bulk registration: each SetEndpoint would copy the limiter's maps
	return l.SetEndpoints(eps)
}

// newClient turns the config into the invoke client's options.
func newClient(cfg *config.Config) *invoke.Client {
	opts := invoke.Options{
		Timeout:                     time.Duration(cfg.CallTimeout),
		MaxResponseBytes:            int64(cfg.MaxResponseBytes),
		AllowedHosts:                cfg.AllowedHosts,
		UploadsDir:                  cfg.UploadsDir,
		AllowModelCredentialHeaders: cfg.AllowCredentialHeaders,
		AllowModelOverrideHeaders:   cfg.AllowOverrideHeaders,
		UserAgent:                   "specgate/" + buildVersion(),
		Specs:                       map[string]invoke.SpecOptions{},
	}
	switch cfg.Proxy {
	case "":
		opts.Proxy = http.ProxyFromEnvironment
	case "none":
	default:
		if u, err := config.ProxyURL(cfg.Proxy); err == nil { // Validate refused anything else
			opts.Proxy = invoke.ProxyTo(u) // loopback (a spec's mock) goes direct
		}
	}
	if cfg.BlockPrivateNetworks != nil {
		opts.BlockPrivateNetworks = *cfg.BlockPrivateNetworks
	}
	for i := range cfg.Specs {
		sc := &cfg.Specs[i]
		set := cfg.ForSpec(sc)
		block := set.BlockPrivateNetworks
		if sc.Mock.On {
			block = false // the spec's mock listens on loopback
		}
		allowCred := set.AllowCredentialHeaders
		allowOverride := set.AllowOverrideHeaders
		so := invoke.SpecOptions{
			Timeout:                     set.CallTimeout,
			MaxResponseBytes:            set.MaxResponseBytes,
			BlockPrivateNetworks:        &block,
			AllowModelCredentialHeaders: &allowCred,
			AllowModelOverrideHeaders:   &allowOverride,
			AllowedHosts:                sc.AllowedHosts,
			OperatorHosts:               operatorHosts(*sc),
			Headers:                     headersOf(sc),
			Auth:                        map[string]invoke.Credential{},
			EndpointTimeouts:            map[string]time.Duration{},
		}
		for name, c := range sc.Auth {
			var missing []string
			for _, sec := range c.Secrets() {
				missing = append(missing, sec.MissingEnv()...)
			}
			so.Auth[name] = invoke.Credential{
				Value: c.Value.Reveal(), Token: c.Token.Reveal(), Username: c.Username.Reveal(), Password: c.Password.Reveal(),
				ClientID: c.ClientID.Reveal(), ClientSecret: c.ClientSecret.Reveal(), TokenURL: c.TokenURL, Scopes: c.Scopes,
				MissingEnv: missing,
			}
			cr := so.Auth[name]
			for _, e := range c.ByPrincipal {
				pc := invoke.PrincipalCredential{Subject: e.Subject, Org: e.Org, Credential: invoke.Credential{
					Value: e.Value.Reveal(), Token: e.Token.Reveal(), Username: e.Username.Reveal(), Password: e.Password.Reveal(),
					ClientID: e.ClientID.Reveal(), ClientSecret: e.ClientSecret.Reveal(),
				}}
				for _, sec := range e.Secrets() {
					pc.MissingEnv = append(pc.MissingEnv, sec.MissingEnv()...)
				}
				cr.ByPrincipal = append(cr.ByPrincipal, pc)
			}
			so.Auth[name] = cr
		}
		for key, ep := range sc.Endpoints {
			if ep.CallTimeout != nil {
				so.EndpointTimeouts[key] = time.Duration(*ep.CallTimeout)
			}
		}
		opts.Specs[specName(*sc)] = so
	}
	return invoke.New(opts)
}

// credentialsFunc reports whether a scheme of a spec has credentials for
// the caller: its by_principal entry when it has one, else the plain form,
// as a call would choose them.
func credentialsFunc(cfg *config.Config) func(ctx context.Context, specName, scheme string) bool {
	anySet := func(secrets []config.Secret) bool {
		for _, s := range secrets {
			if s.IsSet() {
				return true
			}
		}
		return false
	}
	return func(ctx context.Context, name, scheme string) bool {
		sc := cfg.SpecByName(name)
		if sc == nil {
			return false
		}
		c, ok := sc.Auth[scheme]
		if !ok {
			return false
		}
		if p, ok := invoke.PrincipalFrom(ctx); ok {
			for _, e := range c.ByPrincipal {
				if e.Subject == p.Subject && e.Org == p.Org {
					return anySet(e.Secrets())
				}
			}
		}
		return anySet(c.Secrets())
	}
}
