package invoke

import (
	"mime"
	"strings"
	"testing"
)

// encDoc has a multipart and a form operation whose properties carry
// encoding objects (style, explode, allowReserved, headers, contentType).
const encDoc = `{"openapi":"3.0.3","info":{"title":"enc","version":"1"},"paths":{
  "/multi": {"post": {"operationId":"multi","requestBody":{"required":true,"content":{"multipart/form-data":{
     "schema":{"type":"object","properties":{
       "file":{"type":"string","format":"binary"},
       "name":{"type":"string"},
       "tags":{"type":"array","items":{"type":"string"}},
       "ids":{"type":"array","items":{"type":"integer"}},
       "csv":{"type":"array","items":{"type":"string"}},
       "piped":{"type":"array","items":{"type":"string"}},
       "spaced":{"type":"array","items":{"type":"string"}},
       "meta":{"type":"object","additionalProperties":true},
       "point":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}}},
       "flat":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}}},
       "lines":{"type":"array","items":{"type":"object","properties":{"price":{"type":"string"}}}},
       "attrs":{"type":"object","properties":{"a":{"type":"integer"}}}
     }},
     "encoding":{
       "file":{"contentType":"image/png","headers":{
         "X-Rate-Limit-Limit":{"schema":{"type":"integer","default":100}},
         "X-Kind":{"schema":{"type":"string","enum":["upload"]}},
         "X-Free":{"description":"no fixed value","schema":{"type":"string"}},
         "X-Choice":{"schema":{"type":"string","enum":["a","b"]}},
         "Content-Type":{"schema":{"type":"string","default":"text/evil"}},
         "Content-Disposition":{"schema":{"type":"string","default":"attachment"}},
         "X-Bad":{"schema":{"type":"string","default":"a\r\nInjected: yes"}},
         "X-List":{"schema":{"type":"array","items":{"type":"string"},"default":["p","q"]}}
       }},
       "name":{"headers":{"X-Lang":{"schema":{"type":"string","default":"en"}}}},
       "tags":{"style":"form","explode":true,"headers":{"X-Tag":{"schema":{"type":"string","enum":["t"]}}}},
       "ids":{"contentType":"text/plain"},
       "csv":{"style":"form","explode":false,"contentType":"text/csv"},
       "piped":{"style":"pipeDelimited","explode":false},
       "spaced":{"style":"spaceDelimited","explode":false},
       "meta":{"style":"deepObject","explode":true},
       "point":{"style":"form","explode":true},
       "flat":{"explode":false},
       "lines":{"style":"deepObject","explode":true}
     }}}},
   "responses":{"200":{"description":"ok"}}}},
  "/form": {"post": {"operationId":"form","requestBody":{"required":true,"content":{"application/x-www-form-urlencoded":{
     "schema":{"type":"object","properties":{
       "meta":{"type":"object","additionalProperties":true},
       "deep":{"type":"object","additionalProperties":true},
       "point":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}}},
       "flat":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}}},
       "piped":{"type":"array","items":{"type":"string"}},
       "spaced":{"type":"array","items":{"type":"string"}},
       "csv":{"type":"array","items":{"type":"string"}},
       "url":{"type":"string"},
       "plain":{"type":"string"},
       "urls":{"type":"array","items":{"type":"string"}},
       "links":{"type":"object","additionalProperties":{"type":"string"}}
     }},
     "encoding":{
       "deep":{"style":"deepObject","explode":true},
       "point":{"style":"form","explode":true},
       "flat":{"style":"form","explode":false},
       "piped":{"style":"pipeDelimited","explode":false},
       "spaced":{"style":"spaceDelimited","explode":false},
       "csv":{"explode":false},
       "url":{"allowReserved":true},
       "urls":{"allowReserved":true,"explode":false},
       "links":{"style":"deepObject","explode":true,"allowReserved":true}
     }}}},
   "responses":{"200":{"description":"ok"}}}}
}}`

// wireMultipart returns the body with the request's boundary replaced by
// "B", so a test can compare every byte.
func wireMultipart(t *testing.T, r recorded) string {
	t.Helper()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		t.Fatalf("content type %q", r.Header.Get("Content-Type"))
	}
	return strings.ReplaceAll(string(r.Body), params["boundary"], "B")
}

// part renders one part as multipart.Writer writes it (headers sorted).
func part(headers []string, body string) string {
	return "--B\r\n" + strings.Join(headers, "\r\n") + "\r\n\r\n" + body + "\r\n"
}

func cd(name string) string { return `Content-Disposition: form-data; name="` + name + `"` }

