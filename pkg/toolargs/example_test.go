package toolargs_test

import (
	"encoding/json"
	"fmt"

	"github.com/specgate/specgate/pkg/toolargs"
)

type lookupArgs struct {
	ID    string         `json:"id"`
	Query map[string]any `json:"query,omitempty"`
}

// A tool's arguments are a struct: decoded strictly, large integers kept
// exact, and every refusal says what to send instead.
func ExampleDecode() {
	var a lookupArgs
	err := toolargs.Decode("lookup", json.RawMessage(`{"id":"x","query":{"n":9007199254740993}}`), nil, &a)
	fmt.Println(a.Query["n"], err)

	fmt.Println(toolargs.Decode("lookup", json.RawMessage(`{"ID":"x"}`), nil, &a))
	fmt.Println(toolargs.Decode("lookup", json.RawMessage(`{"id":7}`), nil, &a))
	fmt.Println(string(toolargs.InputSchema[lookupArgs]()))
	// Output:
	// 9007199254740993 <nil>
	// unknown argument "ID": did you mean id? lookup takes id, query
	// id must be a string
	// {"properties":{"id":{"type":"string"},"query":{"additionalProperties":{},"type":"object"}},"required":["id"],"type":"object"}
}
