package mcpserver

import (
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/toolargs"
)

// Each tool's arguments are a Go struct: decodeArgs decodes them strictly
// (an unknown or mistyped argument is validation_failed) from one place,
// and the tool's input schema is generated from the same struct. Numbers
// stay json.Number inside free-form values (parameters, requestBody), so
// large integers reach the upstream exactly.

// SearchArgs are the search tool's arguments.
type SearchArgs struct {
	Query string   `json:"query" jsonschema:"Plain words, optionally with filters"`
	Limit *float64 `json:"limit,omitempty" jsonschema:"1-50 (default 10)"`
	// Alternatives are more phrasings of the same need, fused with the
	// query by reciprocal rank.
	Alternatives []string `json:"alternatives,omitempty" jsonschema:"Up to 3 other phrasings"`
}

// InspectArgs are the inspect tool's arguments.
type InspectArgs struct {
	EndpointID string `json:"endpointId" jsonschema:"From search, like petstore.getPetById"`
}

// InvokeArgs are the invoke tool's arguments.
type InvokeArgs struct {
	EndpointID  string            `json:"endpointId" jsonschema:"From search"`
	Parameters  map[string]any    `json:"parameters,omitempty" jsonschema:"Path, query, header, cookie values by name"`
	RequestBody any               `json:"requestBody,omitempty" jsonschema:"Any JSON (an object for form bodies)"`
	Headers     map[string]string `json:"headers,omitempty" jsonschema:"Extra headers (no credentials)"`
	ContentType string            `json:"contentType,omitempty"`
	JQ          string            `json:"jq,omitempty" jsonschema:"Read-only jq, e.g. [.[] | {id, title}]"`
	Pages       *float64          `json:"pages,omitempty" jsonschema:"GET only: follow next pages, 1-5"`
	MaxBytes    *float64          `json:"maxBytes,omitempty" jsonschema:"Answer budget, 1024-48000"`
	NextPageOf  string            `json:"nextPageOf,omitempty"`
}

// ReadResponseArgs are the read_response tool's arguments.
type ReadResponseArgs struct {
	ResponseID string   `json:"responseId" jsonschema:"From invoke"`
	JQ         string   `json:"jq,omitempty" jsonschema:"Read-only jq"`
	Offset     *float64 `json:"offset,omitempty"`
	Limit      *float64 `json:"limit,omitempty"`
	MaxBytes   *float64 `json:"maxBytes,omitempty" jsonschema:"Answer budget, 1024-48000"`
}

// StatusArgs are the rate_limit_status tool's arguments.
type StatusArgs struct {
	EndpointID string `json:"endpointId,omitempty"`
	Spec       string `json:"spec,omitempty"`
}

// SetRateLimitArgs are the set_rate_limit tool's arguments.
type SetRateLimitArgs struct {
	EndpointID        string   `json:"endpointId,omitempty" jsonschema:"The endpoint whose cooldown to set"`
	RateLimitInterval *string  `json:"rateLimitInterval,omitempty" jsonschema:"The new cooldown, a duration like 5s"`
	Upstream          string   `json:"upstream,omitempty" jsonschema:"The upstream (host:port or group) whose budget to set"`
	RequestsPerWindow *float64 `json:"requestsPerWindow,omitempty" jsonschema:"Requests allowed per window"`
	Window            *string  `json:"window,omitempty" jsonschema:"The window, a duration like 1m"`
	MinInterval       *string  `json:"minInterval,omitempty" jsonschema:"Minimum time between requests, like 200ms"`
	MaxConcurrent     *float64 `json:"maxConcurrent,omitempty" jsonschema:"Requests in flight at most"`
}

// SetRateLimitResult is set_rate_limit's answer: the endpoint's new
// cooldown, or the upstream's new limits.
type SetRateLimitResult struct {
	EndpointID string          `json:"endpointId,omitempty"`
	Cooldown   string          `json:"cooldown,omitempty"`
	Upstream   string          `json:"upstream,omitempty"`
	Limits     *UpstreamLimits `json:"limits,omitempty"`
	// Shadow is true for a budget with enforce: false: the new limits are
	// counted (rate_limit_status shadow), and hold no call.
	Shadow bool   `json:"shadow,omitempty"`
	Note   string `json:"note,omitempty"`
}

// BeginTaskArgs are the begin_task tool's arguments.
type BeginTaskArgs struct {
	Name string `json:"name"`
}

// TaskStarted is begin_task's answer.
type TaskStarted struct {
	TaskID string `json:"taskId"`
	Name   string `json:"name"`
}

// EndTaskArgs are the end_task tool's arguments.
type EndTaskArgs struct {
	TaskID      string   `json:"taskId" jsonschema:"From begin_task"`
	Concurrency *float64 `json:"concurrency,omitempty" jsonschema:"Parallel calls to plan for"`
}

// decodeArgs decodes a call's raw arguments into dst, a pointer to an
// arguments struct: the one decode of a tool call (toolargs.Decode); the
// problem is a validation_failed result naming the argument and what it
// must be, or listing the arguments the tool takes.
func decodeArgs(tool string, raw json.RawMessage, dst any) *mcp.CallToolResult {
	return decodeArgsRead(tool, raw, nil, dst)
}

// decodeArgsRead is decodeArgs for arguments whose keys read, when not
// nil, holds as the transport's one reading of the message found and
// checked them: the arguments are not walked a second time.
func decodeArgsRead(tool string, raw json.RawMessage, read *toolargs.Keys, dst any) *mcp.CallToolResult {
	if err := toolargs.Decode(tool, raw, read, dst); err != nil {
		return argError("%s", err.Error())
	}
	return nil
}

// requireString checks a required string argument is present and not blank.
func requireString(name, v string) *mcp.CallToolResult {
	if v == "" {
		return argError("%s is required", name)
	}
	if strings.TrimSpace(v) == "" {
		return argError("%s must not be empty", name)
	}
	return nil
}

// inputSchema generates a tool's input schema from its arguments struct.
func inputSchema[T any]() mcp.ToolOption {
	raw := toolargs.InputSchema[T]()
	return func(t *mcp.Tool) {
		t.InputSchema = mcp.ToolInputSchema{} // NewTool's default; the raw one replaces it
		t.RawInputSchema = raw
	}
}

// outputSchema generates a tool's output schema from its result struct
// (toolargs.OutputSchema).
func outputSchema[T any]() mcp.ToolOption {
	return mcp.WithRawOutputSchema(toolargs.OutputSchema[T]())
}