func TestMultipartEncodingOnTheWire(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "enc", encDoc, up.URL)
	e := endpoint(t, s, "multi")
	c := New(Options{})
	tests := []struct {
		name string
		body map[string]any
		want string // with the boundary as "B"
	}{
		{"exploded array: one part per item, with static headers",
			map[string]any{"tags": []any{"a", "b"}},
			part([]string{cd("tags"), "X-Tag: t"}, "a") + part([]string{cd("tags"), "X-Tag: t"}, "b")},
		{"array without style keeps repeated parts and contentType",
			map[string]any{"ids": []any{1, 2}},
			part([]string{cd("ids"), "Content-Type: text/plain"}, "1") + part([]string{cd("ids"), "Content-Type: text/plain"}, "2")},
		{"form non-exploded array: one part joined by commas, contentType ignored",
			map[string]any{"csv": []any{"a", "b c", "d"}},
			part([]string{cd("csv")}, "a,b c,d")},
		{"pipeDelimited",
			map[string]any{"piped": []any{"a", "b"}},
			part([]string{cd("piped")}, "a|b")},
		{"spaceDelimited",
			map[string]any{"spaced": []any{"a", "b"}},
			part([]string{cd("spaced")}, "a b")},
		{"deepObject object: name[key] parts, nested",
			map[string]any{"meta": map[string]any{"order": "6735", "ship": map[string]any{"city": "Paris"}, "n": 2}},
			part([]string{cd("meta[n]")}, "2") + part([]string{cd("meta[order]")}, "6735") + part([]string{cd("meta[ship][city]")}, "Paris")},
		{"deepObject array of objects: name[i][key] parts",
			map[string]any{"lines": []any{map[string]any{"price": "p1"}, map[string]any{"price": "p2"}}},
			part([]string{cd("lines[0][price]")}, "p1") + part([]string{cd("lines[1][price]")}, "p2")},
		{"form exploded object: one part per key",
			map[string]any{"point": map[string]any{"x": 1, "y": 2}},
			part([]string{cd("x")}, "1") + part([]string{cd("y")}, "2")},
		{"non-exploded object: key,value list in one part",
			map[string]any{"flat": map[string]any{"x": 1, "y": 2}},
			part([]string{cd("flat")}, "x,1,y,2")},
		{"object without style stays a JSON part",
			map[string]any{"attrs": map[string]any{"a": 1}},
			part([]string{cd("attrs"), "Content-Type: application/json"}, `{"a":1}`)},
		{"scalar with a static header",
			map[string]any{"name": "Jo"},
			part([]string{cd("name"), "X-Lang: en"}, "Jo")},
		{"file part: only fixed headers, never Content-Type, Content-Disposition or CRLF",
			map[string]any{"file": "aGk="},
			part([]string{`Content-Disposition: form-data; name="file"; filename="file"`, "Content-Type: image/png",
				"X-Kind: upload", "X-List: p,q", "X-Rate-Limit-Limit: 100"}, "hi")},
		{"fields before files, sorted",
			map[string]any{"file": "aGk=", "csv": []any{"x", "y"}, "name": "Jo"},
			part([]string{cd("csv")}, "x,y") + part([]string{cd("name"), "X-Lang: en"}, "Jo") +
				part([]string{`Content-Disposition: form-data; name="file"; filename="file"`, "Content-Type: image/png",
					"X-Kind: upload", "X-List: p,q", "X-Rate-Limit-Limit: 100"}, "hi")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, err := c.Prepare(t.Context(), e, Args{RequestBody: tt.body})
			if err != nil {
				t.Fatal(err)
			}
			if !call.Validated() {
				t.Error("not validated")
			}
			if _, err := call.Do(t.Context()); err != nil {
				t.Fatal(err)
			}
			got := wireMultipart(t, up.last(t))
			if want := tt.want + "--B--\r\n"; got != want {
				t.Errorf("body\n got %q\nwant %q", got, want)
			}
		})
	}
	// Values are still validated against the schema, not the wire form.
	_, err := c.Prepare(t.Context(), e, Args{RequestBody: map[string]any{"point": map[string]any{"x": "one"}, "csv": "not an array"}})
	if ae := asArgError(t, err); len(ae.Problems) != 2 {
		t.Errorf("problems %q", ae.Problems)
	}
}

func TestFormEncodingOnTheWire(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "enc", encDoc, up.URL)
	e := endpoint(t, s, "form")
	c := New(Options{})
	tests := []struct {
		name string
		body map[string]any
		want string
	}{
		{"object without encoding: bracket notation", map[string]any{"meta": map[string]any{"a": "1", "b": map[string]any{"c": "2"}}},
			"meta[a]=1&meta[b][c]=2"},
		{"deepObject object", map[string]any{"deep": map[string]any{"k": "v w"}}, "deep[k]=v+w"},
		{"form exploded object: key=value pairs", map[string]any{"point": map[string]any{"x": 1, "y": 2}}, "x=1&y=2"},
		{"form non-exploded object", map[string]any{"flat": map[string]any{"x": 1, "y": 2}}, "flat=x,1,y,2"},
		{"pipeDelimited array", map[string]any{"piped": []any{"a", "b"}}, "piped=a%7Cb"},
		{"spaceDelimited array", map[string]any{"spaced": []any{"a", "b"}}, "spaced=a+b"},
		{"explode false alone: form, joined", map[string]any{"csv": []any{"a", "b&c"}}, "csv=a,b%26c"},
		{"allowReserved keeps reserved characters, never ones that split the body",
			map[string]any{"url": "https://x.test/a?b=c&d#e+f g%", "plain": "https://x.test/a?b"},
			"plain=https%3A%2F%2Fx.test%2Fa%3Fb&url=https://x.test/a?b%3Dc%26d%23e%2Bf+g%25"},
		{"allowReserved non-exploded array", map[string]any{"urls": []any{"/a", "/b,c"}}, "urls=/a,/b,c"},
		{"allowReserved applies to values, not keys", map[string]any{"links": map[string]any{"a/b]": "/x:y"}},
			"links[a%2Fb%5D]=/x:y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, err := c.Prepare(t.Context(), e, Args{RequestBody: tt.body})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := call.Do(t.Context()); err != nil {
				t.Fatal(err)
			}
			got := up.last(t)
			if ct := got.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
				t.Errorf("content type %q", ct)
			}
			if string(got.Body) != tt.want {
				t.Errorf("body\n got %s\nwant %s", got.Body, tt.want)
			}
		})
	}
}
