package rpcmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// rewrite is what a transport hands mcp-go for msg.
func rewrite(msg []byte) []byte {
	m, _ := Read(msg)
	if m == nil {
		return msg
	}
	return m.Rewrite()
}

func TestRewriteWrapsOnlyUndecodableArguments(t *testing.T) {
	plain := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"pets","limit":5}}}`)
	if got := rewrite(plain); !bytes.Equal(got, plain) {
		t.Errorf("a decodable call was rewritten: %s", got)
	}
	other := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":1e400}}`)
	if got := rewrite(other); !bytes.Equal(got, other) {
		t.Errorf("a message other than tools/call was rewritten: %s", got)
	}
	huge := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"pets","limit":1e400}}}`)
	got := rewrite(huge)
	var env struct {
		Params struct {
			Arguments map[string]string `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(got, &env); err != nil {
		t.Fatalf("rewritten message does not parse: %v", err)
	}
	if env.Params.Arguments[RawArgumentsKey] != `{"query":"pets","limit":1e400}` {
		t.Errorf("wrapped arguments = %q", env.Params.Arguments)
	}
}

// FuzzRewrite: whatever arrives, the rewrite never panics; a
// message it changes is a tools/call whose arguments decode, with
// json.Number, to the object the client sent.
func FuzzRewrite(f *testing.F) {
	for _, args := range []string{`{"limit":1e400}`, `{"n":9007199254740993}`, `{"a":[1e400,-1e400,1e-400]}`, `{}`, `[1e400]`, `1e400`, `{"a":"\u0000"}`} {
		f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"invoke","arguments":` + args + `}}`))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":1e400}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		out := rewrite(msg)
		if bytes.Equal(out, msg) {
			return
		}
		var req mcp.CallToolRequest
		if err := json.Unmarshal(out, &req); err != nil {
			t.Fatalf("rewritten message does not decode: %v: %q", err, out)
		}
		got, _ := Unwrap(req.Params.RawArguments)
		var env struct {
			Params struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal(msg, &env); err != nil {
			t.Fatalf("the original does not decode: %v", err)
		}
		if g, w := decodeNumbers(t, got), decodeNumbers(t, env.Params.Arguments); !reflect.DeepEqual(g, w) {
			t.Fatalf("arguments %s, want %s", got, env.Params.Arguments)
		}
	})
}

// decodeNumbers decodes raw as a tool does, numbers as json.Number.
func decodeNumbers(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s does not decode: %v", raw, err)
	}
	return v
}

func TestReadFindsWhatTheTransportsUse(t *testing.T) {
	msg := []byte(` {"jsonrpc":"2.0", "id": 7, "method":"tools/call","params":{"name":"run_script","task":{"ttl":1},` +
		`"_meta":{"progressToken":1}, "arguments" : {"code":"return 1","n":[1e-400, 2]}}}`)
	m, err := Read(msg)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.ID) != "7" || m.Method != "tools/call" || m.Name != "run_script" || string(m.Task) != `{"ttl":1}` ||
		string(m.Meta) != `{"progressToken":1}` || m.OutOfRange {
		t.Errorf("read %+v", m)
	}
	if string(m.Arguments) != `{"code":"return 1","n":[1e-400, 2]}` || !reflect.DeepEqual(m.ArgumentKeys, []string{"code", "n"}) {
		t.Errorf("arguments %s, keys %q", m.Arguments, m.ArgumentKeys)
	}
	// The arguments are the message's own bytes, not a copy: nothing was
	// decoded to find them.
	if &m.Arguments[0] != &msg[bytes.Index(msg, []byte(`{"code"`))] {
		t.Error("arguments are not a slice of the message")
	}
	if got := m.Rewrite(); &got[0] != &msg[0] {
		t.Error("a message without an out-of-range number was copied")
	}

	cancel, err := Read([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`))
	if err != nil || string(cancel.RequestID) != `"a"` || cancel.ID != nil {
		t.Errorf("cancel %+v, %v", cancel, err)
	}
	get, err := Read([]byte(`{"jsonrpc":"2.0","id":"x","method":"tasks/get","params":{"taskId":"run-1"}}`))
	if err != nil || get.TaskID != "run-1" || string(get.ID) != `"x"` {
		t.Errorf("tasks/get %+v, %v", get, err)
	}
}

func TestReadKeepsReadingPastAKeyProblem(t *testing.T) {
	m, err := Read([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"invoke","arguments":{"a":1,"A":2}}}`))
	var kp *KeyProblem
	if !errors.As(err, &kp) || kp.Level != LevelArguments {
		t.Fatalf("err %v", err)
	}
	if string(m.ID) != "3" || m.Name != "invoke" {
		t.Errorf("read %+v", m)
	}
	if _, err := Read([]byte(`{"id":1,"id":2`)); err == nil {
		t.Error("a duplicate in text that is not JSON was not refused")
	}
	if _, err := Read([]byte(`{"id":1`)); err != ErrNotJSON {
		t.Errorf("truncated: %v", err)
	}
}
