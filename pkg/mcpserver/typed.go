package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/rpcmsg"
	"github.com/specgate/specgate/pkg/spec"
)

// Each tool's arguments are a Go struct: decodeArgs decodes them strictly
// (an unknown or mistyped argument is validation_failed) from one place,
// and the tool's input schema is generated from the same struct. Numbers
// stay json.Number inside free-form values (parameters, requestBody), so
// large integers reach the upstream exactly.

// SearchArgs are the search tool's arguments.
type SearchArgs struct {
	Query string   `json:"query" jsonschema:"Plain words, optionally with filters"`
	Limit *float64 `json:"limit,omitempty" jsonschema:"1-50 (default 10)"`
	// Alternatives are more phrasings of the same need, fused with the
	// query by reciprocal rank.
	Alternatives []string `json:"alternatives,omitempty" jsonschema:"Up to 3 other phrasings"`
}

// InspectArgs are the inspect tool's arguments.
type InspectArgs struct {
	EndpointID string `json:"endpointId" jsonschema:"From search, like petstore.getPetById"`
}

// InvokeArgs are the invoke tool's arguments.
type InvokeArgs struct {
	EndpointID  string            `json:"endpointId" jsonschema:"From search"`
	Parameters  map[string]any    `json:"parameters,omitempty" jsonschema:"Path, query, header, cookie values by name"`
	RequestBody any               `json:"requestBody,omitempty" jsonschema:"Any JSON (an object for form bodies)"`
	Headers     map[string]string `json:"headers,omitempty" jsonschema:"Extra headers (no credentials)"`
	ContentType string            `json:"contentType,omitempty"`
	JQ          string            `json:"jq,omitempty" jsonschema:"Read-only jq, e.g. [.[] | {id, title}]"`
	Pages       *float64          `json:"pages,omitempty" jsonschema:"GET only: follow next pages, 1-5"`
	MaxBytes    *float64          `json:"maxBytes,omitempty" jsonschema:"Answer budget, 1024-48000"`
	NextPageOf  string            `json:"nextPageOf,omitempty"`
}

// ReadResponseArgs are the read_response tool's arguments.
type ReadResponseArgs struct {
	ResponseID string   `json:"responseId" jsonschema:"From invoke"`
	JQ         string   `json:"jq,omitempty" jsonschema:"Read-only jq"`
	Offset     *float64 `json:"offset,omitempty"`
	Limit      *float64 `json:"limit,omitempty"`
	MaxBytes   *float64 `json:"maxBytes,omitempty" jsonschema:"Answer budget, 1024-48000"`
}

// StatusArgs are the rate_limit_status tool's arguments.
type StatusArgs struct {
	EndpointID string `json:"endpointId,omitempty"`
	Spec       string `json:"spec,omitempty"`
}

// SetRateLimitArgs are the set_rate_limit tool's arguments.
type SetRateLimitArgs struct {
	EndpointID        string   `json:"endpointId,omitempty" jsonschema:"The endpoint whose cooldown to set"`
	RateLimitInterval *string  `json:"rateLimitInterval,omitempty" jsonschema:"The new cooldown, a duration like 5s"`
	Upstream          string   `json:"upstream,omitempty" jsonschema:"The upstream (host:port or group) whose budget to set"`
	RequestsPerWindow *float64 `json:"requestsPerWindow,omitempty" jsonschema:"Requests allowed per window"`
	Window            *string  `json:"window,omitempty" jsonschema:"The window, a duration like 1m"`
	MinInterval       *string  `json:"minInterval,omitempty" jsonschema:"Minimum time between requests, like 200ms"`
	MaxConcurrent     *float64 `json:"maxConcurrent,omitempty" jsonschema:"Requests in flight at most"`
}

