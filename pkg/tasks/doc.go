// Package tasks answers MCP tasks, the 2025-11-25 protocol's and the
// 2026-07-28 extension's (io.modelcontextprotocol/tasks), from run_script's
// run records: a task is a run and its id the run id, so a task lives in
// the record store every replica shares, belongs to the principal that
// started it (another's is unknown), and outlives the request that asked
// for it. Runs.IsTask tells a transport which messages are its own; Answer
// starts a task-augmented run_script (through the tool's own handler) or
// answers tasks/get, tasks/result, tasks/list, tasks/cancel and
// tasks/update from the record.
package tasks
