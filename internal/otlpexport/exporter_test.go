package otlpexport

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP/HTTP receiver on loopback that decodes each request
// with the collector's own types.
type receiver struct {
	mu   sync.Mutex
	reqs []*coltracepb.ExportTraceServiceRequest
	hdrs []http.Header
	// answer, when set, writes the receiver's answer instead of an empty 200.
	answer func(w http.ResponseWriter)
}

func startReceiver(t *testing.T) (*httptest.Server, *receiver) {
	t.Helper()
	rc := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, "bad gzip", http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, _ := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || proto.Unmarshal(raw, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, &req)
		rc.hdrs = append(rc.hdrs, r.Header.Clone())
		answer := rc.answer
		rc.mu.Unlock()
		if answer != nil {
			answer(w)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, rc
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = strings.TrimSpace(kv.GetValue().String())
	}
	return m
}

// A batch of spans reaches a receiver that decodes it with the collector's
// types: resource, scope, ids, parent, kind, attributes of each type,
// events, links and status, plain and gzipped, with the configured headers.
func TestExportDecodesAsCollectorRequest(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "gzip"}[gz], func(t *testing.T) {
			srv, rc := startReceiver(t)
			exp, err := New(Options{URL: srv.URL + "/v1/traces", Gzip: gz, Headers: map[string]string{"Authorization": "Bearer t0k"}})
			if err != nil {
				t.Fatal(err)
			}
			res := resource.NewSchemaless(attribute.String("service.name", "specgate"))
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
			tr := tp.Tracer("github.com/specgate/specgate", trace.WithInstrumentationVersion("v1"))
			ctx, parent := tr.Start(t.Context(), "tools/call invoke", trace.WithSpanKind(trace.SpanKindServer))
			linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}, Remote: true})
			_, child := tr.Start(ctx, "upstream GET", trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(trace.Link{SpanContext: linked}))
			child.SetAttributes(attribute.Int("http.response.status_code", 503), attribute.Bool("retried", true),
				attribute.Float64("specgate.queue_wait_seconds", 0.25), attribute.StringSlice("tags", []string{"a", "b"}))
			child.AddEvent("retry", trace.WithAttributes(attribute.Int("attempt", 2)))
			child.SetStatus(codes.Error, "upstream_unavailable")
			child.End()
			parent.End()
			if err := tp.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}

			rc.mu.Lock()
			defer rc.mu.Unlock()
			if len(rc.reqs) != 2 {
				t.Fatalf("%d requests, want 2 (a syncer sends each span)", len(rc.reqs))
			}
			h := rc.hdrs[0]
			if got := h.Get("Content-Type"); got != "application/x-protobuf" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := h.Get("Authorization"); got != "Bearer t0k" {
				t.Errorf("Authorization = %q", got)
			}
			c, p := spanOf(t, rc.reqs[0]), spanOf(t, rc.reqs[1])
			rs := rc.reqs[0].ResourceSpans[0]
			if got := attrs(rs.Resource.Attributes)["service.name"]; got != `string_value:"specgate"` {
				t.Errorf("resource service.name = %s", got)
			}
			if sc := rs.ScopeSpans[0].Scope; sc.Name != "github.com/specgate/specgate" || sc.Version != "v1" {
				t.Errorf("scope = %s %s", sc.Name, sc.Version)
			}
			if c.Name != "upstream GET" || c.Kind != tracepb.Span_SPAN_KIND_CLIENT || p.Kind != tracepb.Span_SPAN_KIND_SERVER {
				t.Errorf("spans %q %v, %q %v", c.Name, c.Kind, p.Name, p.Kind)
			}
			pc, cc := parent.SpanContext(), child.SpanContext()
			if tid, sid := cc.TraceID(), cc.SpanID(); !bytes.Equal(c.TraceId, tid[:]) || !bytes.Equal(c.SpanId, sid[:]) {
				t.Errorf("child ids %x %x", c.TraceId, c.SpanId)
			}
			if sid := pc.SpanID(); !bytes.Equal(c.ParentSpanId, sid[:]) || len(p.ParentSpanId) != 0 {
				t.Errorf("parent ids %x, root's %x", c.ParentSpanId, p.ParentSpanId)
			}
			if c.Flags&uint32(tracepb.SpanFlags_SPAN_FLAGS_TRACE_FLAGS_MASK) != 1 {
				t.Errorf("flags %x: not sampled", c.Flags)
			}
			want := map[string]string{
				"http.response.status_code":   "int_value:503",
				"retried":                     "bool_value:true",
				"specgate.queue_wait_seconds": "double_value:0.25",
				"tags":                        `array_value:{values:{string_value:"a"} values:{string_value:"b"}}`,
			}
			got := attrs(c.Attributes)
			for k, w := range want {
				if strings.Join(strings.Fields(got[k]), " ") != w {
					t.Errorf("attribute %s = %s, want %s", k, got[k], w)
				}
			}
			if c.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || c.Status.GetMessage() != "upstream_unavailable" {
				t.Errorf("status %v", c.Status)
			}
			if len(c.Events) != 1 || c.Events[0].Name != "retry" || attrs(c.Events[0].Attributes)["attempt"] != "int_value:2" {
				t.Errorf("events %v", c.Events)
			}
			if len(c.Links) != 1 || c.Links[0].TraceId[0] != 9 || c.Links[0].SpanId[0] != 8 {
				t.Errorf("links %v", c.Links)
			}
			if c.StartTimeUnixNano == 0 || c.EndTimeUnixNano < c.StartTimeUnixNano || c.StartTimeUnixNano < p.StartTimeUnixNano {
				t.Errorf("times %d-%d in %d-%d", c.StartTimeUnixNano, c.EndTimeUnixNano, p.StartTimeUnixNano, p.EndTimeUnixNano)
			}
		})
	}
}

