// Package mcpserver is specgate's MCP server on mcp-go: the table of tools
// (search, inspect, invoke, read_response, run_script, script_result,
// rate_limit_status, set_rate_limit, begin_task, end_task), each entry
// owning its description, argument type, scope and error codes; the
// handlers, which decode a call's arguments once and reach the governed
// call (invoke.Caller) for invoke and run_script; the one mapping of every
// failure to the error object the model reads; approvals of writes (by
// elicitation, a signed input round trip, or the governance page); the
// prompts; and the records of long runs behind script_result and MCP
// tasks. It serves no transport itself: package serve serves a Server over
// streamable HTTP and stdio (Server is its Backend), inauth says who calls,
// tasks answers task requests, and telemetry counts and traces.
package mcpserver
