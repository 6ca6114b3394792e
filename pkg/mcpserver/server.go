package mcpserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/trace"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/runs"
	"github.com/specgate/specgate/pkg/search"
	"github.com/specgate/specgate/pkg/serve"
	"github.com/specgate/specgate/pkg/spec"
	"github.com/specgate/specgate/pkg/tasks"
	"github.com/specgate/specgate/pkg/telemetry"
	"github.com/specgate/specgate/pkg/ui"
)

// listCacheTTL is how long a 2026-07-28 client may reuse the tools and
// prompts lists: a restart with another config may change them.
const listCacheTTL = 5 * time.Minute

// Options configure a Server. The zero value serves the core tools with no
// governance beyond what the limiter, if any, enforces.
type Options struct {
	// Version is reported to clients in initialize. If empty, "dev".
	Version string
	// Tracer, when set, records a span per tool call with children for
	// queue waits, upstream attempts and the shaping of an answer. Nil:
	// no spans.
	Tracer trace.Tracer
	// SpecNames are the specs being loaded, listed in the instructions
	// before loading finishes.
	SpecNames []string
	// Caller makes the calls of invoke and run_script, built once by the
	// program: its Client sends them (if nil, every call is answered with
	// an error saying calls are disabled), its Limiter governs them (if
	// nil, they are not limited), its Upstream keys an endpoint's upstream
	// (if nil, the host of the endpoint's base URL), and its Answers keep
	// upstream answers for read_response, per principal (if nil, an
	// in-memory store with its defaults, 64 MiB and 15m idle). Where unset,
	// the server gives it its clock, its result cache and its validators;
	// its Observer is the server's statistics and metrics, and one given
	// here hears every attempt after them.
	Caller invoke.Caller
	// Logger receives operational logs. If nil, slog.Default().
	Logger *slog.Logger
	// Now is the clock for retry times. If nil, time.Now.
	Now func() time.Time
	// AllowRuntimeTuning registers set_rate_limit.
	AllowRuntimeTuning bool
	// Audit receives one JSON line per invoke (no argument values, no
	// secrets). If nil, nothing is written.
	Audit io.Writer
	// ResultBytes bounds the JSON text of one invoke or read_response
	// answer; larger bodies come back previewed. If zero, 16 KiB.
	ResultBytes int
	// JQTimeout bounds one jq run. If zero, 1s.
	JQTimeout time.Duration
	// JQSlots bound the jq filters running at once, at most half of them
	// for one principal. If nil, the process's (answer.JQLimits).
	JQSlots *answer.JQSlots
	// Credentials reports, for inspect, whether the credentials a scheme of a
	// spec needs are configured for the caller ctx carries (see
	// invoke.PrincipalFrom). If nil, nothing is reported.
	Credentials func(ctx context.Context, specName, scheme string) bool
	// ReadOnly says every spec is served read-only (GET, HEAD and OPTIONS
	// only), so the instructions tell the model. Default false: nothing said.
	ReadOnly bool
	// Metrics are where the server counts; build them first to share them
	// with parts made before the server. If nil, telemetry.NewMetrics().
	Metrics *telemetry.Metrics
	// Scripts configure run_script (see ScriptOptions for the zero value).
	Scripts ScriptOptions

	// Approve says whether a call of the endpoint asks the user before it is
	// sent (approve_writes). If nil, none does.
	Approve func(*spec.Endpoint) bool
	// ApprovalKey signs the requestState of an input_required round trip;
	// replicas serving one client must share it. If empty, a random key.
	ApprovalKey []byte
	// ApprovalTTL is how long a requestState is good. If zero, 5m.
	ApprovalTTL time.Duration
	// ApprovalSpend records that the accepted requestState id was used,
	// reporting whether it was the first time, where every replica sees it
	// (a store). If nil, or when it fails, each process keeps its own.
	ApprovalSpend func(ctx context.Context, id string, ttl time.Duration) (bool, error)
	// ApprovalChannel says who asks the person: ChannelElicit (the client,
	// by elicitation), ChannelPage (the governance page, for every client)
	// or ChannelAuto (the client where it can ask, else the page). Without
	// PageApprovals the page asks nobody. If empty, ChannelElicit.
	ApprovalChannel string
	// PageApprovals is the governance page's waiting room: a write asked
	// there waits until a person decides or ApprovalTTL passes. If nil,
	// the page asks nobody.
	PageApprovals *ui.Approvals
}

