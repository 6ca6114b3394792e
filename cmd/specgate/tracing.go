package main

import (
	"context"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// newTracing starts OpenTelemetry tracing when OTEL_EXPORTER_OTLP_ENDPOINT
// (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, else when the config's
// otlp_endpoint is: spans go over OTLP/HTTP, configured by the standard
// OTEL_* variables (headers, timeout, OTEL_SERVICE_NAME). With neither, it
// returns a nil tracer: no spans, no cost. The returned func flushes and
// stops the exporter.
func newTracing(ctx context.Context, configEndpoint string) (trace.Tracer, func(), error) {
	var opts []otlptracehttp.Option
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		if configEndpoint == "" {
			return nil, func() {}, nil
		}
		// As the variable's value is: a base URL the traces path is added to.
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(configEndpoint, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "specgate"), attribute.String("service.version", buildVersion())),
		resource.WithFromEnv())
	if err != nil {
		return nil, nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	stop := func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
	}
	return tp.Tracer("github.com/specgate/specgate"), stop, nil
}
