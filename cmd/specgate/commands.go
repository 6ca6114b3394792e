package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/mcpserver"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/redisstore"
	"github.com/specgate/specgate/pkg/search"
	"github.com/specgate/specgate/pkg/serve"
	"github.com/specgate/specgate/pkg/spec"
	"github.com/specgate/specgate/pkg/telemetry"
	"github.com/specgate/specgate/pkg/ui"
)

// app is a configured server whose catalog loads in the background.
type app struct {
	cfg    *config.Config
	srv    *mcpserver.Server
	log    *slog.Logger
	loaded chan error
	// store is the shared limiter store, nil for memory. It lives as long
	// as the process.
	store   *redisstore.Store
	limiter *ratelimit.Limiter
	// stopTracing flushes the spans; the command calls it before it returns.
	stopTracing func()
	// auditTail keeps the last audit lines for the governance page.
	auditTail *ui.AuditTail
	// approvals are the writes waiting for a person on the page; nil when
	// no page is served.
	approvals *ui.Approvals
	// cat is the loaded catalog, set before a.loaded says nil.
	cat *spec.Catalog
}

func (c *common) cacheDir() string {
	if c.noCache {
		return ""
	}
	return spec.DefaultCacheDir()
}

// start builds the server and starts loading the specs.
func start(ctx context.Context, c *common, cfg *config.Config) (*app, error) {
	log := c.logger()
	nameSpecs(ctx, cfg)
	for _, w := range missingEnvWarnings(cfg) {
		log.Warn(w)
	}
	// The metrics come first: the store counts its errors into them, and
	// the server is handed the same ones.
	metrics := telemetry.NewMetrics()
	// One Redis connection (with a Redis store) serves the limiter's store,
	// the answer store and the approvals; it lives as long as the process.
	rc, err := redisClient(cfg)
	if err != nil {
		return nil, err
	}
	store, err := newStore(ctx, cfg, rc, log, func() { metrics.ObserveStoreError("redis") })
	if err != nil {
		return nil, err
	}
	limiter, err := newLimiter(cfg, sharedStore(store))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, sc := range cfg.Specs {
		names = append(names, specName(sc))
	}
	upstream := upstreamKeyFunc(cfg)
	// The page shows the audit tail whether or not audit_log is set.
	tail := &ui.AuditTail{}
	var audit io.Writer = tail
	if cfg.AuditLog != "" {
		f, err := os.OpenFile(cfg.AuditLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		// The file stays open for the life of the process.
		audit = io.MultiWriter(f, tail)
	}
	// The one governed call behind invoke and run_script. The answer store,
	// like the limiter store, lives as long as the process.
	call := invoke.Caller{
		Governed: invoke.Governed{Client: newClient(cfg), Limiter: limiter, Upstream: upstream,
			MaxRetries: cfg.MaxRetries, MaxRetryWait: time.Duration(cfg.MaxRetryWait)},
		Answers: c.answerStore(newAnswers(cfg, rc)),
		CacheTTL: func(e *spec.Endpoint) time.Duration {
			return cfg.ForEndpoint(cfg.SpecByName(e.Spec), e.ID, e.OperationID).CacheTTL
		},
	}
	tracer, stopTracing, err := newTracing(ctx, cfg.OTLPEndpoint)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	approve, err := approveFunc(cfg)
	if err != nil {
		return nil, err
	}
	var approvalSigner []byte
	var approvalSpend func(context.Context, string, time.Duration) (bool, error)
	if approve != nil {
		approvalSigner, approvalSpend = approvalStore(ctx, cfg, rc, log)
	}
	var room *ui.Approvals
	if c.servesPage && approve != nil && cfg.ApprovalChannel() != config.ChannelElicit {
		room = ui.NewApprovals(0, nil)
	}
	srv := mcpserver.New(mcpserver.Options{
		Audit:              audit,
		ResultBytes:        int(cfg.ResultBytes),
		JQTimeout:          time.Duration(cfg.JQTimeout),
		Version:            buildVersion(),
		Tracer:             tracer,
		SpecNames:          names,
		Logger:             log,
		AllowRuntimeTuning: cfg.AllowRuntimeTuning,
		Credentials:        credentialsFunc(cfg),
		ReadOnly:           allReadOnly(cfg),
		Metrics:            metrics,
		Scripts:            scriptOptions(cfg, newRunStore(rc), log),
		Approve:            approve,
		ApprovalKey:        approvalSigner,
		ApprovalSpend:      approvalSpend,
		ApprovalTTL:        cfg.ApprovalTTL(),
		ApprovalChannel:    string(cfg.ApprovalChannel()),
		PageApprovals:      room,
		Caller:             call,
	})
	a := &app{cfg: cfg, srv: srv, log: log, loaded: make(chan error, 1), store: store, limiter: limiter, stopTracing: stopTracing, auditTail: tail, approvals: room}
	go a.load(ctx, c.cacheDir(), upstream)
	return a, nil
}

func cmdServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := newCommon("serve", stderr)
	c.stdout = stdout
	var httpAddr httpFlag
	var uiAddr string
	c.value(&httpAddr, "http", "serve streamable HTTP instead of stdio: on `ADDR` (--http 127.0.0.1:8080), or alone on the config's http.listen")
	c.str(&uiAddr, "ui", "", "with stdio, serve the governance page on loopback `ADDR` (127.0.0.1:PORT); the URL printed at start signs in once")
	rest, err := c.parse(args)
	if err != nil {
		return err
	}
	if msg := httpAddr.portOnly(rest); msg != "" {
		return c.usageError("%s", msg)
	}
	rest = httpAddr.takeAddr(rest)
	if len(rest) > 0 {
		return c.usageError("unexpected arguments: %s", strings.Join(rest, " "))
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	c.servesPage = httpAddr.on || uiAddr != ""
	// Loading runs while the server answers. A required spec that fails
	// stops the server with its reason; when no spec loads at all, the
	// server serves on and answers every call with the reason, so a client
	// reads it instead of losing its connection.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	a, err := start(ctx, c, cfg)
	if err != nil {
		return err
	}
	defer a.stopTracing()
	if jsonLogs(a.log) {
		// a library's log.Printf is a JSON line too
		slog.SetDefault(a.log)
	}
	go func() {
		if err := <-a.loaded; err != nil {
			if errors.Is(err, errNoSpec) {
				a.log.Error("no spec loaded: serving on, every call answers with the reason", "err", err)
				return
			}
			a.log.Error("loading failed", "err", err)
			stop(err)
		}
	}()
	if uiAddr != "" && httpAddr.on {
		return c.usageError("--ui is for stdio serving; with --http the page is at /ui")
	}
	if !httpAddr.on {
		if uiAddr != "" {
			uiCtx, stopUI := context.WithCancel(ctx)
			uiDone := make(chan error, 1)
			ln := make(chan error, 1)
			go func() { uiDone <- serveUI(uiCtx, a, uiAddr, stderr, ln) }()
			if err := <-ln; err != nil {
				stopUI()
				return err
			}
			defer func() { stopUI(); <-uiDone }()
		}
		err = serve.Stdio(ctx, a.srv, stdin, stdout)
		// The one client is gone: its runs have nobody to collect them.
		stopped, cancel := context.WithTimeout(context.Background(), time.Second)
		a.srv.DrainRuns(stopped)
		cancel()
	} else {
		addr := httpAddr.addr
		if addr == "" {
			addr = cfg.HTTP.Listen
		}
		err = serveHTTP(ctx, a, addr, stderr)
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

func serveHTTP(ctx context.Context, a *app, addr string, stderr io.Writer) error {
	hs, err := newHTTPServer(ctx, a, addr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// net/http's own lines (a failed TLS handshake, an accept error) go
	// through the log too
	hs.hs.ErrorLog = slog.NewLogLogger(a.log.Handler(), slog.LevelWarn)
	newBanner(ln.Addr(), authNeeded(&a.cfg.HTTP), uiURL(ln.Addr(), hs.uiToken)).write(stderr, a.log)
	return hs.serve(ctx, ln)
}

// oneShot is the flag set of a command that answers once (search,
// inspect, invoke, run-script): it logs warnings only unless --log-level
// says otherwise, so the answer is what it prints. govern adds the rate
// governance flags to the commands that call upstreams.
func oneShot(name string, stdout, stderr io.Writer, govern bool) *common {
	c := newFlags(name, stdout, stderr)
	c.specFlags()
	if govern {
		c.governFlags()
	} else {
		// search and inspect call no upstream; they took these once.
		c.hide(c.governFlags)
	}
	c.logFlags("warn")
	return c
}

// inProcess starts the app and an in-process MCP client for the shell
// commands, so they answer exactly as the tools do.
func inProcess(ctx context.Context, c *common) (*client.Client, *app, error) {
	cfg, err := c.config()
	if err != nil {
		return nil, nil, err
	}
	a, err := start(ctx, c, cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := <-a.loaded; err != nil {
		return nil, nil, err
	}
	c.noServer = func(id string) bool {
		ep, ok := a.cat.Lookup(id)
		if !ok {
			return false
		}
		_, err := invoke.BaseURL(ep)
		return err != nil
	}
	cl, err := client.NewInProcessClient(a.srv.MCP())
	if err != nil {
		return nil, nil, err
	}
	if err := cl.Start(ctx); err != nil {
		return nil, nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "specgate-cli", Version: buildVersion()}
	if _, err := cl.Initialize(ctx, init); err != nil {
		return nil, nil, err
	}
	return cl, a, nil
}

// callTool calls a tool and returns its JSON, or prints the tool error.
func callTool(ctx context.Context, cl *client.Client, name string, args map[string]any, c *common) (json.RawMessage, error) {
	stderr := c.stderr
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := cl.CallTool(ctx, req)
	if err != nil {
		return nil, err
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		var env struct {
			Error mcpserver.ErrorObject `json:"error"`
		}
		parsed := json.Unmarshal([]byte(text), &env) == nil
		exit := exitCodeFor(env.Error.Code)
		if id, _ := args["endpointId"].(string); parsed && c.configFix(&env.Error, id) {
			text, exit = withError(text, &env.Error), exitOther
		}
		if c.json {
			// the error object as the tool wrote it, or as configFix reworded it
			fmt.Fprintln(c.out(), text)
			return nil, exitError{code: exit}
		}
		if parsed {
			fmt.Fprintf(stderr, "error %s: %s\n", env.Error.Code, env.Error.Message)
			if env.Error.Hint != "" {
				fmt.Fprintln(stderr, env.Error.Hint)
			}
			for _, p := range env.Error.Problems {
				fmt.Fprintln(stderr, "  -", p)
			}
			if b := bodyExcerpt(env.Error.Body); b != "" {
				// the hint says to read the upstream's message: show it
				// indented: a line of it is never taken for a JSON log line
				fmt.Fprintf(stderr, "The upstream answered %d:\n  %s\n", env.Error.Status, strings.ReplaceAll(b, "\n", "\n  "))
			}
			if len(env.Error.Suggestions) > 0 {
				fmt.Fprintln(stderr, "Did you mean:")
				tw := tabwriter.NewWriter(stderr, 0, 4, 2, ' ', 0)
				for _, s := range env.Error.Suggestions {
					fmt.Fprintf(tw, "  %s\t%s %s\n", s.ID, s.Method, s.Path)
				}
				tw.Flush()
			}
		} else {
			fmt.Fprintln(stderr, text)
		}
		return nil, exitError{code: exit}
	}
	return json.RawMessage(text), nil
}

func cmdSearch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := oneShot("search", stdout, stderr, false)
	var limit int
	c.integer(&limit, "limit", 10, "hits", "`N` hits to show (1-50)")
	rest, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return c.usageError("a QUERY is needed")
	}
	if limit < 1 || limit > 50 {
		return c.usageError("--limit: %d is out of range: write a number of hits from 1 to 50", limit)
	}
	cl, a, err := inProcess(ctx, c)
	if err != nil {
		return err
	}
	defer a.stopTracing()
	defer cl.Close()
	out, err := callTool(ctx, cl, "search", map[string]any{"query": strings.Join(rest, " "), "limit": limit}, c)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(stdout, out)
	}
	var res mcpserver.SearchResult
	if err := json.Unmarshal(out, &res); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, h := range res.Endpoints {
		fmt.Fprintf(tw, "%s\t%s %s\t%s\n", h.ID, h.Method, h.Path, h.Summary)
	}
	if len(res.Endpoints) == 0 {
		fmt.Fprintln(stderr, "no endpoint matched")
	}
	return tw.Flush()
}

func cmdInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := oneShot("inspect", stdout, stderr, false)
	rest, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return c.usageError("one ENDPOINT_ID is needed")
	}
	cl, a, err := inProcess(ctx, c)
	if err != nil {
		return err
	}
	defer a.stopTracing()
	defer cl.Close()
	out, err := callTool(ctx, cl, "inspect", map[string]any{"endpointId": rest[0]}, c)
	if err != nil {
		return err
	}
	return printJSON(stdout, out)
}

