package main

import (
	"context"
	"os"
	"time"

	"github.com/specgate/specgate/internal/otlpexport"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// newTracing starts OpenTelemetry tracing when OTEL_EXPORTER_OTLP_ENDPOINT
// (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, else when the config's
// otlp_endpoint is: spans go over OTLP/HTTP (protobuf) through
// otlpexport, configured by the standard OTEL_* variables (headers,
// timeout, compression, certificates, OTEL_SERVICE_NAME). With neither, it
// returns a nil tracer: no spans, no cost. The returned func flushes and
// stops the exporter.
func newTracing(ctx context.Context, configEndpoint string) (trace.Tracer, func(), error) {
	opts, on, err := otlpexport.FromEnv(otlpexport.Env{Getenv: os.Getenv, ReadFile: os.ReadFile}, configEndpoint)
	if err != nil || !on {
		return nil, func() {}, err
	}
	exp, err := otlpexport.New(opts)
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
