package mcpserver

import (
	"context"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/rpcmsg"
	"github.com/specgate/specgate/pkg/runs"
	"github.com/specgate/specgate/pkg/serve"
	"github.com/specgate/specgate/pkg/tasks"
	"github.com/specgate/specgate/pkg/telemetry"
	"github.com/specgate/specgate/pkg/toolargs"
)

// The Server is what the transports of package serve serve: they call it
// back for what only the tools know.
var _ serve.Backend = (*Server)(nil)

// Metrics returns where the server counts.
func (s *Server) Metrics() *telemetry.Metrics { return s.metrics }

// Logger returns the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// Now is the server's clock.
func (s *Server) Now() time.Time { return s.now() }

// StdioOrder keeps the tools' progress notifications ahead of their
// answers on stdio.
func (s *Server) StdioOrder() *serve.NotifyOrder { return &s.order }

// Readiness says whether loading finished, and what it gave.
func (s *Server) Readiness() serve.Readiness {
	if !s.Ready() {
		return serve.Readiness{}
	}
	st := s.state.Load()
	if st.err != nil {
		return serve.Readiness{Loaded: true, Err: st.err}
	}
	rd := serve.Readiness{Loaded: true, Endpoints: st.cat.Len(), Specs: st.cat.SpecNames()}
	if len(st.failures) > 0 {
		rd.Failed = st.failures
	}
	return rd
}

// PrepareCall decodes a tools/call's arguments with the tool's own decode,
// from the keys the transport's one reading found: the handler then runs
// with them (decodedKey) instead of decoding them again.
func (s *Server) PrepareCall(ctx context.Context, m *rpcmsg.Message) (context.Context, inauth.Scope, bool) {
	tl := s.table[m.Name]
	if tl == nil {
		return ctx, ScopeNone, false // not a tool: mcp-go answers that
	}
	args, bad := tl.decode(m.Arguments, &toolargs.Keys{Keys: m.ArgumentKeys})
	if bad != nil {
		return ctx, ScopeNone, false // the handler refuses it identically, before it runs
	}
	return context.WithValue(ctx, decodedKey{}, &decodedCall{name: m.Name, args: args}), tl.scope(s, args), true
}

// IsTask reports whether m is a task request of run_script's runs, which
// the transports have specgate answer itself (tasks.Runs).
func (s *Server) IsTask(m *rpcmsg.Message) bool { return s.tasks.IsTask(m) }

// AnswerTask answers the task request m, whose text is msg.
func (s *Server) AnswerTask(ctx context.Context, m *rpcmsg.Message, msg []byte) map[string]any {
	return s.tasks.Answer(ctx, m, msg)
}

// newTasks answers MCP tasks from run_script's run records: a task is a
// run, its id the run id.
func (s *Server) newTasks() *tasks.Runs {
	return &tasks.Runs{
		Runs: s.runs, Tool: "run_script", Wait: MaxScriptWait, Logger: s.log, Principal: principalOf,
		Start: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, *runs.Run, error) {
			started := &taskStart{}
			res, err := s.handlerOf(s.table["run_script"])(context.WithValue(ctx, taskStartKey{}, started), req)
			return res, started.run, err
		},
		Result: func(rec *runs.Record) *mcp.CallToolResult { return s.runAnswer(rec, nil) },
		Status: func(rec *runs.Record, now time.Time) string {
			p := progressOf(rec, now)
			return runProgressLine(p.Calls.Total, p.Done, p.Total, p.Note)
		},
		Refused: func(ctx context.Context) string {
			if obj := s.requireScope(ctx, ScopeRead); obj != nil {
				return obj.Message
			}
			return ""
		},
	}
}

// taskStartKey is the context key of a taskStart: run_script then starts
// its run and answers at once.
type taskStartKey struct{}

// taskStart hears the run a task-augmented run_script started; nil run: it
// answered before starting one (bad arguments, per_principal).
type taskStart struct{ run *runs.Run }

// decodedKey is the context key of a tools/call the HTTP transport
// already decoded (to answer a missing scope with 403): the handler runs
// with those very arguments instead of decoding them again.
type decodedKey struct{}

type decodedCall struct {
	name string
	args any
}

// callerCancelled reports whether the caller asked to stop the call
// ctx belongs to (serve.CallerCancelled).
func callerCancelled(ctx context.Context) bool { return serve.CallerCancelled(ctx) }

// chargeToolCall charges the tool-call budget of the principal the HTTP
// transport put in ctx; it returns a tool error when the budget is spent,
// nil otherwise (and always nil outside HTTP).
func (s *Server) chargeToolCall(ctx context.Context) *mcp.CallToolResult {
	r := serve.ChargeToolCall(ctx)
	if r == nil {
		return nil
	}
	secs := ratelimit.WaitSeconds(r.RetryAfter)
	return errorResult(&ErrorObject{
		Code:              codes.RateLimit,
		Message:           r.Message,
		Hint:              "Your tool-call budget on this specgate is spent (search and inspect count too). Wait, then call again.",
		Retryable:         true,
		RetryAfterSeconds: secs,
		RetryAt:           r.Now.Add(time.Duration(secs * float64(time.Second))).UTC().Format(time.RFC3339Nano),
		Scope:             string(ratelimit.ScopeProxy),
		Limit:             &LimitInfo{Kind: "principal", Key: r.Principal.String(), Limit: int64(r.Limit), Window: r.Window.String()},
	})
}
