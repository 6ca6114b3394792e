package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an in-process OTLP/HTTP trace receiver on loopback.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	attrs []string // every resource and span attribute, "key=value"
}

func startReceiver(t *testing.T) (*httptest.Server, *otlpReceiver) {
	rc := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				rc.attrs = append(rc.attrs, kv.Key+"="+kv.GetValue().String())
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					rc.spans = append(rc.spans, sp)
					for _, kv := range sp.Attributes {
						rc.attrs = append(rc.attrs, kv.Key+"="+kv.GetValue().String())
					}
				}
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv, rc
}

func (rc *otlpReceiver) byName(name string) []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range rc.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			v := kv.GetValue()
			switch {
			case v.GetStringValue() != "":
				return v.GetStringValue()
			default:
				return strings.TrimSpace(v.String())
			}
		}
	}
	return ""
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, a governed invoke is a span with a
// child per upstream attempt and one for the answer's shaping, sent over
// OTLP/HTTP before the command returns; no argument value or credential
// is in any attribute.
func TestTracingInvoke(t *testing.T) {
	recv, rc := startReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("SG_TRACE_KEY", "sgsecret-trace-31ae")
	up, _ := petUpstream(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"invoke", "--spec", "../../testdata/petstore-v3.yaml", "--base-url", up.URL + "/api/v3",
		"petstore-v3.getPetById", "--params", `{"petId": 424242}`}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("invoke: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	calls := rc.byName("tools/call invoke")
	attempts := rc.byName("upstream GET")
	shapes := rc.byName("shape answer")
	if len(calls) != 1 || len(attempts) != 1 || len(shapes) != 1 {
		t.Fatalf("spans: %d tools/call invoke, %d upstream GET, %d shape answer; want 1 each", len(calls), len(attempts), len(shapes))
	}
	call := calls[0]
	for _, child := range []*tracepb.Span{attempts[0], shapes[0]} {
		if !bytes.Equal(child.ParentSpanId, call.SpanId) || !bytes.Equal(child.TraceId, call.TraceId) {
			t.Errorf("%s is not a child of the tool call's span", child.Name)
		}
	}
	for k, want := range map[string]string{
		"specgate.endpoint.id": "petstore-v3.getPetById", "specgate.outcome": "ok", "gen_ai.tool.name": "invoke",
	} {
		if got := attr(call, k); got != want {
			t.Errorf("tool span %s = %q, want %q", k, got, want)
		}
	}
	if got := attr(call, "specgate.attempts"); !strings.Contains(got, "1") {
		t.Errorf("specgate.attempts = %q", got)
	}
	if got := attr(attempts[0], "http.response.status_code"); !strings.Contains(got, "200") {
		t.Errorf("attempt status = %q", got)
	}
	if got := attr(attempts[0], "url.template"); got != "/pet/{petId}" {
		t.Errorf("attempt url.template = %q", got)
	}
	if attempts[0].StartTimeUnixNano < call.StartTimeUnixNano || attempts[0].EndTimeUnixNano > call.EndTimeUnixNano {
		t.Error("the attempt's span is not within the call's")
	}
	rc.mu.Lock()
	all := strings.Join(rc.attrs, "\n")
	rc.mu.Unlock()
	if strings.Contains(all, "424242") || strings.Contains(all, "sgsecret") {
		t.Errorf("an argument value or secret is in an attribute:\n%s", all)
	}
	if !strings.Contains(all, `service.name=string_value:"specgate"`) {
		t.Errorf("no service.name resource attribute:\n%s", all)
	}
}

// A W3C traceparent in the request's _meta is the tool call span's parent;
// a failed call's span carries its error code.
func TestTracingParentFromMeta(t *testing.T) {
	recv, rc := startReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	c := newCommon("trace", io.Discard)
	if _, err := c.parse([]string{"--spec", "../../testdata/petstore-v3.yaml", "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	cl, a, err := inProcess(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req := mcp.CallToolRequest{}
	req.Params.Name = "inspect"
	req.Params.Arguments = map[string]any{"endpointId": "petstore-v3.nope"}
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + traceID + "-" + parentID + "-01"}}
	if _, err := cl.CallTool(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	a.stopTracing()
	spans := rc.byName("tools/call inspect")
	if len(spans) != 1 {
		t.Fatalf("%d inspect spans, want 1", len(spans))
	}
	s := spans[0]
	if hex.EncodeToString(s.TraceId) != traceID || hex.EncodeToString(s.ParentSpanId) != parentID {
		t.Errorf("span trace %x parent %x, want %s %s", s.TraceId, s.ParentSpanId, traceID, parentID)
	}
	if got := attr(s, "error.type"); got != "not_found" {
		t.Errorf("error.type = %q, want not_found", got)
	}
	if s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("status = %v, want error", s.Status)
	}
}

// Without the variable, no tracer is made.
func TestTracingOff(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tr, stop, err := newTracing(t.Context(), "")
	if err != nil || tr != nil {
		t.Errorf("tracer %v, err %v; want none", tr, err)
	}
	stop()
}

// A call held by an upstream budget gets a "queue wait" child as long as
// its wait, and the tool span's specgate.queue_wait_seconds.
func TestTracingQueueWait(t *testing.T) {
	recv, rc := startReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	up, _ := petUpstream(t)
	pet, err := filepath.Abs("../../testdata/petstore-v3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "specgate.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`rate_limit_interval: 0s
specs:
  - name: pet
    location: %q
    base_url: %q
upstreams:
  - match: %q
    requests_per_window: 1
    window: 300ms
    on_limit: wait
`, pet, up.URL+"/api/v3", strings.TrimPrefix(up.URL, "http://"))), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCommon("trace", io.Discard)
	if _, err := c.parse([]string{"--config", cfg, "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	cl, a, err := inProcess(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := callTool(t.Context(), cl, "invoke", map[string]any{"endpointId": "pet.getPetById", "parameters": map[string]any{"petId": 1}}, newFlags("invoke", nil, io.Discard)); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	a.stopTracing()
	waits := rc.byName("queue wait")
	if len(waits) != 1 {
		t.Fatalf("%d queue wait spans, want 1 (the second call's)", len(waits))
	}
	if d := waits[0].EndTimeUnixNano - waits[0].StartTimeUnixNano; d < uint64(100*time.Millisecond) {
		t.Errorf("queue wait span lasts %v, want most of the 300ms window", time.Duration(d))
	}
	var held *tracepb.Span
	for _, s := range rc.byName("tools/call invoke") {
		if bytes.Equal(s.SpanId, waits[0].ParentSpanId) {
			held = s
		}
	}
	if held == nil {
		t.Fatal("the queue wait span's parent is no tool call span")
	}
	if got := attr(held, "specgate.queue_wait_seconds"); got == "" || strings.Contains(got, "double_value:0 ") {
		t.Errorf("specgate.queue_wait_seconds = %q", got)
	}
}

// With no OTEL_ variable, the config's otlp_endpoint turns traces on; the
// spans go to its /v1/traces.
func TestTracingFromConfig(t *testing.T) {
	recv, rc := startReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	up, _ := petUpstream(t)
	pet, err := filepath.Abs("../../testdata/petstore-v3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "specgate.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("otlp_endpoint: %q\nspecs:\n  - name: pet\n    location: %q\n    base_url: %q\n",
		recv.URL+"/", pet, up.URL+"/api/v3")), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"invoke", "--config", cfg, "pet.getPetById", "--params", `{"petId": 1}`}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("invoke: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if n := len(rc.byName("tools/call invoke")); n != 1 {
		t.Errorf("%d tools/call invoke spans from the config's endpoint, want 1", n)
	}
	if n := len(rc.byName("upstream GET")); n != 1 {
		t.Errorf("%d upstream GET spans, want 1", n)
	}
}
