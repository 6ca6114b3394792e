package otlpexport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/specgate/specgate/internal/otlpexport"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The exporter behind a tracer provider's batcher: spans reach the
// receiver's /v1/traces when the provider shuts down.
func ExampleNew() {
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					fmt.Printf("%s %s: %q\n", r.Header.Get("Content-Type"), r.URL.Path, s.Name)
				}
			}
		}
	}))
	defer recv.Close()

	opts, on, err := otlpexport.FromEnv(otlpexport.Env{Getenv: func(string) string { return "" }}, recv.URL)
	if err != nil || !on {
		fmt.Println(on, err)
		return
	}
	exp, err := otlpexport.New(opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	_, span := tp.Tracer("example").Start(context.Background(), "tools/call search")
	span.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output: application/x-protobuf /v1/traces: "tools/call search"
}
