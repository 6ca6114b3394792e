// Package codes holds the closed set of error codes the model reads, as
// DESIGN.md's table of errors lists them: the "code" of every error object
// a tool answers with, and of every Error a script's failed api call
// throws. They are defined here only. The packages that make calls
// (invoke, ratelimit, answer, script) return typed errors and name a code
// only where an answer leaves them whole (a script's thrown Error, the
// worker's pipe, a run's record with no answer); package mcpserver turns
// every other error into its code at the tool boundary. The package imports nothing, so any package may use it.
package codes

// The codes, one per row of the error table.
const (
	// RateLimit: specgate refused the call (cooldown, budget, pacing).
	RateLimit = "rate_limit"
	// UpstreamRateLimit: the upstream said 429 (or a GitHub-style 403)
	// and no retry fit, or specgate held the call for what it said.
	UpstreamRateLimit = "upstream_rate_limit"
	// QueueFull: the upstream's wait queue could take no more calls.
	QueueFull = "queue_full"
	// QueueTimeout: the wait in the queue ran past its limit.
	QueueTimeout = "queue_timeout"
	// Timeout: the call (or the script, or a jq filter) ran past its
	// deadline.
	Timeout = "timeout"
	// Cancelled: the client cancelled.
	Cancelled = "cancelled"
	// ValidationFailed: the arguments do not match what the tool or the
	// operation takes; every problem is listed.
	ValidationFailed = "validation_failed"
	// NotFound: no such endpoint, stored answer or run.
	NotFound = "not_found"
	// HTTPError: the upstream answered 4xx or 5xx other than a rate limit.
	HTTPError = "http_error"
	// Unreachable: DNS, connect or TLS failure.
	Unreachable = "upstream_unreachable"
	// AuthError: credentials missing or refused, or a scope the caller's
	// token lacks.
	AuthError = "auth_error"
	// NotApproved: the call needed the user's approval and did not get it;
	// nothing was sent.
	NotApproved = "not_approved"
	// ScriptError: a run_script program did not finish (a syntax error, an
	// uncaught throw, memory past its bound).
	ScriptError = "script_error"
	// Internal: a failure of specgate's own; the model reads a request id
	// and the server log has the error under it.
	Internal = "internal"
)
