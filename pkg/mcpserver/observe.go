package mcpserver

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/spec"
	"github.com/specgate/specgate/pkg/telemetry"
)

// The server's metrics and spans (package telemetry): one span per tool
// call, with children for queue waits, upstream attempts and the shaping of
// invoke's answer, and each call counted by tool, endpoint and outcome.

func (s *Server) tracer() trace.Tracer { return telemetry.TracerOr(s.opts.Tracer) }

// startToolSpan starts the span of one tool call.
func (s *Server) startToolSpan(ctx context.Context, name string, req mcp.CallToolRequest) (context.Context, trace.Span) {
	var meta map[string]any
	if req.Params.Meta != nil {
		meta = req.Params.Meta.AdditionalFields
	}
	return telemetry.StartToolSpan(ctx, s.opts.Tracer, name, req.Header, meta)
}

// endToolSpan ends it with the call's outcome.
func (s *Server) endToolSpan(ctx context.Context, span trace.Span, name string, args any, res *mcp.CallToolResult, err error) {
	if s.opts.Tracer == nil {
		return
	}
	endpoint, code, _ := s.callLabels(name, args, res, err)
	telemetry.EndToolSpan(ctx, span, endpoint, code)
}

// traceAttempt records one governed attempt as children of the tool
// call's span.
func (s *Server) traceAttempt(ctx context.Context, e *spec.Endpoint, up string, queueWait, latency time.Duration, res *invoke.Result) {
	telemetry.TraceAttempt(ctx, s.opts.Tracer, e, up, queueWait, latency, res)
}

// countCall counts a call by tool, endpoint, code and scope.
func (s *Server) countCall(name string, args any, res *mcp.CallToolResult, err error) {
	endpoint, code, scope := s.callLabels(name, args, res, err)
	s.metrics.CountCall(name, endpoint, code, scope)
}

// callLabels names a tool call's endpoint (a catalog id, for invoke), its
// outcome code ("ok" or the error's) and the error's scope.
func (s *Server) callLabels(name string, args any, res *mcp.CallToolResult, err error) (endpoint, code, scope string) {
	if name == "invoke" {
		endpoint = "unknown"
		if a, ok := args.(*InvokeArgs); ok {
			// Only ids of the catalog become labels: the model's typos must
			// not grow the series without bound.
			if st := s.state.Load(); st != nil && st.cat != nil {
				if _, found := st.cat.Lookup(a.EndpointID); found {
					endpoint = a.EndpointID
				}
			}
		}
	}
	code = "ok"
	switch {
	case err != nil:
		code = "internal_error"
	case res != nil && res.IsError:
		code = "tool_error"
		if env, ok := res.StructuredContent.(errorEnvelope); ok && env.Error != nil {
			code, scope = env.Error.Code, env.Error.Scope
		}
	}
	return endpoint, code, scope
}