// decodeJSONArg decodes one JSON value with numbers as json.Number, so
// 9007199254740993 reaches the upstream as written, not rounded through
// float64. A number no float64 holds (1e400) is refused here: the
// in-process client could not send it.
func decodeJSONArg(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	if n, ok := outOfRange(v); ok {
		return nil, fmt.Errorf("number %.40s is out of range", n)
	}
	return v, nil
}

// outOfRange finds a number in v that float64 cannot hold.
func outOfRange(v any) (json.Number, bool) {
	switch x := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err != nil {
			return x, true
		}
	case []any:
		for _, e := range x {
			if n, ok := outOfRange(e); ok {
				return n, true
			}
		}
	case map[string]any:
		for _, e := range x {
			if n, ok := outOfRange(e); ok {
				return n, true
			}
		}
	}
	return "", false
}

// printJSON prints a tool's JSON indented, in the order the tool wrote it.
func printJSON(w io.Writer, raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		_, err = w.Write(append(raw, '\n'))
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCommon("check", stderr)
	c.stdout = stdout
	var validate bool
	c.boolean(&validate, "validate", true, "also run strict OpenAPI validation (slow on large specs); findings are warnings")
	rest, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return c.usageError("unexpected arguments: %s", strings.Join(rest, " "))
	}
	if c.json {
		// the text report, turned into JSON once it is whole
		var text bytes.Buffer
		err := checkReportTo(ctx, c, validate, &text)
		var ee exitError
		if err == nil || errors.As(err, &ee) {
			stdout.Write(checkJSON(text.String(), err == nil))
		} // else the config did not load: run answers with the error
		return err
	}
	return checkReportTo(ctx, c, validate, stdout)
}

