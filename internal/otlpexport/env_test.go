package otlpexport

import (
	"maps"
	"os"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) Env {
	return Env{Getenv: func(k string) string { return m[k] }, ReadFile: os.ReadFile}
}

// The variables the SDK's OTLP/HTTP exporter read still configure the
// exporter, the TRACES_ forms winning, and the config's endpoint applies
// only when no endpoint variable is set.
func TestFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		base    string
		want    Options
		off     bool
		wantErr string
	}{
		{name: "nothing set", off: true},
		{name: "config endpoint", base: "http://127.0.0.1:4318/", want: Options{URL: "http://127.0.0.1:4318/v1/traces"}},
		{name: "config endpoint with a path", base: "https://otel.example/ingest", want: Options{URL: "https://otel.example/ingest/v1/traces"}},
		{name: "the variable wins over the config",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
			base: "http://127.0.0.1:4318", want: Options{URL: "http://collector:4318/v1/traces"}},
		{name: "traces endpoint is used as is",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:9999/custom"},
			want: Options{URL: "http://traces:9999/custom"}},
		{name: "headers, timeout, gzip",
			env: map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
				"OTEL_EXPORTER_OTLP_HEADERS":  "api-key=s%20ecret, x-team = core",
				"OTEL_EXPORTER_OTLP_TIMEOUT":  "2500", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
			},
			want: Options{URL: "http://collector:4318/v1/traces", Headers: map[string]string{"Api-Key": "s ecret", "X-Team": "core"}, Timeout: 2500 * time.Millisecond, Gzip: true}},
		{name: "traces headers replace the general ones",
			env: map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_HEADERS": "a=1",
				"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "100",
			},
			want: Options{URL: "http://collector:4318/v1/traces", Headers: map[string]string{"B": "2"}, Timeout: 100 * time.Millisecond}},
		{name: "no scheme", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, wantErr: "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL"},
		{name: "bad timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, wantErr: "OTEL_EXPORTER_OTLP_TIMEOUT must be a number of milliseconds"},
		{name: "bad header names no value", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "ok=1,token-only-s3cret"}, wantErr: "OTEL_EXPORTER_OTLP_HEADERS: entry 2 is not name=value"},
		{name: "missing certificate", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, wantErr: "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{name: "client key without certificate", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_CLIENT_KEY": "/k.pem"}, wantErr: "go together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, on, err := FromEnv(envOf(tt.env), tt.base)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error shows a header value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if on == tt.off {
				t.Fatalf("on = %v", on)
			}
			if got.URL != tt.want.URL || got.Timeout != tt.want.Timeout || got.Gzip != tt.want.Gzip || !maps.Equal(got.Headers, tt.want.Headers) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
