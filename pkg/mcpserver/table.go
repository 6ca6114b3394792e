package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/spec"
	"github.com/specgate/specgate/pkg/toolargs"
)

// Scope is what a tool call needs of the caller's token, when the HTTP
// transport checks scopes (inauth.Scopes).
type Scope = inauth.Scope

// The scopes a tool call may need.
const (
	ScopeNone   = inauth.ScopeNone
	ScopeRead   = inauth.ScopeRead
	ScopeInvoke = inauth.ScopeInvoke
	ScopeAdmin  = inauth.ScopeAdmin
)

// endpointScope is the scope an invoke of e needs: read for GET and HEAD,
// invoke for every other method.
func endpointScope(e *spec.Endpoint) Scope {
	switch strings.ToUpper(e.Method) {
	case http.MethodGet, http.MethodHead:
		return ScopeRead
	}
	return ScopeInvoke
}

// tool is one entry of the table of tools, which owns everything about a
// tool: its name and what the model reads of it, its argument type, the
// scope a call needs, the error codes it answers with, and its handler.
// A new tool is one entry of Server.tools.
type tool struct {
	name string
	// description is what the model reads; codes are appended to it as
	// "Error codes: ...", each with an optional note in parentheses.
	description string
	codes       []string
	options     []mcp.ToolOption
	// enabled reports whether the server offers the tool. If nil, always.
	enabled func(s *Server) bool
	// decode reads a call's raw arguments, once, into the tool's argument
	// type; the problem is a validation_failed result. read, when not nil,
	// is the transport's reading of raw's keys (already checked).
	decode func(raw json.RawMessage, read *toolargs.Keys) (any, *mcp.CallToolResult)
	// scope is what a call with these decoded arguments needs.
	scope func(s *Server, args any) Scope
	// run handles a call with its decoded arguments.
	run func(s *Server, ctx context.Context, req mcp.CallToolRequest, args any) (*mcp.CallToolResult, error)
}

// newTool builds a table entry for arguments of type A. scope, if nil,
// is a constant: need.
func newTool[A any](name, description string, codes []string, need Scope, scope func(*Server, *A) Scope,
	run func(*Server, context.Context, mcp.CallToolRequest, *A) (*mcp.CallToolResult, error), options ...mcp.ToolOption) tool {
	return tool{
		name: name, description: description, codes: codes, options: options,
		decode: func(raw json.RawMessage, read *toolargs.Keys) (any, *mcp.CallToolResult) {
			a := new(A)
			if bad := decodeArgsRead(name, raw, read, a); bad != nil {
				return nil, bad
			}
			return a, nil
		},
		scope: func(s *Server, args any) Scope {
			if scope == nil {
				return need
			}
			return scope(s, args.(*A))
		},
		run: func(s *Server, ctx context.Context, req mcp.CallToolRequest, args any) (*mcp.CallToolResult, error) {
			return run(s, ctx, req, args.(*A))
		},
	}
}

// errorCodesNote opens the list of a tool's error codes; the instructions
// describe the error object once, and every answer carries it whole.
const errorCodesNote = "Error codes: "

// fullDescription is what the model reads of t.
func (t *tool) fullDescription() string {
	if len(t.codes) == 0 {
		return t.description
	}
	return t.description + " " + errorCodesNote + strings.Join(t.codes, ", ") + "."
}