// checkReportTo loads the config and every spec as serve would, and writes
// what it found to stdout, a line each; exit 1 when something failed.
func checkReportTo(ctx context.Context, c *common, validate bool, stdout io.Writer) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	filters, err := curationFilters(cfg)
	if err != nil {
		return err
	}
	failed := false
	var served []*spec.Spec
	for _, w := range missingEnvWarnings(cfg) {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	var loadedSpecs []*spec.Spec
	nameSpecs(ctx, cfg)
	for i, sc := range cfg.Specs {
		name := specName(sc)
		settings := cfg.ForSpec(&cfg.Specs[i])
		start := time.Now()
		stop := watchSlow(slowLoadAfter, func(d time.Duration) {
			fmt.Fprintf(stdout, "...  %s\n", stillLoading(name, sc.Location, d))
		})
		s, err := spec.Load(ctx, sc.Location, spec.Options{
			Name: name, BaseURL: sc.BaseURL, AllowExternalRefs: settings.AllowExternalRefs,
			MaxBytes: int64(cfg.MaxSpecBytes), Timeout: time.Duration(cfg.SpecFetchTimeout), Validate: validate,
		})
		stop()
		if err != nil {
			failed = true
			fmt.Fprintf(stdout, "FAIL %s: %v\n", name, err)
			continue
		}
		// endpoints: keys may name endpoints that curation then leaves out.
		unknown := unknownEndpointKeys(&cfg.Specs[i], s)
		cur, err := filters[i].Apply(s)
		if err != nil {
			failed = true
			fmt.Fprintf(stdout, "FAIL %s: %v\n", name, err)
			printCuration(stdout, cur)
			continue
		}
		excluded := ""
		if n := cur.Excluded(); n > 0 {
			excluded = fmt.Sprintf(", %d excluded", n)
		}
		served = append(served, s)
		fmt.Fprintf(stdout, "ok   %s: %d endpoints%s (%s %s, base URL %s) in %s\n", name, len(s.Endpoints), excluded, formatName(s.Version),
			s.Title, orNone(s.BaseURL), time.Since(start).Round(time.Millisecond))
		printCuration(stdout, cur)
		for _, w := range s.Warnings {
			fmt.Fprintf(stdout, "     warning: %s\n", w)
		}
		if sc.Mock.On && sc.BaseURL != "" {
			fmt.Fprintf(stdout, "     warning: base_url is ignored: the spec is served by its mock\n")
		}
		if settings.BlockPrivateNetworks && !sc.Mock.On {
			if w := blockedBaseURL(sc, s.BaseURL); w != "" {
				fmt.Fprintf(stdout, "     warning: %s\n", w)
			}
		}
		for _, k := range unknown {
			fmt.Fprintf(stdout, "     warning: endpoints.%s matches no endpoint\n", k)
		}
		for scheme := range sc.Auth {
			if _, ok := s.Schemes[scheme]; !ok {
				fmt.Fprintf(stdout, "     warning: auth.%s names no security scheme of the spec\n", scheme)
			}
		}
		if !sc.Mock.On {
			loadedSpecs = append(loadedSpecs, s)
		}
	}
	misses, err := budgetNearMisses(cfg, loadedSpecs)
	if err != nil {
		failed = true
		fmt.Fprintf(stdout, "FAIL upstreams: %v\n", err)
	}
	for _, w := range misses {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	if e := cfg.Search.Embeddings; e != nil && len(served) > 0 {
		checkSemantic(ctx, stdout, e, served, c.cacheDir())
	}
	if failed {
		return exitError{code: 1}
	}
	return nil
}

// checkSemantic embeds the served endpoints (or reads their vectors from
// the cache) as serve would, and says whether semantic search is on.
func checkSemantic(ctx context.Context, stdout io.Writer, e *config.Embeddings, specs []*spec.Spec, cacheDir string) {
	cat, err := spec.NewCatalog(specs...)
	if err == nil {
		var ix *search.Index
		if ix, err = search.New(cat, search.Options{CacheDir: cacheDir}); err == nil {
			defer ix.Close()
			start := time.Now()
			if err = ix.EnableSemantic(ctx, cat, semanticOptions(e, cacheDir, nil, nil)); err == nil {
				st := ix.Semantic()
				fmt.Fprintf(stdout, "ok   semantic search: model %s, %d endpoint vectors of %d dimensions (%d from the cache) in %s\n",
					e.Model, st.Endpoints, st.Dimensions, st.Cached, time.Since(start).Round(time.Millisecond))
				return
			}
		}
	}
	fmt.Fprintf(stdout, "warning: semantic search is off (search answers lexically): %v\n", err)
}

// budgetNearMisses registers the specs' endpoints with the configured
// budgets, as serve does, and says which upstreams no budget holds for
// although a budget names the same loopback address another way
// (localhost for 127.0.0.1, an operation's own server included). A budget
// that matches no upstream of the specs is an error, as in serve.
func budgetNearMisses(cfg *config.Config, specs []*spec.Spec) ([]string, error) {
	if len(cfg.Upstreams) == 0 || len(specs) == 0 {
		return nil, nil
	}
	l, err := newLimiter(cfg, nil)
	if err != nil {
		return nil, err
	}
	upstream := upstreamKeyFunc(cfg)
	var eps []ratelimit.Endpoint
	var all []*spec.Endpoint
	for _, s := range specs {
		for _, e := range s.Endpoints {
			eps = append(eps, ratelimit.Endpoint{ID: e.ID, Upstream: upstream(e)})
			all = append(all, e)
		}
	}
	if err := l.SetEndpoints(eps); err != nil {
		return nil, err
	}
	keys := upstreamKeys(cfg, all, upstream)
	for _, sc := range cfg.Specs {
		if sc.Mock.On {
			// its mock's port is chosen at start, on 127.0.0.1
			keys = append(keys, sc.UpstreamKey("127.0.0.1:0"))
		}
	}
	if p := unmatchedBudgets(cfg, l, keys); len(p) > 0 {
		return nil, errors.New(strings.Join(p, "; "))
	}
	return l.LoopbackNearMisses(), nil
}

func unknownEndpointKeys(sc *config.Spec, s *spec.Spec) []string {
	var names []config.EndpointName
	for _, e := range s.Endpoints {
		names = append(names, config.EndpointName{ID: e.ID, OperationID: e.OperationID})
	}
	return sc.UnknownEndpointKeys(names)
}

func formatName(v string) string {
	if v == "2.0" {
		return "Swagger 2.0"
	}
	return "OpenAPI " + v
}

func orNone(s string) string {
	if s == "" {
		return "(none: set base_url)"
	}
	return s
}
