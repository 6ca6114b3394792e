// Package telemetry holds specgate's Prometheus collectors: tool calls by
// tool, endpoint, outcome and scope; each upstream attempt's time on the
// wire, its wait in the queue and the upstream's 429s; inbound HTTP
// requests by status and refusals by reason; limiter store errors and
// degradation; and, read when scraped, the limiter's queue depths and
// shadow budgets, beside the Go runtime's and the process's own. The MCP
// server counts into one Metrics and the HTTP transport serves its
// Registry at /metrics. It holds no state beyond the collectors.
package telemetry
