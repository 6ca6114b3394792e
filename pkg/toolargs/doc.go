// Package toolargs makes a Go struct a tool's arguments: Decode reads a
// call's arguments into it strictly (every key one of the struct's JSON
// names exactly, no key twice at any depth, free-form numbers kept as
// json.Number so large integers reach the upstream exactly) and says what
// is wrong in words a model can act on; InputSchema and OutputSchema write
// the JSON Schemas of the same structs in the lean form MCP clients accept.
package toolargs
