package invoke

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/spec"
)

func TestPrepareAndDoGet(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "pets", petDoc, up.URL+"/api/v1")
	c := New(Options{})
	call, err := c.Prepare(t.Context(), endpoint(t, s, "getPet"), Args{
		Parameters: map[string]any{"petId": "p 1", "verbose": true, "limit": 5, "X-Trace": "abc", "session": "s1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !call.Validated() {
		t.Error("call not validated")
	}
	res, err := call.Do(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := up.last(t)
	if got.Method != "GET" || got.RawPath != "/api/v1/pets/p%201" {
		t.Errorf("got %s %s, want GET /api/v1/pets/p%%201", got.Method, got.RawPath)
	}
	if got.RawQuery != "verbose=true&limit=5" {
		t.Errorf("query = %q", got.RawQuery)
	}
	if got.Header.Get("X-Trace") != "abc" || got.Header.Get("Cookie") != "session=s1" {
		t.Errorf("headers = %v", got.Header)
	}
	if res.StatusCode != 200 || string(res.RawBody) != `{"ok":true}` {
		t.Errorf("result = %+v", res)
	}
	if res.Headers["content-type"] != "application/json" {
		t.Errorf("headers = %v", res.Headers)
	}
}

func TestPrepareUnknownParameters(t *testing.T) {
	s := parseSpec(t, "pets", petDoc, "http://127.0.0.1:1")
	c := New(Options{})
	_, err := c.Prepare(t.Context(), endpoint(t, s, "getPet"), Args{
		Parameters: map[string]any{"petId": "1", "colour": "red", "size": 3},
	})
	ae := asArgError(t, err)
	msg := ae.Error()
	for _, want := range []string{`"colour"`, `"size"`, "not declared"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if !strings.Contains(ae.Hint(), "petId (path)") || !strings.Contains(ae.Hint(), "limit (query)") {
		t.Errorf("hint %q does not name the declared parameters", ae.Hint())
	}
}

// TestPrepareUndeclaredHintNamesTheClosest: the hint named the declared
// parameters only; a misspelled one now also gets the name it misspells.
func TestPrepareUndeclaredHintNamesTheClosest(t *testing.T) {
	s := parseSpec(t, "pets", petDoc, "http://127.0.0.1:1")
	c := New(Options{})
	_, err := c.Prepare(t.Context(), endpoint(t, s, "getPet"), Args{
		Parameters: map[string]any{"petID": "1", "limt": 5, "colour": "red"},
	})
	ae := asArgError(t, err)
	want := `"limt" is not declared: did you mean "limit"? "petID" is not declared: did you mean "petId"? ` +
		`Use only the declared parameters: petId (path), verbose (query), limit (query), X-Trace (header), session (cookie). Call inspect for their schemas.`
	if got := ae.Hint(); got != want {
		t.Errorf("hint:\n got %s\nwant %s", got, want)
	}
}

func TestClosestName(t *testing.T) {
	declared := []string{"orderId", "per_page", "since", "X-Request-ID", "q"}
	for _, tt := range []struct{ name, want string }{
		{"orderID", "orderId"},
		{"order_id", "orderId"},
		{"perPage", "per_page"},
		{"sinse", "since"},
		{"x_request_id", "X-Request-ID"},
		{"color", ""},
		{"qq", ""}, // one edit, but a third of "q" is less than one
		{"snce", "since"},
		{"order", "orderId"},
		{"status", ""},
	} {
		if got := closestName(tt.name, declared); got != tt.want {
			t.Errorf("closestName(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestPrepareListsEveryProblem(t *testing.T) {
	s := parseSpec(t, "pets", petDoc, "http://127.0.0.1:1")
	c := New(Options{})
	_, err := c.Prepare(t.Context(), endpoint(t, s, "listPets"), Args{
		Parameters: map[string]any{"ids": []any{1, "x"}},
	})
	ae := asArgError(t, err)
	// A missing required parameter does not hide what is wrong with the
	// values that were given.
	if len(ae.Problems) != 2 || !strings.Contains(ae.Problems[0], `"status" (query): is required`) || !strings.Contains(ae.Problems[1], `"ids"`) {
		t.Errorf("problems = %q", ae.Problems)
	}

	_, err = c.Prepare(t.Context(), endpoint(t, s, "listPets"), Args{
		Parameters: map[string]any{"status": "lost", "ids": []any{1, "x"}},
	})
	ae = asArgError(t, err)
	joined := strings.Join(ae.Problems, "\n")
	if len(ae.Problems) != 2 || !strings.Contains(joined, `"status"`) || !strings.Contains(joined, `"ids"`) {
		t.Errorf("problems = %q", ae.Problems)
	}
	for _, p := range ae.Problems {
		if len(p) > maxProblemLen+5 || strings.Contains(p, "Schema:") || strings.Contains(p, "\n") {
			t.Errorf("problem not short: %q", p)
		}
	}

	_, err = c.Prepare(t.Context(), endpoint(t, s, "createPet"), Args{
		RequestBody: map[string]any{"name": strings.Repeat("n", 30), "age": -1, "tags": "x"},
	})
	ae = asArgError(t, err)
	if len(ae.Problems) != 3 {
		t.Errorf("problems = %q, want 3", ae.Problems)
	}
	for _, want := range []string{"requestBody.name", "requestBody.age", "requestBody.tags"} {
		if !strings.Contains(strings.Join(ae.Problems, "\n"), want) {
			t.Errorf("problems %q lack %s", ae.Problems, want)
		}
	}
}

func TestPrepareBodyRules(t *testing.T) {
	s := parseSpec(t, "pets", petDoc, "http://127.0.0.1:1")
	c := New(Options{})
	tests := []struct {
		name string
		op   string
		args Args
		want string
	}{
		{"missing body", "createPet", Args{}, "requestBody: is required"},
		{"body on GET", "getPet", Args{Parameters: map[string]any{"petId": "1"}, RequestBody: map[string]any{}}, "takes no request body"},
		{"wrong content type", "updatePet", Args{Parameters: map[string]any{"petId": "1"}, RequestBody: map[string]any{"name": "a"}, ContentType: "text/csv"},
			"use one of: application/json, application/x-www-form-urlencoded"},
		{"form schema problem", "updatePet", Args{Parameters: map[string]any{"petId": "1"}, RequestBody: map[string]any{"age": "old"}, ContentType: "application/x-www-form-urlencoded"},
			"requestBody"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Prepare(t.Context(), endpoint(t, s, tt.op), tt.args)
			ae := asArgError(t, err)
			if !strings.Contains(ae.Error(), tt.want) {
				t.Errorf("got %q, want it to contain %q", ae.Error(), tt.want)
			}
		})
	}
}

func TestPrepareJSONBodyOnTheWire(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "pets", petDoc, up.URL+"/api/v1")
	c := New(Options{})
	call, err := c.Prepare(t.Context(), endpoint(t, s, "createPet"), Args{RequestBody: map[string]any{"name": "Rex", "age": 3}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := up.last(t)
	if string(got.Body) != `{"age":3,"name":"Rex"}` || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("body %q type %q", got.Body, got.Header.Get("Content-Type"))
	}
}

// Path values must never leave their segment, whatever they hold.
func TestPathTraversalAndHostInjection(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "pets", petDoc, up.URL+"/api/v1")
	c := New(Options{})
	tests := []struct {
		value   string
		refused bool
		want    string // raw path on the wire
	}{
		{value: "..", refused: true},
		{value: ".", refused: true},
		{value: "../../admin", want: "/api/v1/pets/..%2F..%2Fadmin"},
		{value: "a/b", want: "/api/v1/pets/a%2Fb"},
		{value: "a%2Fb", want: "/api/v1/pets/a%252Fb"},
		{value: "http://evil.example/x", want: "/api/v1/pets/http:%2F%2Fevil.example%2Fx"},
		{value: "//evil.example", want: "/api/v1/pets/%2F%2Fevil.example"},
		{value: "x?admin=1#frag", want: "/api/v1/pets/x%3Fadmin%3D1%23frag"},
		{value: "@evil.example", want: "/api/v1/pets/@evil.example"},
		{value: "a\r\nHost: evil", want: "/api/v1/pets/a%0D%0AHost:%20evil"},
		{value: "%2e%2e", want: "/api/v1/pets/%252e%252e"},
		{value: "\\..\\", want: "/api/v1/pets/%5C..%5C"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			call, err := c.Prepare(t.Context(), endpoint(t, s, "getPet"), Args{Parameters: map[string]any{"petId": tt.value}})
			if tt.refused {
				asArgError(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := call.Do(t.Context()); err != nil {
				t.Fatal(err)
			}
			got := up.last(t)
			if got.RawPath != tt.want {
				t.Errorf("raw path %q, want %q", got.RawPath, tt.want)
			}
			if u, _ := url.Parse(up.URL); got.Host != u.Host {
				t.Errorf("host %q", got.Host)
			}
		})
	}
}

// Query, header and cookie values cannot add parameters, headers or hosts.
func TestInjectionThroughOtherLocations(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "pets", petDoc, up.URL+"/api/v1")
	c := New(Options{})
	call, err := c.Prepare(t.Context(), endpoint(t, s, "getPet"), Args{Parameters: map[string]any{
		"petId": "1", "limit": "5", "verbose": "true&admin=1",
	}})
	if err == nil {
		t.Fatalf("verbose with & accepted: %v", call.URL())
	}
	call, err = c.Prepare(t.Context(), endpoint(t, s, "getPet"), Args{Parameters: map[string]any{
		"petId": "1", "session": "a; admin=1", "X-Trace": "http://evil.example/",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := up.last(t)
	if got.Header.Get("Cookie") != "session=a%3B%20admin=1" {
		t.Errorf("cookie %q", got.Header.Get("Cookie"))
	}
	for _, bad := range []string{"a\r\nX-Evil: 1", "a\nb", "a\x00b"} {
		_, err := c.Prepare(t.Context(), endpoint(t, s, "getPet"), Args{Parameters: map[string]any{"petId": "1", "X-Trace": bad}})
		if ae := asArgError(t, err); !strings.Contains(ae.Error(), "X-Trace") {
			t.Errorf("%q: %v", bad, ae)
		}
		_, err = c.Prepare(t.Context(), endpoint(t, s, "getPet"), Args{Parameters: map[string]any{"petId": "1"}, Headers: map[string]string{"X-Other": bad}})
		asArgError(t, err)
	}
	// A query value with every reserved character arrives as one value.
	call, err = c.Prepare(t.Context(), endpoint(t, s, "listPets"), Args{Parameters: map[string]any{"status": "sold"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := call.URL().RawQuery; got != "status=sold" {
		t.Errorf("query %q", got)
	}
}

func TestModelHeaders(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "pets", petDoc, up.URL)
	c := New(Options{})
	e := endpoint(t, s, "getPet")
	for _, h := range []string{"Authorization", "cookie", "X-API-Key", "Host", "Content-Length", "Transfer-Encoding", "Connection", "Content-Type"} {
		_, err := c.Prepare(t.Context(), e, Args{Parameters: map[string]any{"petId": "1"}, Headers: map[string]string{h: "v"}})
		asArgError(t, err)
	}
	allow := true
	c2 := New(Options{Specs: map[string]SpecOptions{"pets": {AllowModelCredentialHeaders: &allow}}})
	call, err := c2.Prepare(t.Context(), e, Args{Parameters: map[string]any{"petId": "1"}, Headers: map[string]string{"Authorization": "Bearer mine", "x-trace": "t", "Accept": "text/plain"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := up.last(t)
	if got.Header.Get("Authorization") != "Bearer mine" || got.Header.Get("X-Trace") != "t" || got.Header.Get("Accept") != "text/plain" {
		t.Errorf("headers %v", got.Header)
	}
}

// An operation that cannot be rebuilt (a $ref to a missing component) is
// still callable: built from the catalog's parameters, not validated.
func TestPrepareWithoutOperation(t *testing.T) {
	up := newRecorder(t, nil)
	doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/items/{id}":{"get":{
	  "operationId":"getItem",
	  "parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"integer"}},
	                {"name":"q","in":"query","schema":{"$ref":"#/components/schemas/Missing"}}],
	  "responses":{"200":{"description":"ok"}}}}}}`
	s, err := spec.Parse(t.Context(), "broken.json", []byte(doc), spec.Options{BaseURL: up.URL})
	if err != nil {
		t.Skipf("spec refused at load: %v", err)
	}
	e := endpoint(t, s, "getItem")
	if _, err := e.Operation(t.Context()); err == nil {
		t.Skip("operation rebuilt; nothing to test")
	}
	c := New(Options{})
	call, err := c.Prepare(t.Context(), e, Args{Parameters: map[string]any{"id": "abc", "q": "x y"}})
	if err != nil {
		t.Fatal(err)
	}
	if call.Validated() {
		t.Error("validated without an operation")
	}
	if _, err := call.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := up.last(t); got.RawPath != "/items/abc" || got.RawQuery != "q=x%20y" {
		t.Errorf("got %s?%s", got.RawPath, got.RawQuery)
	}
	_, err = c.Prepare(t.Context(), e, Args{Parameters: map[string]any{"nope": 1}})
	ae := asArgError(t, err)
	if !errors.Is(err, err) || len(ae.Problems) != 2 {
		t.Errorf("problems %q", ae.Problems)
	}
}

func TestNoBaseURL(t *testing.T) {
	doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/x":{"get":{"operationId":"x","responses":{"200":{"description":"ok"}}}}}}`
	s, err := spec.Parse(t.Context(), "nobase.json", []byte(doc), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{}).Prepare(t.Context(), endpoint(t, s, "x"), Args{})
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(ue.Error(), "base_url") {
		t.Errorf("got %v", err)
	}
}