// LoadFailure is a spec that could not be loaded.
type LoadFailure struct {
	Spec   string `json:"spec"`
	Reason string `json:"reason"`
}

// state is what loading produces; it is swapped whole.
type state struct {
	cat      *spec.Catalog
	ix       *search.Index
	failures []LoadFailure
	err      error
}

// Server holds the MCP server and the catalog it serves. Tools answer as
// soon as the server exists; those that need the catalog wait for Publish.
type Server struct {
	opts  Options
	mcp   *server.MCPServer
	log   *slog.Logger
	now   func() time.Time
	state atomic.Pointer[state]
	ready chan struct{}
	once  sync.Once
	stats *stats
	cache answer.ResultCache
	// validators keep the ETag or Last-Modified of GET answers, for
	// conditional requests
	validators answer.ResultCache
	// call is the governed call behind invoke and run_script, built once
	// (newCaller); each call copies it
	call invoke.Caller
	// answers holds stored upstream answers.
	answers answer.AnswerStore
	audMu   sync.Mutex
	// metrics are the Prometheus collectors the HTTP transport serves.
	metrics *telemetry.Metrics
	// table holds the tools registered, by name; read-only after New.
	table map[string]*tool
	// scripts counts run_script runs in progress per principal.
	scripts scriptRuns
	// runs keeps the records of runs, for script_result.
	runs *runs.Manager
	// approvals signs and checks approval requestStates.
	approvals *approvals
	// tasks answers MCP tasks from the run records.
	tasks *tasks.Runs
	// order keeps progress notifications ahead of answers on stdio.
	order serve.NotifyOrder
}

// New returns a Server with its tools registered. Call Publish when the
// catalog is loaded.
func New(opts Options) *Server {
	s := &Server{opts: opts, ready: make(chan struct{}), stats: newStats(), metrics: opts.Metrics}
	if s.metrics == nil {
		s.metrics = telemetry.NewMetrics()
	}
	if opts.Caller.Limiter != nil {
		s.metrics.SetLimiter(opts.Caller.Limiter)
	}
	s.log = opts.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	s.now = opts.Now
	if s.now == nil {
		s.now = time.Now
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	s.call = s.newCaller(opts.Caller)
	s.answers = s.call.Answers
	s.runs = opts.Scripts.Runs
	if s.runs == nil {
		s.runs = runs.NewManager(runs.Options{Logger: s.log})
	}
	s.approvals = newApprovals(opts.ApprovalKey, opts.ApprovalTTL, opts.ApprovalSpend)
	hooks := s.promptHooks()
	hooks.AddBeforeInitialize(skipBatchEra)
	sopts := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithInstructions(instructions(opts.SpecNames) + readOnlyNote(opts.ReadOnly) + approveNote(opts.Approve != nil)),
		server.WithRecovery(),
		server.WithHooks(hooks),
		// run_script as an MCP task (list, cancel, tool calls). The
		// transports have specgate answer tasks itself, per principal, from
		// the run records (package tasks); in process mcp-go's task store serves
		// the one client.
		server.WithTaskCapabilities(true, true, true),
		// 2026-07-28 clients find tasks as an extension.
		server.WithExtensions(map[string]any{tasks.ExtensionID: map[string]any{}}),
		// The tools and prompts are fixed for the life of the process and the
		// same for every caller: on MCP 2026-07-28 their lists say so.
		server.WithMethodCacheHints(mcp.MethodToolsList, listCacheTTL.Milliseconds(), mcp.CacheScopePublic),
		server.WithMethodCacheHints(mcp.MethodPromptsList, listCacheTTL.Milliseconds(), mcp.CacheScopePublic),
	}
	if opts.Approve != nil {
		sopts = append(sopts, server.WithElicitation())
	}
	s.mcp = server.NewMCPServer("specgate", version, sopts...)
	s.registerTools()
	s.registerPrompts()
	s.tasks = s.newTasks()
	return s
}

