package telemetry

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// Metrics are a server's Prometheus collectors, in a registry of its own so
// that two Servers in one process (tests) never clash. They are built
// before the MCP server (NewMetrics) so that parts made earlier, such as the
// limiter store's error hook, count into them too; the MCP server is
// handed them through its options, and the HTTP transport serves them at
// /metrics. One Metrics serves one server. Metrics are
// safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	calls        *prometheus.CounterVec
	upstream     *prometheus.HistogramVec
	queueWait    *prometheus.HistogramVec
	upstream429  *prometheus.CounterVec
	storeErrors  *prometheus.CounterVec
	refusals     *prometheus.CounterVec
	inbound      *prometheus.CounterVec
	degradedHook atomic.Pointer[func() (bool, string)]
	// limiter is the MCP server's, its queues read when scraped; nil until the
	// server is built with one (SetLimiter).
	limiter atomic.Pointer[ratelimit.Limiter]
}

// NewMetrics returns a fresh set of collectors in a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "specgate_tool_calls_total",
		Help: "Tool calls by tool, endpoint (invoke only), outcome code (ok or an error code) and scope.",
	}, []string{"tool", "endpoint", "code", "scope"})
	m.upstream = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "specgate_upstream_request_duration_seconds",
		Help:    "Time of one attempt on the wire to an upstream, by upstream.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"upstream"})
	m.queueWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "specgate_queue_wait_seconds",
		Help:    "Time an admitted call waited for its upstream's budget, by upstream.",
		Buckets: []float64{0, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"upstream"})
	m.upstream429 = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "specgate_upstream_rate_limited_total",
		Help: "Answers of 429 Too Many Requests from an upstream, by upstream.",
	}, []string{"upstream"})
	m.storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "specgate_store_errors_total",
		Help: "Errors of the limiter store (Redis), by operation.",
	}, []string{"op"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "specgate_inbound_refusals_total",
		Help: "Inbound HTTP requests or tool calls refused, by reason.",
	}, []string{"reason"})
	m.inbound = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "specgate_http_requests_total",
		Help: "Inbound HTTP requests to /mcp by status code.",
	}, []string{"code"})
	m.reg.MustRegister(m.calls, m.upstream, m.queueWait, m.upstream429, m.storeErrors, m.refusals, m.inbound,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "specgate_store_degraded",
			Help: "1 while the shared store is unreachable and this replica runs on its fallback share.",
		}, func() float64 {
			if f := m.degradedHook.Load(); f != nil {
				if d, _ := (*f)(); d {
					return 1
				}
			}
			return 0
		}),
	)
	m.reg.MustRegister(queueDepthCollector{m: m, desc: prometheus.NewDesc("specgate_queue_depth",
		"Calls waiting now for an upstream's budget, by upstream.", []string{"upstream"}, nil),
		shadow: prometheus.NewDesc("specgate_shadow_would_refuse_total",
			"Calls a shadow budget (enforce: false) would have refused or queued, by upstream and the limit that would have held them.",
			[]string{"upstream", "kind"}, nil)})
	// the Go runtime's and the process's own: go_goroutines, go_memstats_*,
	// process_resident_memory_bytes, process_open_fds
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// queueDepthCollector reads the limiter's queues when scraped. Without a
// limiter it yields nothing, and the registry leaves the family out.
type queueDepthCollector struct {
	m      *Metrics
	desc   *prometheus.Desc
	shadow *prometheus.Desc
}

func (c queueDepthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.shadow }

func (c queueDepthCollector) Collect(ch chan<- prometheus.Metric) {
	l := c.m.limiter.Load()
	if l == nil {
		return
	}
	for _, u := range l.StatusAt(time.Now(), nil).Upstreams {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(u.QueueDepth), u.Key)
		if u.Shadow != nil {
			for _, k := range []ratelimit.Kind{ratelimit.KindRequests, ratelimit.KindInterval, ratelimit.KindConcurrency} {
				ch <- prometheus.MustNewConstMetric(c.shadow, prometheus.CounterValue, float64(u.Shadow.ByKind[k]), u.Key, string(k))
			}
			ch <- prometheus.MustNewConstMetric(c.shadow, prometheus.CounterValue, float64(u.Shadow.PerPrincipal), u.Key, "per_principal")
		}
	}
}

// Registry returns the Prometheus registry of the metrics, for serving
// elsewhere or adding collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveStoreError counts an error of the limiter store; op names what
// failed (for example "admit" or "connect"). Give it to the store as its
// error hook.
func (m *Metrics) ObserveStoreError(op string) { m.storeErrors.WithLabelValues(op).Inc() }

// ObserveAttempt records one attempt of a governed call: how long it waited
// in the queue, its time on the wire and whether the upstream answered 429.
func (m *Metrics) ObserveAttempt(upstream string, queueWait, latency time.Duration, res *invoke.Result) {
	m.queueWait.WithLabelValues(upstream).Observe(queueWait.Seconds())
	m.upstream.WithLabelValues(upstream).Observe(latency.Seconds())
	if res != nil && res.StatusCode == http.StatusTooManyRequests {
		m.upstream429.WithLabelValues(upstream).Inc()
	}
}

// Refused counts an inbound HTTP request or tool call refused for reason.
func (m *Metrics) Refused(reason string) { m.refusals.WithLabelValues(reason).Inc() }

// CountCall counts a tool call by tool, endpoint (a catalog id, for
// invoke), outcome code ("ok" or the error's) and the error's scope.
func (m *Metrics) CountCall(tool, endpoint, code, scope string) {
	m.calls.WithLabelValues(tool, endpoint, code, scope).Inc()
}

// CountInbound counts an HTTP request to /mcp by the status it got.
func (m *Metrics) CountInbound(status int) { m.inbound.WithLabelValues(strconv.Itoa(status)).Inc() }

// SetLimiter has the queue depths and shadow counts of l read when
// scraped.
func (m *Metrics) SetLimiter(l *ratelimit.Limiter) { m.limiter.Store(l) }

// SetDegraded has specgate_store_degraded read from degraded when scraped.
func (m *Metrics) SetDegraded(degraded func() (bool, string)) { m.degradedHook.Store(&degraded) }
