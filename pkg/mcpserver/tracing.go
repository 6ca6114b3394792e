package mcpserver

import (
	"context"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/spec"
)

// Spans: one per tool call ("tools/call NAME"), whose parent is the W3C
// trace context the request carries (in _meta, else its HTTP headers),
// with children for each wait in a queue, each upstream attempt and the
// shaping of invoke's answer. Attributes name the endpoint, the
// upstream, the status, the wait, the attempts and the error code, never
// an argument's value or a credential.

var noopTracer = noop.NewTracerProvider().Tracer("")

func (s *Server) tracer() trace.Tracer {
	if s.opts.Tracer == nil {
		return noopTracer
	}
	return s.opts.Tracer
}

// callTrace sums what a tool call's governed attempts did, for its span.
type callTrace struct {
	mu        sync.Mutex
	attempts  int
	queueWait time.Duration
}

type callTraceKey struct{}

// startToolSpan starts the span of one tool call.
func (s *Server) startToolSpan(ctx context.Context, name string, req mcp.CallToolRequest) (context.Context, trace.Span) {
	if s.opts.Tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	carrier := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v := req.Header.Get(k); v != "" {
			carrier[k] = v
		}
		if m := req.Params.Meta; m != nil {
			if v, ok := m.AdditionalFields[k].(string); ok && v != "" {
				carrier[k] = v
			}
		}
	}
	ctx = propagation.TraceContext{}.Extract(ctx, carrier)
	ctx = context.WithValue(ctx, callTraceKey{}, &callTrace{})
	return s.opts.Tracer.Start(ctx, "tools/call "+name,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", name)))
}

// endToolSpan ends it with the call's outcome.
func (s *Server) endToolSpan(ctx context.Context, span trace.Span, name string, args any, res *mcp.CallToolResult, err error) {
	if s.opts.Tracer == nil {
		return
	}
	endpoint, code, _ := s.callLabels(name, args, res, err)
	if endpoint != "" {
		span.SetAttributes(attribute.String("specgate.endpoint.id", endpoint))
	}
	if ct, ok := ctx.Value(callTraceKey{}).(*callTrace); ok {
		ct.mu.Lock()
		if ct.attempts > 0 {
			span.SetAttributes(attribute.Int("specgate.attempts", ct.attempts),
				attribute.Float64("specgate.queue_wait_seconds", ct.queueWait.Seconds()))
		}
		ct.mu.Unlock()
	}
	span.SetAttributes(attribute.String("specgate.outcome", code))
	if code != "ok" {
		span.SetAttributes(attribute.String("error.type", code))
		span.SetStatus(codes.Error, code)
	}
	span.End()
}

// traceAttempt records one governed attempt after the fact: its wait in
// the queue and the upstream call, as children of the tool call's span.
func (s *Server) traceAttempt(ctx context.Context, e *spec.Endpoint, up string, queueWait, latency time.Duration, res *invoke.Result) {
	if s.opts.Tracer == nil {
		return
	}
	if ct, ok := ctx.Value(callTraceKey{}).(*callTrace); ok {
		ct.mu.Lock()
		ct.attempts++
		ct.queueWait += queueWait
		ct.mu.Unlock()
	}
	end := time.Now()
	sent := end.Add(-latency)
	attrs := []attribute.KeyValue{attribute.String("specgate.endpoint.id", e.ID), attribute.String("specgate.upstream", up)}
	if queueWait > 0 {
		_, q := s.opts.Tracer.Start(ctx, "queue wait", trace.WithTimestamp(sent.Add(-queueWait)), trace.WithAttributes(attrs...))
		q.End(trace.WithTimestamp(sent))
	}
	_, a := s.opts.Tracer.Start(ctx, "upstream "+e.Method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(sent), trace.WithAttributes(attrs...))
	a.SetAttributes(attribute.String("http.request.method", e.Method), attribute.String("url.template", e.Path))
	if res != nil {
		a.SetAttributes(attribute.Int("http.response.status_code", res.StatusCode))
		if res.StatusCode >= 400 {
			a.SetStatus(codes.Error, "")
		}
	} else {
		a.SetStatus(codes.Error, "no answer")
	}
	a.End(trace.WithTimestamp(end))
}