func spanOf(t *testing.T, req *coltracepb.ExportTraceServiceRequest) *tracepb.Span {
	t.Helper()
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans[0].Spans) != 1 {
		t.Fatalf("request holds %v, want one resource, scope and span", req)
	}
	return req.ResourceSpans[0].ScopeSpans[0].Spans[0]
}

// Spans of two resources and two scopes are grouped resource, then scope.
func TestExportGroupsByResourceAndScope(t *testing.T) {
	srv, rc := startReceiver(t)
	exp, err := New(Options{URL: srv.URL + "/v1/traces"})
	if err != nil {
		t.Fatal(err)
	}
	var spans []sdktrace.ReadOnlySpan
	for _, svc := range []string{"a", "b"} {
		rec := sdktrace.NewSimpleSpanProcessor(&collect{spans: &spans})
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))))
		for _, scope := range []string{"one", "two", "one"} {
			_, s := tp.Tracer(scope).Start(t.Context(), scope)
			s.End()
		}
	}
	if err := exp.ExportSpans(t.Context(), spans); err != nil {
		t.Fatal(err)
	}
	req := rc.reqs[0]
	if len(req.ResourceSpans) != 2 {
		t.Fatalf("%d resources, want 2", len(req.ResourceSpans))
	}
	for _, rs := range req.ResourceSpans {
		if len(rs.ScopeSpans) != 2 || len(rs.ScopeSpans[0].Spans) != 2 || len(rs.ScopeSpans[1].Spans) != 1 {
			t.Errorf("resource %v: scopes not grouped", attrs(rs.Resource.Attributes))
		}
	}
}

type collect struct{ spans *[]sdktrace.ReadOnlySpan }

func (c *collect) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	*c.spans = append(*c.spans, s...)
	return nil
}
func (c *collect) Shutdown(context.Context) error { return nil }

// A receiver's partial success that rejected spans is reported.
func TestExportPartialSuccess(t *testing.T) {
	srv, rc := startReceiver(t)
	rc.answer = func(w http.ResponseWriter) {
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 1, ErrorMessage: "too old"}})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}
	exp, _ := New(Options{URL: srv.URL + "/v1/traces"})
	err := exp.ExportSpans(t.Context(), oneSpan(t))
	if err == nil || !strings.Contains(err.Error(), "rejected 1 spans: too old") {
		t.Errorf("err = %v", err)
	}
}

func oneSpan(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	var spans []sdktrace.ReadOnlySpan
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(&collect{spans: &spans})))
	_, s := tp.Tracer("t").Start(t.Context(), "s")
	s.End()
	return spans
}

// stub answers each request with the next status of its list (the last
// repeats) and records when each attempt came.
type stub struct {
	mu       sync.Mutex
	statuses []int
	header   http.Header
	at       []time.Time
}

func (s *stub) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	code := s.statuses[min(len(s.at), len(s.statuses)-1)]
	s.at = append(s.at, time.Now())
	return &http.Response{StatusCode: code, Header: s.header.Clone(), Body: io.NopCloser(strings.NewReader("busy")), Request: r}, nil
}

