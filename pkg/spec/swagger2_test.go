package spec

import (
	"slices"
	"testing"
)

// Slack's methods consume form and JSON with formData parameters: the JSON
// type came first (the converted content is a map, read back sorted), so
// every call went as JSON and Slack (and Prism) answered 415.
func TestSwagger2FormDataBodyIsAForm(t *testing.T) {
	doc := `{"swagger": "2.0", "info": {"title": "t", "version": "1"}, "host": "api.example.com",
	"consumes": ["application/json"],
	"paths": {
	  "/chat.postMessage": {"post": {"operationId": "post",
	    "consumes": ["application/x-www-form-urlencoded", "application/json"],
	    "parameters": [{"in": "formData", "name": "channel", "type": "string", "required": true}],
	    "responses": {"200": {"description": "ok"}}}},
	  "/files.upload": {"post": {"operationId": "upload",
	    "consumes": ["application/x-www-form-urlencoded", "multipart/form-data"],
	    "parameters": [{"in": "formData", "name": "file", "type": "file"}, {"in": "formData", "name": "title", "type": "string"}],
	    "responses": {"200": {"description": "ok"}}}},
	  "/implied": {"post": {"operationId": "implied",
	    "parameters": [{"in": "formData", "name": "a", "type": "string"}],
	    "responses": {"200": {"description": "ok"}}}},
	  "/json": {"post": {"operationId": "json",
	    "consumes": ["application/json", "application/xml"],
	    "parameters": [{"in": "body", "name": "body", "schema": {"type": "object"}}],
	    "responses": {"200": {"description": "ok"}}}}
	}}`
	s, err := Parse(t.Context(), "slackish.json", []byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"post":    {"application/x-www-form-urlencoded"},
		"upload":  {"multipart/form-data"},
		"implied": {"application/x-www-form-urlencoded"},
		"json":    {"application/json", "application/xml"},
	}
	for _, e := range s.Endpoints {
		if got := e.BodyTypes; !slices.Equal(got, want[e.OperationID]) {
			t.Errorf("%s: body types %q, want %q", e.OperationID, got, want[e.OperationID])
		}
		op, err := e.Operation(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n := len(op.Op.RequestBody.Value.Content); n != len(want[e.OperationID]) {
			t.Errorf("%s: the rebuilt operation has %d body types", e.OperationID, n)
		}
	}
}