// SetRateLimitResult is set_rate_limit's answer: the endpoint's new
// cooldown, or the upstream's new limits.
type SetRateLimitResult struct {
	EndpointID string          `json:"endpointId,omitempty"`
	Cooldown   string          `json:"cooldown,omitempty"`
	Upstream   string          `json:"upstream,omitempty"`
	Limits     *UpstreamLimits `json:"limits,omitempty"`
	// Shadow is true for a budget with enforce: false: the new limits are
	// counted (rate_limit_status shadow), and hold no call.
	Shadow bool   `json:"shadow,omitempty"`
	Note   string `json:"note,omitempty"`
}

// BeginTaskArgs are the begin_task tool's arguments.
type BeginTaskArgs struct {
	Name string `json:"name"`
}

// TaskStarted is begin_task's answer.
type TaskStarted struct {
	TaskID string `json:"taskId"`
	Name   string `json:"name"`
}

// EndTaskArgs are the end_task tool's arguments.
type EndTaskArgs struct {
	TaskID      string   `json:"taskId" jsonschema:"From begin_task"`
	Concurrency *float64 `json:"concurrency,omitempty" jsonschema:"Parallel calls to plan for"`
}

// decodeArgs decodes a call's raw arguments into dst, a pointer to an
// arguments struct: the one decode of a tool call. Every key must be one
// of dst's JSON names exactly (encoding/json alone would also take
// "EndpointID" for endpointId), no key may appear twice at any depth, and
// free-form values keep their numbers as json.Number, so large integers
// reach the upstream exactly. The problem it returns names the argument
// and what it must be, or lists the arguments the tool takes.
func decodeArgs(tool string, raw json.RawMessage, dst any) *mcp.CallToolResult {
	return decodeArgsRead(tool, raw, nil, dst)
}

// argKeys are the keys of a call's arguments as the transport's one
// reading of the message found and checked them (rpcmsg.Read).
type argKeys struct{ keys []string }

