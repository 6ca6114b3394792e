package mcpserver

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/telemetry"
)

// TestMetricsBuiltBeforeTheServerCountForIt: errors counted into metrics
// made before the server (the store's hook at start) show in the server's
// registry, and the queue depth appears only once a limiter is known.
func TestMetricsBuiltBeforeTheServerCountForIt(t *testing.T) {
	m := telemetry.NewMetrics()
	m.ObserveStoreError("redis")
	if n, err := series(m.Registry(), "specgate_queue_depth"); err != nil || n != 0 {
		t.Errorf("queue depth series without a limiter = %d, %v; want 0", n, err)
	}

	l, err := ratelimit.New(ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{{ID: "api.get", Upstream: "api.example.com:443"}},
		Budgets:   []ratelimit.Budget{{Match: "api.example.com:443", Requests: 5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Metrics: m, Caller: invoke.Caller{Governed: invoke.Governed{Limiter: l}}})
	if srv.Metrics().Registry() != m.Registry() {
		t.Fatal("the server does not use the metrics it was given")
	}
	srv.Metrics().ObserveStoreError("redis")
	if n, err := series(m.Registry(), "specgate_store_errors_total"); err != nil || n != 1 {
		t.Errorf("store error series = %d, %v; want 1", n, err)
	}
	mfs, _ := m.Registry().Gather()
	for _, mf := range mfs {
		if mf.GetName() == "specgate_store_errors_total" {
			if got := mf.GetMetric()[0].GetCounter().GetValue(); got != 2 {
				t.Errorf("store errors = %v, want 2", got)
			}
		}
	}
	if n, err := series(srv.Metrics().Registry(), "specgate_queue_depth"); err != nil || n != 1 {
		t.Errorf("queue depth series = %d, %v; want 1", n, err)
	}

	if New(Options{}).Metrics().Registry() == m.Registry() {
		t.Error("a server without Options.Metrics shares another's registry")
	}
}

// series counts the series of the metric family name in reg.
func series(reg *prometheus.Registry, name string) (int, error) {
	mfs, err := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric()), err
		}
	}
	return 0, err
}