// skipBatchEra answers a client asking for MCP 2025-03-26 (or naming no
// version, which mcp-go reads as 2025-03-26) with 2025-06-18: 2025-03-26
// makes receiving JSON-RPC batches a MUST, and mcp-go refuses batches on
// every transport, so agreeing to it promised what is then refused.
func skipBatchEra(_ context.Context, _ any, req *mcp.InitializeRequest) {
	if v := req.Params.ProtocolVersion; v == "" || v == mcp.ProtocolVersion20250326 {
		req.Params.ProtocolVersion = mcp.ProtocolVersion20250618
	}
}

// DrainRuns takes no new runs, lets the runs in progress end until ctx
// ends, then stops the rest and records them as lost (see runs.Manager).
func (s *Server) DrainRuns(ctx context.Context) { s.runs.Drain(ctx) }

// MCP returns the underlying mcp-go server, for transports and in-process
// clients.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// Publish makes a loaded catalog and its index available to the tools.
// failures lists specs that did not load. Only the first call has effect.
func (s *Server) Publish(cat *spec.Catalog, ix *search.Index, failures []LoadFailure) {
	s.once.Do(func() {
		s.state.Store(&state{cat: cat, ix: ix, failures: failures})
		close(s.ready)
	})
}

// Fail records that loading failed as a whole; every tool then answers
// with err's message, which must say what failed.
func (s *Server) Fail(err error) {
	s.once.Do(func() {
		s.state.Store(&state{err: err})
		close(s.ready)
	})
}

// Ready reports whether loading has finished.
func (s *Server) Ready() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// wait blocks until loading finished or ctx ends.
func (s *Server) wait(ctx context.Context) (*state, error) {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	st := s.state.Load()
	if st.err != nil {
		return nil, st.err
	}
	return st, nil
}

func instructions(specs []string) string {
	var b strings.Builder
	b.WriteString("specgate calls HTTP APIs described by OpenAPI specs")
	if len(specs) > 0 {
		list := specs
		more := ""
		if len(list) > 20 {
			more = fmt.Sprintf(" and %d more", len(list)-20)
			list = list[:20]
		}
		fmt.Fprintf(&b, " (loaded: %s%s)", strings.Join(list, ", "), more)
	}
	b.WriteString(".\nFlow: search (a plain-language intent) -> inspect an id -> invoke it with parameters and requestBody.\n" +
		"A failed call has isError and {error:{code,message,hint,...}}. Calls are rate-governed: " +
		"a refusal says how long to wait (retryAfterSeconds), who refused (scope proxy: specgate; upstream: the API) and what to call meanwhile.\n" +
		"For many calls, write one run_script instead of many invokes: paced the same, only its result reaches you.\n" +
		"A large answer comes back as a preview with a responseId: read more with read_response (jq, or offset/limit), not by calling again.")
	return b.String()
}

// upstreamOf returns the upstream key of an endpoint.
func (s *Server) upstreamOf(e *spec.Endpoint) string {
	return s.call.Upstream(e)
}

// readOnlyNote is the sentence the instructions end with when every spec is
// served read-only, so the model does not plan writes it cannot make.
func readOnlyNote(readOnly bool) string {
	if !readOnly {
		return ""
	}
	return "\nThis server is read-only: only GET, HEAD and OPTIONS endpoints are served; nothing you call here changes data."
}
