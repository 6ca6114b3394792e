// Package serve carries MCP between clients and a Backend (specgate's tool
// server) over streamable HTTP and stdio. Over HTTP (NewHandler) it bounds
// and times each body, checks the Origin, authenticates the caller
// (package inauth), charges the principal's inbound windows (requests, tool
// calls, failed authentications per client address; in memory or shared
// through Redis: Windows), reads each message once (rpcmsg.Read) to refuse
// ambiguous keys and missing scopes before anything runs, files each
// request under its caller so that a notifications/cancelled reaches only
// that caller's call, answers task requests from the Backend instead of
// mcp-go's shared task store, keeps 2025-era sessions bound to the
// principal that opened them, and serves /healthz, /readyz, /metrics, the
// RFC 9728 metadata and the governance page's mount. LimitConnsPerIP caps
// a client's open connections. Over stdio (Stdio) it reads each line once,
// diverts task requests and keeps progress notifications ahead of answers.
// Everything else goes to mcp-go untouched, except arguments holding a
// number mcp-go cannot decode, which are wrapped for the tool to refuse.
package serve
