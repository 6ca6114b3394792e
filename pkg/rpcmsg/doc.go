// Package rpcmsg reads a JSON-RPC message once. Read walks a message's
// tokens in one pass and, from that pass alone, refuses the keys two
// readers could read differently (a duplicate, two keys that differ only
// in case, a known key in another case: encoding/json's and a map's
// readings part there), finds the envelope (id, method), the params a
// tools/call, task request or cancellation is read by, the arguments of a
// tools/call with their keys, and whether those arguments hold a number
// float64 cannot hold. Rewrite then hands mcp-go the message unchanged,
// except that out-of-range arguments are wrapped as one string for the
// tool's own decode to refuse readably (Unwrap). The HTTP transport, the
// stdio transport and the tool table share this one reading; CheckKeys
// checks arguments that arrive without a message (in process).
package rpcmsg
