package serve

import (
	"context"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/rpcmsg"
	"github.com/specgate/specgate/pkg/telemetry"
)

// Backend is the MCP server the transports serve: specgate's tools
// (*mcpserver.Server is one). The transports answer what must be scoped
// to a caller before mcp-go sees it (authentication, budgets, sessions,
// cancellation, tasks) and hand mcp-go the rest; a Backend is called back
// for what only the tools know.
type Backend interface {
	// MCP is the mcp-go server that answers every message the transport
	// does not answer itself.
	MCP() *server.MCPServer
	// Metrics are where the transport counts, and what /metrics serves.
	Metrics() *telemetry.Metrics
	// Logger receives the transport's operational logs.
	Logger() *slog.Logger
	// Now is the clock of the inbound budgets and of session idleness,
	// unless Options.Now is set.
	Now() time.Time
	// Readiness is what /readyz reports.
	Readiness() Readiness
	// StdioOrder keeps progress notifications ahead of answers on stdio:
	// the tools count what they send and wait on it.
	StdioOrder() *NotifyOrder
	// PrepareCall decodes a tools/call's arguments with the tool's own
	// decode, once, from what Read found of the message: the scope they
	// need, and ctx carrying them for the tool to run with. false: m names
	// no tool, or its arguments are refused (the tool answers that itself,
	// from mcp-go's reading of the message).
	PrepareCall(ctx context.Context, m *rpcmsg.Message) (context.Context, inauth.Scope, bool)
	// IsTask reports whether m is a task request the Backend answers
	// itself (AnswerTask), never mcp-go, whose task store is shared by
	// every caller.
	IsTask(m *rpcmsg.Message) bool
	// AnswerTask is the JSON-RPC response to the task request m, whose
	// whole text is msg, for the principal ctx carries.
	AnswerTask(ctx context.Context, m *rpcmsg.Message, msg []byte) map[string]any
}

// Readiness is what /readyz says of a Backend: loading (Loaded false),
// failed as a whole (Err), or serving Endpoints of Specs, with the specs
// that failed to load as Failed (any JSON value; nil when none).
type Readiness struct {
	Loaded    bool
	Err       error
	Endpoints int
	Specs     []string
	Failed    any
}
