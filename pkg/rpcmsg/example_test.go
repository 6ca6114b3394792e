package rpcmsg_test

import (
	"fmt"

	"github.com/specgate/specgate/pkg/rpcmsg"
)

// One pass finds what the transports act on; a number float64 cannot hold
// has the arguments wrapped for the tool to refuse readably.
func ExampleRead() {
	m, err := rpcmsg.Read([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"pets","limit":1e400}}}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Method, m.Name, m.ArgumentKeys, m.OutOfRange)
	fmt.Printf("%q\n", m.Rewrite())

	_, err = rpcmsg.Read([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"invoke","arguments":{"endpointId":"a","EndpointID":"b"}}}`))
	fmt.Println(err)
	// Output:
	// tools/call search [query limit] true
	// "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"search\",\"arguments\":{\"\\u0000specgate.rawArguments\":\"{\\\"query\\\":\\\"pets\\\",\\\"limit\\\":1e400}\"}}}"
	// the keys "endpointId" and "EndpointID" differ only in case in arguments
}
