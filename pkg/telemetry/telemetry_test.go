package telemetry

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
)

func TestMetricsCountWhatTheyAreTold(t *testing.T) {
	m := NewMetrics()
	m.CountCall("invoke", "petstore.getPet", "ok", "")
	m.CountCall("invoke", "petstore.getPet", "rate_limit", "upstream")
	m.CountCall("invoke", "petstore.getPet", "rate_limit", "upstream")
	m.ObserveAttempt("petstore", 1500*time.Millisecond, 20*time.Millisecond, &invoke.Result{StatusCode: http.StatusTooManyRequests})
	m.ObserveAttempt("petstore", 0, 10*time.Millisecond, &invoke.Result{StatusCode: http.StatusOK})
	m.ObserveAttempt("petstore", 0, 10*time.Millisecond, nil) // no answer: timed, not a 429
	m.ObserveStoreError("admit")
	m.Refused("origin")
	m.CountInbound(401)
	m.CountInbound(401)

	if got := testutil.ToFloat64(m.calls.WithLabelValues("invoke", "petstore.getPet", "rate_limit", "upstream")); got != 2 {
		t.Errorf("rate-limited invokes = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.upstream429.WithLabelValues("petstore")); got != 1 {
		t.Errorf("429s = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(m.upstream, "specgate_upstream_request_duration_seconds"); got != 1 {
		t.Errorf("latency series = %d, want 1 (one upstream)", got)
	}
	if got := testutil.ToFloat64(m.inbound.WithLabelValues("401")); got != 2 {
		t.Errorf("inbound 401s = %v, want 2", got)
	}
	want := `
# HELP specgate_queue_wait_seconds Time an admitted call waited for its upstream's budget, by upstream.
# TYPE specgate_queue_wait_seconds histogram
specgate_queue_wait_seconds_bucket{upstream="petstore",le="0"} 2
specgate_queue_wait_seconds_bucket{upstream="petstore",le="0.01"} 2
specgate_queue_wait_seconds_bucket{upstream="petstore",le="0.05"} 2
specgate_queue_wait_seconds_bucket{upstream="petstore",le="0.1"} 2
specgate_queue_wait_seconds_bucket{upstream="petstore",le="0.25"} 2
specgate_queue_wait_seconds_bucket{upstream="petstore",le="0.5"} 2
specgate_queue_wait_seconds_bucket{upstream="petstore",le="1"} 2
specgate_queue_wait_seconds_bucket{upstream="petstore",le="2.5"} 3
specgate_queue_wait_seconds_bucket{upstream="petstore",le="5"} 3
specgate_queue_wait_seconds_bucket{upstream="petstore",le="10"} 3
specgate_queue_wait_seconds_bucket{upstream="petstore",le="30"} 3
specgate_queue_wait_seconds_bucket{upstream="petstore",le="60"} 3
specgate_queue_wait_seconds_bucket{upstream="petstore",le="+Inf"} 3
specgate_queue_wait_seconds_sum{upstream="petstore"} 1.5
specgate_queue_wait_seconds_count{upstream="petstore"} 3
# HELP specgate_store_errors_total Errors of the limiter store (Redis), by operation.
# TYPE specgate_store_errors_total counter
specgate_store_errors_total{op="admit"} 1
# HELP specgate_inbound_refusals_total Inbound HTTP requests or tool calls refused, by reason.
# TYPE specgate_inbound_refusals_total counter
specgate_inbound_refusals_total{reason="origin"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"specgate_queue_wait_seconds", "specgate_store_errors_total", "specgate_inbound_refusals_total"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(m.Registry()); err != nil || len(problems) != 0 {
		t.Errorf("metric lint: %v %v", problems, err)
	}
}

func TestMetricsReadTheLimiterAndTheStoreWhenScraped(t *testing.T) {
	m := NewMetrics()
	degraded := `
# HELP specgate_store_degraded 1 while the shared store is unreachable and this replica runs on its fallback share.
# TYPE specgate_store_degraded gauge
specgate_store_degraded %d
`
	gauge := func(v int) *strings.Reader {
		return strings.NewReader(strings.ReplaceAll(degraded, "%d", string(rune('0'+v))))
	}
	if err := testutil.GatherAndCompare(m.Registry(), gauge(0), "specgate_store_degraded"); err != nil {
		t.Errorf("without a store: %v", err)
	}
	down := true
	m.SetDegraded(func() (bool, string) { return down, "redis unreachable" })
	if err := testutil.GatherAndCompare(m.Registry(), gauge(1), "specgate_store_degraded"); err != nil {
		t.Errorf("store down: %v", err)
	}
	down = false
	if err := testutil.GatherAndCompare(m.Registry(), gauge(0), "specgate_store_degraded"); err != nil {
		t.Errorf("store back: %v", err)
	}

	if n := testutil.CollectAndCount(m.Registry(), "specgate_queue_depth"); n != 0 {
		t.Errorf("queue depth without a limiter: %d series", n)
	}
	l, err := ratelimit.New(ratelimit.Options{Budgets: []ratelimit.Budget{
		{Match: "petstore", Requests: 5, Window: time.Minute},
		{Match: "github", Requests: 5, Window: time.Minute},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, up := range []string{"petstore", "github"} {
		tk, err := l.AdmitAt(ratelimit.Request{Endpoint: up + ".op", Upstream: up}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		tk.Release()
	}
	m.SetLimiter(l)
	if n := testutil.CollectAndCount(m.Registry(), "specgate_queue_depth"); n != 2 {
		t.Errorf("queue depth series = %d, want one per upstream (2)", n)
	}
}

func TestSpansCarryTheCallersTraceAndNoArgument(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	header := http.Header{"Traceparent": {parent}}

	ctx, span := StartToolSpan(context.Background(), tr, "invoke", header, nil)
	ep := &spec.Endpoint{ID: "petstore.getPet", Method: "GET", Path: "/pets/{petId}"}
	TraceAttempt(ctx, tr, ep, "petstore", 2*time.Second, 30*time.Millisecond, &invoke.Result{StatusCode: 429})
	TraceAttempt(ctx, tr, ep, "petstore", 0, 20*time.Millisecond, &invoke.Result{StatusCode: 200})
	EndToolSpan(ctx, span, ep.ID, "ok")

	spans := rec.Ended()
	names := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		names[s.Name()] = s
	}
	if len(spans) != 4 || names["tools/call invoke"] == nil || names["queue wait"] == nil || names["upstream GET"] == nil {
		var got []string
		for _, s := range spans {
			got = append(got, s.Name())
		}
		t.Fatalf("spans = %v, want the call, one queue wait and two attempts", got)
	}
	call := names["tools/call invoke"]
	if got := call.SpanContext().TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace id = %s, want the caller's", got)
	}
	if got := call.Parent().SpanID().String(); got != "00f067aa0ba902b7" {
		t.Errorf("parent span = %s, want the caller's", got)
	}
	attrs := attrMap(call.Attributes())
	if attrs["specgate.attempts"] != "2" || attrs["specgate.queue_wait_seconds"] != "2" || attrs["specgate.outcome"] != "ok" {
		t.Errorf("call span attributes = %v", attrs)
	}
	if q := names["queue wait"]; q.EndTime().Sub(q.StartTime()) != 2*time.Second {
		t.Errorf("queue wait span lasts %v, want 2s", q.EndTime().Sub(q.StartTime()))
	}
	for _, s := range spans {
		if s.Name() != "upstream GET" {
			continue
		}
		a := attrMap(s.Attributes())
		if a["url.template"] != "/pets/{petId}" || s.SpanKind() != trace.SpanKindClient {
			t.Errorf("attempt span = %v, kind %v", a, s.SpanKind())
		}
		if (a["http.response.status_code"] == "429") != (s.Status().Code == codes.Error) {
			t.Errorf("attempt with status %s has span status %v", a["http.response.status_code"], s.Status())
		}
	}

	// A failed call: an error status and error.type; the meta's trace
	// context wins over the header's.
	ctx, span = StartToolSpan(context.Background(), tr, "search", header,
		map[string]any{"traceparent": "00-11111111111111111111111111111111-2222222222222222-01"})
	EndToolSpan(ctx, span, "", "invalid_arguments")
	last := rec.Ended()[len(rec.Ended())-1]
	if last.SpanContext().TraceID().String() != "11111111111111111111111111111111" {
		t.Errorf("trace id = %s, want _meta's", last.SpanContext().TraceID())
	}
	if a := attrMap(last.Attributes()); a["error.type"] != "invalid_arguments" || last.Status().Code != codes.Error || a["specgate.endpoint.id"] != "" {
		t.Errorf("failed call span = %v, status %v", a, last.Status())
	}
}

func TestNoTracerRecordsNothing(t *testing.T) {
	ctx, span := StartToolSpan(context.Background(), nil, "invoke", nil, nil)
	if span.SpanContext().IsValid() || span.IsRecording() {
		t.Errorf("a nil tracer started a span: %v", span.SpanContext())
	}
	TraceAttempt(ctx, nil, &spec.Endpoint{ID: "x"}, "u", time.Second, time.Second, nil)
	EndToolSpan(ctx, span, "x", "ok")
	if _, s := TracerOr(nil).Start(ctx, "x"); s.IsRecording() {
		t.Error("TracerOr(nil) records")
	}
}

func attrMap(kvs []attribute.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}