// decodeArgsRead is decodeArgs for arguments whose keys read already
// holds, checked: the arguments are not walked a second time.
func decodeArgsRead(tool string, raw json.RawMessage, read *argKeys, dst any) *mcp.CallToolResult {
	if inner, wrapped := rpcmsg.Unwrap(raw); wrapped {
		raw, read = inner, nil // the transport read the wrapper, not these
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		raw, read = []byte("{}"), nil
	} else if t[0] != '{' {
		return argError("arguments must be a JSON object")
	}
	var keys []string
	if read != nil {
		keys = read.keys
	} else {
		var err error
		if keys, err = rpcmsg.CheckKeys(raw, rpcmsg.LevelArguments); err != nil {
			var kp *rpcmsg.KeyProblem
			if errors.As(err, &kp) {
				return argError("%s", kp.Msg)
			}
			return argError("arguments must be a JSON object")
		}
	}
	names := argNames(dst)
	for _, k := range keys {
		if !slices.Contains(names, k) {
			for _, n := range names {
				if strings.EqualFold(n, k) {
					return argError("unknown argument %s: did you mean %s? %s takes %s", rpcmsg.QuoteKey(k), n, tool, strings.Join(names, ", "))
				}
			}
			return argError("unknown argument %s: %s takes %s", clip(k, 64), tool, strings.Join(names, ", "))
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		field := te.Field
		if i := strings.IndexByte(field, '.'); i >= 0 {
			field = field[:i]
		}
		return argError("%s must be %s", clip(field, 64), argKind(dst, field))
	}
	return argError("arguments could not be read: %s", clip(strings.TrimPrefix(err.Error(), "json: "), 200))
}

// argNames lists the JSON names of an arguments struct, in order.
func argNames(dst any) []string {
	t := reflect.TypeOf(dst).Elem()
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// argKind says what the named argument must be, in words.
func argKind(dst any, name string) string {
	t := reflect.TypeOf(dst).Elem()
	for i := range t.NumField() {
		f := t.Field(i)
		if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n != name {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.String:
			return "a string"
		case reflect.Float64, reflect.Int:
			return "a number"
		case reflect.Map:
			if ft.Elem().Kind() == reflect.String {
				return "an object of string values by name"
			}
			return "an object of values by name"
		}
	}
	return "a JSON value of another type"
}

// requireString checks a required string argument is present and not blank.
func requireString(name, v string) *mcp.CallToolResult {
	if v == "" {
		return argError("%s is required", name)
	}
	if strings.TrimSpace(v) == "" {
		return argError("%s must not be empty", name)
	}
	return nil
}

// inputSchema generates a tool's input schema from its arguments struct.
func inputSchema[T any]() mcp.ToolOption {
	raw := schemaOf[T](false)
	return func(t *mcp.Tool) {
		t.InputSchema = mcp.ToolInputSchema{} // NewTool's default; the raw one replaces it
		t.RawInputSchema = raw
	}
}

// outputSchema generates a tool's output schema from its result struct.
// Every field is optional and an "error" object is allowed beside them, so
// that clients that validate structuredContent against it (the TypeScript
// SDK does, error results included) accept both the answer and the error
// envelope.
func outputSchema[T any]() mcp.ToolOption {
	return mcp.WithRawOutputSchema(schemaOf[T](true))
}

// errorSchema is the error envelope's object, kept lean: the tool
// descriptions name the fields, and every tools/list pays for it.
var errorSchema = &jsonschema.Schema{
	Type:     "object",
	Required: []string{"code", "message"},
	Properties: map[string]*jsonschema.Schema{
		"code":    {Type: "string"},
		"message": {Type: "string"},
	},
}

func schemaOf[T any](output bool) json.RawMessage {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{
		IgnoreInvalidTypes: true,
		// A rendered schema in inspect's contract is recursive: described
		// as any object, not unrolled.
		TypeSchemas: map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[spec.Schema](): {Type: "object"}},
	})
	if err != nil {
		// The argument and result types are ours: a type the generator
		// cannot describe is a programming error caught by the tests.
		panic("mcpserver: no JSON schema for " + reflect.TypeFor[T]().String() + ": " + err.Error())
	}
	if !output {
		// An optional argument is a pointer field, which the generator
		// writes as ["null", T]: a model sends T or leaves it out, and the
		// shorter form costs every tools/list less.
		for _, p := range s.Properties {
			if len(p.Types) == 2 && p.Types[0] == "null" {
				p.Type, p.Types = p.Types[1], nil
			}
		}
		// Unknown arguments are refused by name with the list of those the
		// tool takes (decodeArgs): saying so in every schema costs every
		// tools/list and tells the model less.
		s.AdditionalProperties = nil
	}
	if output {
		// Every tools/list pays for these: the top level is checked field by
		// field, nested values by their JSON type only.
		s.Required = nil
		if s.Properties == nil {
			s.Properties = map[string]*jsonschema.Schema{}
		}
		for name, p := range s.Properties {
			s.Properties[name] = &jsonschema.Schema{Type: p.Type, Types: p.Types}
		}
		s.Properties["error"] = errorSchema
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic("mcpserver: schema of " + reflect.TypeFor[T]().String() + ": " + err.Error())
	}
	// An any-typed field's schema is the boolean true, which JSON Schema
	// allows but MCP clients (the TypeScript SDK) refuse as a property:
	// write it as the empty object, which means the same.
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		panic("mcpserver: schema of " + reflect.TypeFor[T]().String() + ": " + err.Error())
	}
	if m, ok := tree.(map[string]any); ok {
		if r, ok := m["required"].([]any); ok && len(r) == 0 {
			delete(m, "required") // nothing required says nothing
		}
	}
	b, _ = json.Marshal(noBooleanSchemas(tree))
	return b
}

func noBooleanSchemas(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for k, x := range m {
		if props, ok := x.(map[string]any); ok && (k == "properties") {
			for name, p := range props {
				if b, ok := p.(bool); ok && b {
					props[name] = map[string]any{}
				} else {
					props[name] = noBooleanSchemas(p)
				}
			}
			continue
		}
		if b, ok := x.(bool); ok && b && (k == "items" || k == "additionalProperties") {
			m[k] = map[string]any{}
			continue
		}
		m[k] = noBooleanSchemas(x)
	}
	return m
}
