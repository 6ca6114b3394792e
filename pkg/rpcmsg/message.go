package rpcmsg

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Message is what one pass over a JSON-RPC message finds: its envelope,
// the params a tools/call, a task request or a cancellation is read by,
// and the arguments of a tools/call, as slices of the message itself. A
// field the message does not hold (or holds with another JSON type) is
// zero. Where a key appears twice the last one is kept, as encoding/json
// does; such a message also has a KeyProblem.
type Message struct {
	// ID is the JSON-RPC id as sent; nil for a notification.
	ID json.RawMessage
	// Method is the method; "" for a client's answer to a request of the
	// server's.
	Method string

	// Name is params.name: the tool of a tools/call.
	Name string
	// Arguments is params.arguments as sent.
	Arguments json.RawMessage
	// ArgumentKeys are the keys of Arguments, in order, when it is an
	// object.
	ArgumentKeys []string
	// OutOfRange reports that Arguments hold a number float64 cannot hold
	// (1e400), which mcp-go cannot decode.
	OutOfRange bool
	// Task is params.task: a 2025-11-25 client asking for a task.
	Task json.RawMessage
	// TaskID is params.taskId of a tasks/* request.
	TaskID string
	// RequestID is params.requestId of a notifications/cancelled.
	RequestID json.RawMessage
	// Meta is params._meta.
	Meta json.RawMessage

	raw              []byte
	argStart, argEnd int
	problem          bool
}

func (m *Message) resetParams() {
	m.Name, m.Arguments, m.ArgumentKeys, m.OutOfRange = "", nil, nil, false
	m.Task, m.TaskID, m.RequestID, m.Meta = nil, "", nil, nil
}

// Read reads one JSON-RPC message in one pass of its tokens: it checks
// every key two readers could read differently (see CheckKeys) and finds
// the envelope, params and arguments Message holds. The error is the
// first *KeyProblem, or ErrNotJSON when msg is not one JSON value; with a
// KeyProblem the Message is still filled. msg must not change while the
// Message is in use: its fields are slices of it.
func Read(msg []byte) (*Message, error) {
	m := &Message{raw: msg}
	w := walker{dec: json.NewDecoder(bytes.NewReader(msg)), msg: msg, m: m}
	w.dec.UseNumber()
	err := w.all(LevelEnvelope, nil)
	if err == ErrNotJSON {
		return nil, err
	}
	m.problem = err != nil
	return m, err
}

// RawArgumentsKey names the one string under which Rewrite wraps the text
// of arguments mcp-go cannot decode. Tool arguments are decoded with
// json.Number, so an integer such as 9007199254740993 reaches the upstream
// exactly instead of rounded through float64; but mcp-go decodes arguments
// into float64 and refuses a whole tools/call whose arguments hold a
// number float64 cannot represent (1e400) with a JSON-RPC error the model
// never reads. Wrapped, the call reaches the tool, whose decode (Unwrap,
// then UseNumber) turns the number into an ordinary validation_failed
// tool error.
//
// A client that sends RawArgumentsKey itself gains nothing: the wrapped
// text is decoded as that same client's arguments.
const RawArgumentsKey = "\u0000specgate.rawArguments"

// Rewrite returns the message mcp-go is to read: the message itself,
// unless it is a tools/call whose Arguments are OutOfRange and it has no
// key problem, and then with only the arguments' text replaced by
// {RawArgumentsKey: "<that text>"}.
func (m *Message) Rewrite() []byte {
	if !m.OutOfRange || m.problem || m.Method != "tools/call" || m.argEnd == 0 {
		return m.raw
	}
	wrapped, err := json.Marshal(map[string]string{RawArgumentsKey: string(m.Arguments)})
	if err != nil {
		return m.raw
	}
	out := make([]byte, 0, len(m.raw)+len(wrapped)-len(m.Arguments))
	out = append(out, m.raw[:m.argStart]...)
	out = append(out, wrapped...)
	return append(out, m.raw[m.argEnd:]...)
}

// Unwrap undoes Rewrite: arguments that are one string under
// RawArgumentsKey are that string's text; any others come back as they
// are.
func Unwrap(raw json.RawMessage) (json.RawMessage, bool) {
	if !bytes.Contains(raw, []byte(`specgate.rawArguments`)) {
		return raw, false
	}
	var w map[string]json.RawMessage
	if json.Unmarshal(raw, &w) != nil || len(w) != 1 {
		return raw, false
	}
	var inner string
	if json.Unmarshal(w[RawArgumentsKey], &inner) != nil {
		return raw, false
	}
	return json.RawMessage(inner), true
}

// Clip cuts s, a client's string quoted in an answer or a log, to about
// n bytes on a rune boundary, saying how much it cut: a key or a name can
// be as long as the message.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[+" + strconv.Itoa(len(s)-cut) + " bytes]"
}