// Refusals of 429, 502, 503 and 504 are retried with a doubling backoff,
// a longer Retry-After winning, up to MaxAttempts; other answers are not.
func TestExportRetries(t *testing.T) {
	tests := []struct {
		name      string
		statuses  []int
		header    http.Header
		wantErr   bool
		wantWaits []time.Duration
	}{
		{"503 then ok", []int{503, 200}, nil, false, []time.Duration{time.Second}},
		{"429 with Retry-After", []int{429, 429, 200}, http.Header{"Retry-After": {"7"}}, false, []time.Duration{7 * time.Second, 7 * time.Second}},
		{"502 and 504 back off", []int{502, 504, 502, 200}, nil, false, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{"bounded", []int{503}, nil, true, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{"400 is not retried", []int{400}, nil, true, nil},
		{"500 is not retried", []int{500}, nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := &stub{statuses: tt.statuses, header: tt.header}
				exp, _ := New(Options{URL: "http://collector.test/v1/traces", Client: &http.Client{Transport: st}})
				err := exp.ExportSpans(t.Context(), oneSpan(t))
				if (err != nil) != tt.wantErr {
					t.Fatalf("err = %v, want error %v", err, tt.wantErr)
				}
				var waits []time.Duration
				for i := 1; i < len(st.at); i++ {
					waits = append(waits, st.at[i].Sub(st.at[i-1]))
				}
				if len(waits) != len(tt.wantWaits) {
					t.Fatalf("waits %v, want %v", waits, tt.wantWaits)
				}
				for i := range waits {
					if waits[i] != tt.wantWaits[i] {
						t.Errorf("waits %v, want %v", waits, tt.wantWaits)
						break
					}
				}
			})
		})
	}
}

// A Retry-After past the export's deadline ends the export at once rather
// than holding the batch processor until the deadline.
func TestExportRetryAfterPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &stub{statuses: []int{503}, header: http.Header{"Retry-After": {"120"}}}
		exp, _ := New(Options{URL: "http://collector.test/v1/traces", Client: &http.Client{Transport: st}})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		start := time.Now()
		err := exp.ExportSpans(ctx, oneSpan(t))
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != 503 || se.RetryAfter != 120*time.Second {
			t.Errorf("err = %v, want the 503 with its Retry-After", err)
		}
		if d := time.Since(start); d != 0 || len(st.at) != 1 {
			t.Errorf("waited %v over %d attempts, want none", d, len(st.at))
		}
	})
}

// Shutdown ends a retry wait in progress, and later batches are refused.
func TestShutdownEndsRetryWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &stub{statuses: []int{503}, header: http.Header{"Retry-After": {"10"}}}
		exp, _ := New(Options{URL: "http://collector.test/v1/traces", Client: &http.Client{Transport: st}})
		errc := make(chan error, 1)
		go func() { errc <- exp.ExportSpans(context.Background(), oneSpan(t)) }()
		synctest.Wait()
		if err := exp.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; !errors.Is(err, ErrShutdown) {
			t.Errorf("export in its retry wait: %v, want ErrShutdown", err)
		}
		if err := exp.ExportSpans(t.Context(), oneSpan(t)); !errors.Is(err, ErrShutdown) {
			t.Errorf("export after Shutdown: %v", err)
		}
	})
}

// An attempt the receiver does not answer ends at Timeout.
func TestExportTimeout(t *testing.T) {
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hold }))
	defer srv.Close()
	defer close(hold)
	exp, _ := New(Options{URL: srv.URL + "/v1/traces", Timeout: 50 * time.Millisecond})
	err := exp.ExportSpans(t.Context(), oneSpan(t))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the attempt's deadline", err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"5", 5 * time.Second}, {"0", 0}, {"-3", 0}, {"soon", 0}, {"99999999999", time.Hour},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		if got := retryAfter(tt.in, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// A receiver's answer is untrusted bytes: reading it never panics.
func FuzzPartialSuccess(f *testing.F) {
	ok, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "m"}})
	f.Add(ok)
	f.Add([]byte{0x0a, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = partialSuccess(b)
	})
}

func TestShortenCutsOnARuneBoundary(t *testing.T) {
	s := strings.Repeat("é", 150) // 2 bytes each
	got := shorten(s, 201)
	if !utf8.ValidString(got) || got != strings.Repeat("é", 100)+"…" {
		t.Errorf("shorten cut %q", got[len(got)-8:])
	}
	if got := shorten("short", 200); got != "short" {
		t.Errorf("a short text: %q", got)
	}
}
