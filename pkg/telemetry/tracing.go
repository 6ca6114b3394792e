package telemetry

import (
	"context"
	"net/http"
	"sync"
	"time"

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

// TracerOr returns t, or a tracer that records nothing when t is nil.
func TracerOr(t trace.Tracer) trace.Tracer {
	if t == nil {
		return noopTracer
	}
	return t
}

// callTrace sums what a tool call's governed attempts did, for its span.
type callTrace struct {
	mu        sync.Mutex
	attempts  int
	queueWait time.Duration
}

type callTraceKey struct{}

// StartToolSpan starts with tr the span of one call of the tool name,
// whose request carries header and _meta fields meta. With a nil tr it
// starts none.
func StartToolSpan(ctx context.Context, tr trace.Tracer, name string, header http.Header, meta map[string]any) (context.Context, trace.Span) {
	if tr == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	carrier := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v := header.Get(k); v != "" {
			carrier[k] = v
		}
		if v, ok := meta[k].(string); ok && v != "" {
			carrier[k] = v
		}
	}
	ctx = propagation.TraceContext{}.Extract(ctx, carrier)
	ctx = context.WithValue(ctx, callTraceKey{}, &callTrace{})
	return tr.Start(ctx, "tools/call "+name,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", name)))
}

// EndToolSpan ends a tool call's span with its endpoint ("" when it names
// none) and outcome code ("ok" or the error's).
func EndToolSpan(ctx context.Context, span trace.Span, endpoint, code string) {
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

// TraceAttempt records with tr one governed attempt after the fact: its
// wait in the queue and the upstream call, as children of the tool call's
// span. With a nil tr it records nothing.
func TraceAttempt(ctx context.Context, tr trace.Tracer, e *spec.Endpoint, up string, queueWait, latency time.Duration, res *invoke.Result) {
	if tr == nil {
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
		_, q := tr.Start(ctx, "queue wait", trace.WithTimestamp(sent.Add(-queueWait)), trace.WithAttributes(attrs...))
		q.End(trace.WithTimestamp(sent))
	}
	_, a := tr.Start(ctx, "upstream "+e.Method, trace.WithSpanKind(trace.SpanKindClient),
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
