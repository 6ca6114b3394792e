package mcpserver

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
)

// rawArguments returns a call's arguments as the client sent them; for a
// request built in-process without wire bytes, its Arguments encoded.
func rawArguments(req mcp.CallToolRequest) json.RawMessage {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	if req.Params.Arguments == nil {
		return nil
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return json.RawMessage(`"unreadable"`)
	}
	return b
}

// numberArg reads a numeric argument decoded as json.Number (or float64
// from an in-process caller). ok is false for anything else, and for
// numbers float64 cannot hold.
func numberArg(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, false
		}
		return f, true
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// intArg reads a whole-number argument within [lo, hi].
func intArg(v any, lo, hi int) (int, bool) {
	f, ok := numberArg(v)
	if !ok || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, false
	}
	return int(f), true
}
