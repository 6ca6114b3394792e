package mcpserver

import (
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/specgate/specgate/pkg/serve"
)

// Over streamable HTTP, a W3C traceparent header with no _meta one is the
// tool call span's parent, and the upstream attempt is the call's child.
func TestTracingParentFromHeader(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f := newHTTPFixtureOn(t, serve.Options{}, 0, nil, func(o *Options) { o.Tracer = tp.Tracer("test") })

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	body := toolsCall(1, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}})
	resp, out := f.post(t, "", body, "traceparent", "00-"+traceID+"-"+parentID+"-01")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	var call, attempt sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "tools/call invoke":
			call = s
		case "upstream GET":
			attempt = s
		}
	}
	if call == nil || attempt == nil {
		t.Fatalf("spans %d, no tools/call invoke or upstream GET", len(rec.Ended()))
	}
	if got := call.SpanContext().TraceID().String(); got != traceID {
		t.Errorf("trace id %s, want the header's %s", got, traceID)
	}
	if got := call.Parent().SpanID().String(); got != parentID || !call.Parent().IsRemote() {
		t.Errorf("parent %s (remote %v), want the header's %s", got, call.Parent().IsRemote(), parentID)
	}
	if attempt.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Errorf("the upstream attempt's parent is %s, not the tool call's span", attempt.Parent().SpanID())
	}
}