// tools is the table of every tool the server can offer, in the order
// they are listed.
func (s *Server) tools() []tool {
	return []tool{
		newTool("search", "Find API endpoints by plain-language intent (\"list open pull requests\"); "+
			"filters may be mixed in: method:GET tag:issues spec:github path:/repos. Use the API's nouns (customer, pod); "+
			"unsure, add alternatives: other phrasings (\"refund a charge\" / \"give the money back\").",
			[]string{codes.ValidationFailed}, ScopeRead, nil, (*Server).handleSearch,
			inputSchema[SearchArgs](), outputSchema[SearchResult](), hints(true, false, true, false)),

		newTool("inspect", "An endpoint's contract: parameters, body, responses, base URL, auth, rate limit. Read it before invoke.",
			[]string{codes.NotFound + " (use search)"}, ScopeRead, nil, (*Server).handleInspect,
			inputSchema[InspectArgs](), outputSchema[inspectResult](), hints(true, false, true, false)),

		newTool("invoke", "Call an endpoint: {statusCode, headers, body, rateLimit}. A body over budget is previewed "+
			"with a responseId for read_response; nextPage holds the next page's arguments. Use jq to pick fields.",
			[]string{codes.RateLimit, codes.UpstreamRateLimit,
				codes.QueueFull, codes.QueueTimeout, codes.Timeout, codes.Cancelled, codes.ValidationFailed + " (costs no rate limit)",
				codes.NotFound, codes.HTTPError, codes.Unreachable, codes.AuthError, codes.Internal},
			ScopeNone, (*Server).invokeScope, (*Server).handleInvoke,
			inputSchema[InvokeArgs](), outputSchema[InvokeResult](), hints(false, true, false, true)),

		newTool("read_response", "Read a stored invoke answer again (no upstream call): filter it with jq, "+
			"or page its main array or text with offset and limit.",
			[]string{codes.NotFound, codes.ValidationFailed, codes.Timeout},
			ScopeRead, nil, (*Server).handleReadResponse,
			inputSchema[ReadResponseArgs](), outputSchema[ReadResult](), hints(true, false, true, false)),

		newTool("run_script", runScriptDescription(s.opts.Scripts),
			[]string{codes.ScriptError, codes.Timeout, codes.Cancelled, codes.ValidationFailed, codes.RateLimit, codes.Internal},
			ScopeRead, nil, (*Server).handleRunScript,
			inputSchema[RunScriptArgs](), outputSchema[runOutput](), hints(false, true, false, true),
			// A client may run it as an MCP task: the task id is the run id.
			mcp.WithTaskSupport(mcp.TaskSupportOptional)),

		newTool("script_result", scriptResultDescription,
			[]string{codes.NotFound, codes.ValidationFailed},
			ScopeRead, nil, (*Server).handleScriptResult,
			inputSchema[ScriptResultArgs](), outputSchema[runOutput](), hints(false, false, true, false)),

		newTool("rate_limit_status", "Show rate governance now per upstream and endpoint: limits, used and remaining, next allowed time, "+
			"what the upstream said, queue, refusals by scope, 429s; your runs.",
			[]string{codes.NotFound}, ScopeRead, nil, (*Server).handleStatus,
			inputSchema[StatusArgs](), outputSchema[StatusResult](), hints(true, false, true, false)),

		withEnabled(newTool("set_rate_limit", "Change a limit now, until restart: an endpoint's cooldown (endpointId + rateLimitInterval, e.g. \"5s\", \"0s\" for none) "+
			"or an upstream's budget (upstream + any of requestsPerWindow, window, minInterval, maxConcurrent).",
			[]string{codes.ValidationFailed, codes.NotFound}, ScopeAdmin, nil, (*Server).handleSetRateLimit,
			inputSchema[SetRateLimitArgs](), outputSchema[SetRateLimitResult](), hints(false, false, true, false)),
			func(s *Server) bool { return s.opts.AllowRuntimeTuning && s.call.Limiter != nil }),

		newTool("begin_task", "Start timing a long task; returns a taskId for end_task.",
			nil, ScopeRead, nil, (*Server).handleBeginTask,
			inputSchema[BeginTaskArgs](), outputSchema[TaskStarted](), hints(false, false, false, false)),

		newTool("end_task", "Review a task from begin_task: times, calls, refusals, and when a concurrency would hit each limit.",
			[]string{codes.NotFound, codes.ValidationFailed}, ScopeRead, nil, (*Server).handleEndTask,
			inputSchema[EndTaskArgs](), outputSchema[TaskReview](), hints(false, false, false, false)),
	}
}

func withEnabled(t tool, enabled func(*Server) bool) tool {
	t.enabled = enabled
	return t
}

// invokeScope is what an invoke needs: by the endpoint's method. An
// unknown id needs invoke: that refuses nothing a read-only token could
// have done.
func (s *Server) invokeScope(a *InvokeArgs) Scope {
	st := s.state.Load()
	if st == nil || st.cat == nil {
		return ScopeInvoke
	}
	e, ok := st.cat.Lookup(a.EndpointID)
	if !ok {
		return ScopeInvoke
	}
	return endpointScope(e)
}

// registerTools registers every enabled entry of the table with mcp-go.
func (s *Server) registerTools() {
	s.table = map[string]*tool{}
	for _, t := range s.tools() {
		if t.enabled != nil && !t.enabled(s) {
			continue
		}
		t := t
		s.table[t.name] = &t
		opts := append([]mcp.ToolOption{mcp.WithDescription(t.fullDescription())}, t.options...)
		s.mcp.AddTool(mcp.NewTool(t.name, opts...), s.handlerOf(&t))
	}
}

// handlerOf is the one path of every call of t: the caller's tool-call
// budget, the one decode of the arguments, the scope those arguments
// need, then the handler, and the call counted.
func (s *Server) handlerOf(t *tool) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, span := s.startToolSpan(ctx, t.name, req)
		res := s.chargeToolCall(ctx)
		var err error
		var args any
		if res == nil {
			if d, ok := ctx.Value(decodedKey{}).(*decodedCall); ok && d.name == t.name {
				args = d.args
			} else {
				args, res = t.decode(rawArguments(req), nil)
			}
		}
		if res == nil {
			if obj := s.requireScope(ctx, t.scope(s, args)); obj != nil {
				res = errorResult(obj)
			}
		}
		if res == nil {
			res, err = t.run(s, ctx, req, args)
		}
		s.countCall(t.name, args, res, err)
		s.endToolSpan(ctx, span, t.name, args, res, err)
		s.order.Await(ctx)
		return res, err
	}
}

// requireScope refuses a call whose caller lacks the scope need, when the
// transport checks scopes; nil otherwise. The HTTP transport answers 403
// before a call runs; this check, on the arguments the handler runs with,
// is what makes that answer true.
func (s *Server) requireScope(ctx context.Context, need Scope) *ErrorObject {
	name := inauth.MissingFrom(ctx, need)
	if name == "" {
		return nil
	}
	s.metrics.Refused("insufficient_scope")
	return &ErrorObject{Code: codes.AuthError, Message: "this call needs the scope " + name,
		Hint: "Your token does not carry " + name + "; ask for a token that does."}
}
