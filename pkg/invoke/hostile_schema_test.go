package invoke

import (
	"strings"
	"testing"
)

// selfRefDoc is a spec whose operations take a schema that refers to
// itself: as a whole component ("whole") or through a pointer into one
// ("pointer"), in the body and in a query parameter.
const selfRefDoc = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},
 "components":{"schemas":{
   "C":{"$ref":"#/components/schemas/C"},
   "P":{"type":"object","properties":{"x":{"$ref":"#/components/schemas/P/properties/x"}}}}},
 "paths":{
   "/whole":{"post":{"operationId":"whole",
     "requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/C"}}}},
     "responses":{"200":{"description":"ok"}}}},
   "/pointer":{"post":{"operationId":"pointer",
     "requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/P"}}}},
     "responses":{"200":{"description":"ok"}}}},
   "/param":{"get":{"operationId":"param",
     "parameters":[{"name":"q","in":"query","schema":{"$ref":"#/components/schemas/P/properties/x"}}],
     "responses":{"200":{"description":"ok"}}}}}}`

// A self-referencing schema made Prepare panic inside kin-openapi; the
// panic was recovered further up, and the model read JSON-RPC -32603
// instead of a tool error. A whole component that is only a $ref loop
// loads as any value and the call goes; a loop kin-openapi still cannot
// validate is a validation_failed that says the spec is at fault.
func TestPrepareSelfReferencingSchemaIsNoPanic(t *testing.T) {
	s := parseSpec(t, "self", selfRefDoc, "http://127.0.0.1:1")
	c := New(Options{})

	call, err := c.Prepare(t.Context(), endpoint(t, s, "whole"), Args{RequestBody: map[string]any{"a": 1}})
	if err != nil {
		t.Fatalf("whole component: %v", err)
	}
	if !call.Validated() {
		t.Error("whole component: the call was not validated")
	}

	for _, tt := range []struct {
		op   string
		args Args
	}{
		{"pointer", Args{RequestBody: map[string]any{"x": 1}}},
		{"param", Args{Parameters: map[string]any{"q": "v"}}},
	} {
		_, err := c.Prepare(t.Context(), endpoint(t, s, tt.op), tt.args)
		ae := asArgError(t, err)
		if len(ae.Problems) != 1 || !strings.HasPrefix(ae.Problems[0], "the spec's schema could not be validated") {
			t.Errorf("%s: problems = %q", tt.op, ae.Problems)
		}
		if len(ae.Problems[0]) > maxProblemLen+len("…") {
			t.Errorf("%s: problem longer than %d bytes: %q", tt.op, maxProblemLen, ae.Problems[0])
		}
	}
}

// checkValue validates values directly (parameters kin-openapi cannot
// decode, non-JSON bodies, values listed next to a structural problem):
// a schema it cannot walk is a problem, not a panic.
func TestCheckValueNilSchemaIsProblem(t *testing.T) {
	got := checkValue("requestBody", nil, map[string]any{"a": 1.0}, nil, true)
	if len(got) != 1 || !strings.HasPrefix(got[0], "requestBody: the spec's schema could not be validated") {
		t.Errorf("problems = %q", got)
	}
}
