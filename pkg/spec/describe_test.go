package spec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

func describeSpec(t testing.TB, doc string) *Spec {
	t.Helper()
	s, err := Parse(t.Context(), "x.json", []byte(doc), Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func describeEndpoint(t testing.TB, s *Spec, id string) *Endpoint {
	t.Helper()
	for _, e := range s.Endpoints {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("no endpoint %s", id)
	return nil
}

func marshalContract(t testing.TB, c *Contract) string {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

const describePetstore = `{
  "openapi": "3.0.3",
  "info": {"title": "Pets", "version": "1"},
  "servers": [{"url": "https://pets.example/v1"}],
  "security": [{"key": []}],
  "paths": {
    "/pets/{petId}": {
      "parameters": [{"$ref": "#/components/parameters/PetID"}],
      "put": {
        "operationId": "updatePet",
        "summary": "Update a pet",
        "description": "Updates a pet in the store. See [the guide](https://example.com/guide) for more. Third sentence here.",
        "parameters": [
          {"name": "dryRun", "in": "query", "description": "Only validate.", "schema": {"type": "boolean", "default": false}},
          {"name": "X-Trace", "in": "header", "content": {"application/json": {"schema": {"type": "string"}}}}
        ],
        "requestBody": {"$ref": "#/components/requestBodies/PetBody"},
        "responses": {
          "200": {"$ref": "#/components/responses/PetResponse"},
          "404": {"description": "Pet not found. Check the id."},
          "default": {"description": "Unexpected error"}
        }
      }
    }
  },
  "components": {
    "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
    "parameters": {
      "PetID": {"name": "petId", "in": "path", "required": true, "description": "The pet's id.", "schema": {"type": "integer", "format": "int64", "minimum": 1}}
    },
    "requestBodies": {
      "PetBody": {"required": true, "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}},
        "application/x-www-form-urlencoded": {"schema": {"type": "object", "properties": {"name": {"type": "string"}}}}
      }}
    },
    "responses": {
      "PetResponse": {"description": "The pet", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}
    },
    "schemas": {
      "NewPet": {
        "type": "object",
        "required": ["name", "owner"],
        "properties": {
          "id": {"type": "integer", "readOnly": true},
          "name": {"type": "string", "description": "The pet's name.", "maxLength": 64, "example": "Rex"},
          "status": {"type": "string", "enum": ["available", "pending", "sold"]},
          "owner": {"$ref": "#/components/schemas/Owner"},
          "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}}
        }
      },
      "Owner": {
        "type": "object",
        "required": ["email"],
        "properties": {
          "email": {"type": "string", "format": "email"},
          "nickname": {"type": ["string", "null"]}
        }
      },
      "Tag": {"type": "object", "properties": {"label": {"type": "string"}}},
      "Pet": {
        "allOf": [
          {"$ref": "#/components/schemas/NewPet"},
          {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}, "secret": {"type": "string", "writeOnly": true}}}
        ]
      }
    }
  }
}`

func TestDescribeResolvesReferences(t *testing.T) {
	s := describeSpec(t, describePetstore)
	c := describeEndpoint(t, s, "x.updatePet").Describe(DescribeOptions{})

	if c.Method != "PUT" || c.Path != "/pets/{petId}" || c.BaseURL != "https://pets.example/v1" {
		t.Errorf("header = %s %s %s", c.Method, c.Path, c.BaseURL)
	}
	if want := "Updates a pet in the store. See the guide for more."; c.Description != want {
		t.Errorf("description = %q, want %q", c.Description, want)
	}
	var names []string
	for _, p := range c.Parameters {
		names = append(names, p.In+":"+p.Name)
	}
	if want := []string{"path:petId", "query:dryRun", "header:X-Trace"}; !slices.Equal(names, want) {
		t.Errorf("parameters = %v, want %v", names, want)
	}
	id := c.Parameters[0]
	if !id.Required || id.Schema == nil || id.Schema.Type != "integer" || id.Schema.Format != "int64" || string(id.Schema.Minimum) != "1" {
		t.Errorf("petId = %+v schema %+v", id, id.Schema)
	}
	if c.Parameters[2].Schema == nil || c.Parameters[2].Schema.Type != "string" {
		t.Errorf("a parameter's content schema is not used: %+v", c.Parameters[2])
	}

	body := c.RequestBody
	if body == nil || !body.Required || body.Schema == nil {
		t.Fatalf("requestBody = %+v", body)
	}
	if want := []string{"application/json", "application/x-www-form-urlencoded"}; !slices.Equal(body.ContentTypes, want) {
		t.Errorf("contentTypes = %v", body.ContentTypes)
	}
	if !strings.Contains(body.Note, "application/x-www-form-urlencoded") {
		t.Errorf("note = %q, want it to name the form type", body.Note)
	}
	props := body.Schema.Properties
	if _, ok := props["id"]; ok {
		t.Error("read-only id is offered in the request body")
	}
	owner := props["owner"]
	if owner == nil || owner.Properties["email"] == nil || owner.Properties["email"].Format != "email" ||
		!slices.Equal(owner.Required, []string{"email"}) {
		t.Errorf("owner = %+v", owner)
	}
	if nick := owner.Properties["nickname"]; nick == nil || nick.Type != "string" || !nick.Nullable {
		t.Errorf("3.1 type list not turned into nullable: %+v", nick)
	}
	if tags := props["tags"]; tags == nil || tags.Items == nil || tags.Items.Properties["label"] == nil {
		t.Errorf("array items not resolved: %+v", tags)
	}

	resp := c.Responses
	if resp == nil || resp.Success == nil || resp.Success.Status != "200" || resp.Success.ContentType != "application/json" {
		t.Fatalf("responses = %+v", resp)
	}
	if got, want := resp.Other, map[string]string{"404": "Pet not found.", "default": "Unexpected error"}; !equalMaps(got, want) {
		t.Errorf("other responses = %v, want %v", got, want)
	}

	if len(c.Security) != 1 || len(c.Security[0].Schemes) != 1 {
		t.Fatalf("security = %+v", c.Security)
	}
	if got := c.Security[0].Schemes[0]; got != (ContractScheme{Name: "key", Type: "apiKey", In: "header", ParamName: "X-API-Key"}) {
		t.Errorf("scheme = %+v", got)
	}
	if c.Elided != "" {
		t.Errorf("elided = %q for a small contract", c.Elided)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestDescribeMergesAllOf(t *testing.T) {
	s := describeSpec(t, describePetstore)
	c := describeEndpoint(t, s, "x.updatePet").Describe(DescribeOptions{})
	pet := c.Responses.Success.Schema
	if pet.AllOf != nil || pet.Type != "object" {
		t.Fatalf("allOf not merged: %s", marshalSchema(t, pet))
	}
	for _, n := range []string{"id", "name", "owner", "status", "tags"} {
		if pet.Properties[n] == nil {
			t.Errorf("merged schema lacks %s: %s", n, marshalSchema(t, pet))
		}
	}
	if pet.Properties["secret"] != nil {
		t.Error("write-only field shown in a response")
	}
	if want := []string{"name", "owner", "id"}; !slices.Equal(pet.Required, want) {
		t.Errorf("required = %v, want %v", pet.Required, want)
	}
}

func marshalSchema(t testing.TB, s *Schema) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDescribeSimplifiesAlternatives(t *testing.T) {
	s := describeSpec(t, `{"openapi":"3.1.0","info":{"title":"Alt","version":"1"},"paths":{"/x":{"post":{
	"operationId":"x",
	"requestBody":{"content":{"application/json":{"schema":{"type":"object","properties":{
		"kind":{"type":"integer","enum":[4],"allOf":[{"$ref":"#/components/schemas/Kind"}]},
		"note":{"oneOf":[{"type":"null"},{"type":"string","maxLength":10}]},
		"pick":{"anyOf":[{"type":"string"},{"type":"integer"}]}
	}}}}},
	"responses":{"204":{"description":"done"}}}}},
	"components":{"schemas":{"Kind":{"type":"integer","oneOf":[{"const":1,"title":"ONE"},{"const":4,"title":"FOUR"}]}}}}`)
	c := describeEndpoint(t, s, "x.x").Describe(DescribeOptions{})
	props := c.RequestBody.Schema.Properties
	tests := []struct{ name, want string }{
		// A list of constants is an enum; the property's own enum wins.
		{"kind", `{"type":"integer","enum":[4]}`},
		// A null alternative is nullable; one alternative left is merged.
		{"note", `{"type":"string","nullable":true,"maxLength":10}`},
		{"pick", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`},
	}
	for _, tt := range tests {
		if got := marshalSchema(t, props[tt.name]); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestDescribeGivesBackDescriptionsThatFit(t *testing.T) {
	s := describeSpec(t, describeDeep)
	e := describeEndpoint(t, s, "x.makeThing")
	// Reaching the target takes cutting every description and then the
	// nested optional fields; after that, some descriptions fit again.
	for _, target := range []int{900, 1000, 1200} {
		c := e.Describe(DescribeOptions{TargetBytes: target})
		if n := len(marshalContract(t, c)); n > target {
			t.Errorf("target %d: %d bytes", target, n)
		}
	}
	c := e.Describe(DescribeOptions{TargetBytes: 1200})
	if c.Parameters[1].Description == "" || c.Parameters[2].Description == "" {
		t.Errorf("descriptions that fit were not given back: %s", marshalContract(t, c))
	}
	if strings.Contains(c.Elided, "longest descriptions;") || !strings.Contains(c.Elided, "optional fields of nested objects") {
		t.Errorf("elided = %q", c.Elided)
	}
}

func TestDescribeCutsCycles(t *testing.T) {
	tests := []struct {
		file, id, want string
	}{
		{"circular-ref.json", "circular-ref.getNode", `{"type":"object","properties":{"name":{"type":"string"},"next":{"type":"object","$cycle":"Node"}}}`},
		{"mutual-circular-ref.json", "mutual-circular-ref.getA", `{"type":"object","properties":{"b":{"type":"object","properties":{"a":{"type":"object","$cycle":"A"}}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			s, err := Load(t.Context(), filepath.Join("../../testdata", tt.file), Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := describeEndpoint(t, s, tt.id).Describe(DescribeOptions{})
			if got := marshalSchema(t, c.Responses.Success.Schema); got != tt.want {
				t.Errorf("schema =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// A body whose required fields sit several objects deep, next to plenty of
// optional detail.
const describeDeep = `{
  "openapi": "3.0.3",
  "info": {"title": "Deep", "version": "1"},
  "paths": {
    "/things/{thing}": {
      "post": {
        "operationId": "makeThing",
        "description": "` + "Makes a thing with a long description that goes on and on. It has several sentences. And more sentences." + `",
        "parameters": [
          {"name": "thing", "in": "path", "required": true, "schema": {"type": "string"}},
          {"name": "mode", "in": "query", "required": true, "description": "How to make it, described at length so that it costs bytes.", "schema": {"type": "string", "enum": ["fast", "slow"]}},
          {"name": "opt1", "in": "query", "description": "An optional parameter with a long description to cost bytes.", "schema": {"type": "string"}},
          {"name": "opt2", "in": "query", "description": "Another optional parameter with a long description to cost bytes.", "schema": {"type": "string"}}
        ],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
        "responses": {"201": {"description": "Made", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}
      }
    }
  },
  "components": {"schemas": {
    "Thing": {"type": "object", "required": ["spec"], "properties": {
      "spec": {"$ref": "#/components/schemas/Spec"},
      "label": {"type": "string", "description": "A label, described at length so that it costs bytes in the output."},
      "extra": {"$ref": "#/components/schemas/Extra"}
    }},
    "Spec": {"type": "object", "required": ["inner"], "properties": {
      "inner": {"type": "object", "required": ["value"], "properties": {
        "value": {"type": "integer", "description": "The value that must be sent."},
        "note": {"type": "string", "description": "An optional note with a description that costs bytes."}
      }},
      "color": {"type": "string", "enum": ["red", "green", "blue", "cyan", "magenta", "yellow", "black"]}
    }},
    "Extra": {"type": "object", "properties": {
      "a": {"type": "string", "description": "Optional field a, with a description."},
      "b": {"type": "string", "description": "Optional field b, with a description."},
      "c": {"type": "object", "properties": {"d": {"type": "string"}, "e": {"type": "string"}}}
    }}
  }}
}`

func TestDescribeRequiredSurvivesTinyBudget(t *testing.T) {
	s := describeSpec(t, describeDeep)
	e := describeEndpoint(t, s, "x.makeThing")
	full := e.Describe(DescribeOptions{TargetBytes: 1 << 20, MaxBytes: 1 << 20})
	if full.Elided != "" {
		t.Fatalf("elided with a huge budget: %q", full.Elided)
	}
	// Room for what the call needs, not for anything else.
	c := e.Describe(DescribeOptions{TargetBytes: 100, MaxBytes: 500})
	got := marshalContract(t, c)
	if len(got) >= len(marshalContract(t, full)) {
		t.Fatalf("tiny budget did not shrink:\n%s", got)
	}

	var params []string
	for _, p := range c.Parameters {
		params = append(params, p.Name)
		if p.Schema == nil || p.Schema.Type != "string" {
			t.Errorf("parameter %s lost its type: %+v", p.Name, p.Schema)
		}
	}
	if want := []string{"thing", "mode"}; !slices.Equal(params, want) {
		t.Errorf("parameters = %v, want %v (the required ones, in order)", params, want)
	}
	if mode := c.Parameters[1].Schema; len(mode.Enum) != 2 {
		t.Errorf("required enum cut: %s", marshalSchema(t, mode))
	}
	body := c.RequestBody.Schema
	want := `{"type":"object","required":["spec"],"properties":{"spec":{"type":"object","required":["inner"],"properties":{"inner":{"type":"object","required":["value"],"properties":{"value":{"type":"integer"}}}}}}}`
	if g := marshalSchema(t, body); g != want {
		t.Errorf("body =\n%s\nwant\n%s", g, want)
	}
	for _, note := range []string{"all optional parameters", "all optional body fields", "response schema", "longest descriptions"} {
		if !strings.Contains(c.Elided, note) {
			t.Errorf("elided = %q, want it to mention %q", c.Elided, note)
		}
	}
}

// describeWideUnion is a body whose required structure alone is large: a
// required list of items, each one of many alternatives with required
// nested objects (the shape of OpenAI's conversation items).
func describeWideUnion(variants int) string {
	var alts []string
	for i := range variants {
		alts = append(alts, fmt.Sprintf(`{"type":"object","required":["type","payload"],"properties":{`+
			`"type":{"type":"string","enum":["kind_%d"]},`+
			`"payload":{"type":"object","required":["first","second"],"properties":{`+
			`"first":{"type":"object","required":["value"],"properties":{"value":{"type":"string"}}},`+
			`"second":{"type":"object","required":["value"],"properties":{"value":{"type":"integer"}}}}}}}`, i))
	}
	return `{"openapi":"3.0.3","info":{"title":"Wide","version":"1"},"paths":{"/items":{"post":{
	"operationId":"addItems",
	"requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object","required":["items"],
	"properties":{"items":{"type":"array","items":{"oneOf":[` + strings.Join(alts, ",") + `]}},"note":{"type":"string"}}}}}},
	"responses":{"200":{"description":"ok"}}}}}}`
}

func TestDescribeCollapsesRequiredOnlyPastMaxBytes(t *testing.T) {
	s := describeSpec(t, describeWideUnion(60))
	e := describeEndpoint(t, s, "x.addItems")
	whole := len(marshalContract(t, e.Describe(DescribeOptions{MaxBytes: 1 << 20})))
	if whole < 16<<10 {
		t.Fatalf("fixture too small: %d bytes", whole)
	}
	c := e.Describe(DescribeOptions{MaxBytes: 12 << 10})
	got := marshalContract(t, c)
	if len(got) > 12<<10 {
		t.Errorf("%d bytes, want ≤ %d", len(got), 12<<10)
	}
	if !hasProperty(c.RequestBody.Schema, "items") || !slices.Equal(c.RequestBody.Schema.Required, []string{"items"}) {
		t.Errorf("top-level required field lost: %s", marshalSchema(t, c.RequestBody.Schema))
	}
	if !strings.Contains(c.Elided, "required fields included") {
		t.Errorf("elided = %q, want it to say required structure was cut", c.Elided)
	}
	// The cut goes only as deep as it must: each alternative keeps its
	// required top-level fields.
	alts := c.RequestBody.Schema.Properties["items"].Items.OneOf
	if len(alts) != 60 || !hasProperty(alts[0], "type") || !hasProperty(alts[0], "payload") {
		t.Errorf("alternatives cut too far: %s", marshalSchema(t, c.RequestBody.Schema))
	}

	// When even the deepest cut cannot reach the bound, nothing the call
	// needs is cut for nothing.
	c = e.Describe(DescribeOptions{MaxBytes: 100})
	if strings.Contains(c.Elided, "required fields included") {
		t.Errorf("required structure cut although it could not fit: %q", c.Elided)
	}
}

func TestDescribeShrinksSoftBeforeHard(t *testing.T) {
	s := describeSpec(t, describeDeep)
	e := describeEndpoint(t, s, "x.makeThing")
	// Under the hard bound but over the target: optional parameters stay.
	c := e.Describe(DescribeOptions{TargetBytes: 100, MaxBytes: 1 << 20})
	if len(c.Parameters) != 4 {
		t.Errorf("optional parameters dropped to reach only the soft target: %s", marshalContract(t, c))
	}
	if c.Elided == "" || strings.Contains(c.Elided, "all optional") {
		t.Errorf("elided = %q", c.Elided)
	}
}

func TestDescribeDeterministic(t *testing.T) {
	s := describeSpec(t, describePetstore)
	e := describeEndpoint(t, s, "x.updatePet")
	first := marshalContract(t, e.Describe(DescribeOptions{}))
	for range 20 {
		if got := marshalContract(t, e.Describe(DescribeOptions{})); got != first {
			t.Fatalf("output differs between runs:\n%s\n%s", first, got)
		}
	}
}

func TestDescribeShortText(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		n    int
		want string
	}{
		{"One. Two. Three.", 100, 1, "One."},
		{"One. Two. Three.", 100, 2, "One. Two."},
		{"See [docs](https://x.y/z) <b>now</b>.", 100, 1, "See docs now."},
		{"A first sentence that fits. A second one that does not fit at all.", 30, 2, "A first sentence that fits."},
		{"words words words words", 12, 1, "words words…"},
	}
	for _, tt := range tests {
		if got := shortText(tt.in, tt.max, tt.n); got != tt.want {
			t.Errorf("shortText(%q, %d, %d) = %q, want %q", tt.in, tt.max, tt.n, got, tt.want)
		}
	}
}

// describeRequiredBody returns the names the request body's object schema
// requires at its top level and defines, read straight from the raw JSON.
func describeRequiredBody(e *Endpoint) []string {
	d := &describer{s: e.spec}
	var op map[string]json.RawMessage
	if json.Unmarshal(e.raw, &op) != nil || op["requestBody"] == nil {
		return nil
	}
	body, ok := d.resolveObject(op["requestBody"])
	if !ok {
		return nil
	}
	content, _ := objectEntries(body["content"])
	if len(content) == 0 {
		return nil
	}
	var mt map[string]json.RawMessage
	if json.Unmarshal(content[0].Value, &mt) != nil || mt["schema"] == nil {
		return nil
	}
	sch, ok := d.resolveObject(mt["schema"])
	if !ok {
		return nil
	}
	if t := rawString(sch["type"]); t != "" && t != "object" {
		return nil
	}
	objects := []map[string]json.RawMessage{sch}
	parts, _ := field[[]json.RawMessage](sch, "allOf")
	for _, p := range parts {
		if o, ok := d.resolveObject(p); ok {
			objects = append(objects, o)
		}
	}
	var req []string
	defined := map[string]bool{}
	for _, o := range objects {
		req = mergeNames(req, rawStrings(o["required"]))
		props, _ := field[map[string]json.RawMessage](o, "properties")
		for n := range props {
			defined[n] = true
		}
	}
	// A name required but never defined (a spec bug) has nothing to show.
	return slices.DeleteFunc(req, func(n string) bool { return !defined[n] })
}

// hasProperty reports whether s, or one of its alternatives, shows name.
func hasProperty(s *Schema, name string) bool {
	if s == nil {
		return false
	}
	if p, ok := s.Properties[name]; ok && (p.Type != nil || p.Cycle != "" || p.Ref != "" ||
		p.AllOf != nil || p.OneOf != nil || p.AnyOf != nil || p.Enum != nil || p.Const != nil) {
		return true
	}
	for _, list := range [][]*Schema{s.AllOf, s.OneOf, s.AnyOf} {
		for _, v := range list {
			if hasProperty(v, name) {
				return true
			}
		}
	}
	return false
}

func TestDescribeRealSpecs(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("loads large specs: runs without -race and -short")
	}
	tests := []struct {
		file      string
		maxMedian int // 0: not checked
	}{
		{"github-full.json", 3 << 10},
		{"stripe.json", 0},
		{"k8s.json", 0},
		{"openai.yaml", 0},
		{"box.json", 0},
		{"discord.json", 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(sharedSpecs, tt.file)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s: %v", path, err)
			}
			s, err := Load(t.Context(), path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var sizes []int
			largest, largestID := 0, ""
			for _, e := range s.Endpoints {
				c := e.Describe(DescribeOptions{})
				n := len(marshalContract(t, c))
				sizes = append(sizes, n)
				if n > largest {
					largest, largestID = n, e.ID
				}
				if n > DefaultDescribeMaxBytes {
					t.Errorf("%s: %d bytes, over the %d byte bound", e.ID, n, DefaultDescribeMaxBytes)
				}
				for _, p := range e.Params {
					if !p.Required {
						continue
					}
					i := slices.IndexFunc(c.Parameters, func(cp ContractParam) bool { return cp.Name == p.Name && cp.In == p.In })
					if i < 0 {
						t.Errorf("%s: required parameter %s (%s) missing", e.ID, p.Name, p.In)
					}
				}
				for _, name := range describeRequiredBody(e) {
					if c.RequestBody == nil || !hasProperty(c.RequestBody.Schema, name) {
						t.Errorf("%s: required body field %s missing", e.ID, name)
					}
				}
			}
			if len(sizes) == 0 {
				t.Fatal("no endpoints")
			}
			sort.Ints(sizes)
			median, p90 := sizes[len(sizes)/2], sizes[len(sizes)*9/10]
			t.Logf("%s: %d endpoints, median %d B, p90 %d B, max %d B (%s)", tt.file, len(sizes), median, p90, largest, largestID)
			if tt.maxMedian > 0 && median > tt.maxMedian {
				t.Errorf("median %d bytes, want ≤ %d", median, tt.maxMedian)
			}
		})
	}
}

func BenchmarkDescribe(b *testing.B) {
	path := filepath.Join(sharedSpecs, "github-full.json")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("%s: %v", path, err)
	}
	s, err := Load(b.Context(), path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		s.Endpoints[i%len(s.Endpoints)].Describe(DescribeOptions{})
		i++
	}
}

// A discriminator's property picks the alternative: a value without it
// matches none, so inspect shows it required in every alternative, even one
// that declares it optional (OpenAI's conversation items; the sweep, like a
// model, left "type" out and was refused).
func TestDescribeDiscriminatorPropertyIsRequired(t *testing.T) {
	s := describeSpec(t, `{"openapi":"3.0.3","info":{"title":"D","version":"1"},"paths":{"/items":{"post":{
	"operationId":"addItem",
	"requestBody":{"required":true,"content":{"application/json":{"schema":{
	  "oneOf":[{"$ref":"#/components/schemas/Message"},{"$ref":"#/components/schemas/Call"}],
	  "discriminator":{"propertyName":"type","mapping":{"message":"#/components/schemas/Message","call":"#/components/schemas/Call"}}}}}},
	"responses":{"200":{"description":"ok"}}}}},
	"components":{"schemas":{
	  "Message":{"type":"object","required":["content"],"properties":{"type":{"type":"string","enum":["message"]},"content":{"type":"string"}}},
	  "Call":{"type":"object","required":["type","name"],"properties":{"type":{"type":"string","enum":["call"]},"name":{"type":"string"}}}}}}`)
	c := describeEndpoint(t, s, "x.addItem").Describe(DescribeOptions{MaxBytes: 1 << 20})
	alts := c.RequestBody.Schema.OneOf
	if len(alts) != 2 {
		t.Fatalf("alternatives: %s", marshalSchema(t, c.RequestBody.Schema))
	}
	for _, want := range [][]string{{"content", "type"}, {"name", "type"}} {
		found := false
		for _, a := range alts {
			got := slices.Clone(a.Required)
			slices.Sort(got)
			found = found || slices.Equal(got, want)
		}
		if !found {
			t.Errorf("no alternative requires %v: %s", want, marshalSchema(t, c.RequestBody.Schema))
		}
	}
}
