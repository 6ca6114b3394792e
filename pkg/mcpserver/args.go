package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
)

// Tool arguments are decoded with json.Number, so an integer such as
// 9007199254740993 reaches the upstream exactly instead of rounded through
// float64. mcp-go decodes arguments into float64 and refuses a whole
// tools/call whose arguments hold a number float64 cannot represent (1e400)
// with a JSON-RPC error the model never reads. So, on the way in, such
// arguments are wrapped as one string under rawArgumentsKey, and the tool
// middleware decodes the original text with UseNumber; a number that is
// out of range then becomes an ordinary validation_failed tool error.
//
// A client that sends rawArgumentsKey itself gains nothing: the wrapped
// text is decoded as that same client's arguments.
const rawArgumentsKey = "\u0000specgate.rawArguments"

// rewriteToolCall wraps the arguments of a tools/call message that mcp-go
// could not decode. Any other message comes back unchanged.
func rewriteToolCall(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"tools/call"`)) {
		return msg
	}
	var env map[string]json.RawMessage
	if json.Unmarshal(msg, &env) != nil {
		return msg
	}
	var method string
	if json.Unmarshal(env["method"], &method) != nil || method != string(mcp.MethodToolsCall) {
		return msg
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(env["params"], &params) != nil {
		return msg
	}
	args := params["arguments"]
	if len(args) == 0 {
		return msg
	}
	var probe any
	if json.Unmarshal(args, &probe) == nil || !json.Valid(args) {
		return msg
	}
	wrapped, err := json.Marshal(map[string]string{rawArgumentsKey: string(args)})
	if err != nil {
		return msg
	}
	params["arguments"] = wrapped
	if env["params"], err = json.Marshal(params); err != nil {
		return msg
	}
	out, err := json.Marshal(env)
	if err != nil {
		return msg
	}
	return out
}

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

// unwrapArguments undoes rewriteToolCall: arguments that are one string
// under rawArgumentsKey are that string's text.
func unwrapArguments(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`specgate.rawArguments`)) {
		return raw
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) != 1 {
		return raw
	}
	var inner string
	if json.Unmarshal(m[rawArgumentsKey], &inner) != nil {
		return raw
	}
	return json.RawMessage(inner)
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

// lineRewriter applies rewriteToolCall to each newline-delimited message
// read from r, for the stdio transport. It starts no goroutine.
type lineRewriter struct {
	r   *bufio.Reader
	buf []byte
	err error
	// divert, if set, may take a message for itself: it is then not read.
	divert func(msg []byte) bool
}

func newLineRewriter(r io.Reader) *lineRewriter {
	return &lineRewriter{r: bufio.NewReaderSize(r, 64<<10)}
}

func (l *lineRewriter) Read(p []byte) (int, error) {
	for len(l.buf) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		line, err := l.r.ReadBytes('\n')
		l.err = err
		if len(line) > 0 {
			body := bytes.TrimRight(line, "\r\n")
			out := rewriteToolCall(body)
			if l.divert != nil && l.divert(out) {
				continue
			}
			if len(out) != len(body) || !bytes.Equal(out, body) {
				line = append(out, '\n')
			}
			l.buf = line
		}
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}
