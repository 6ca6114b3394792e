package invoke

import (
	"strings"
	"testing"
)

// Every style on the wire, through Prepare and openapi3filter validation,
// for every location.
func TestStylesOnTheWire(t *testing.T) {
	doc := `{"openapi":"3.0.3","info":{"title":"s","version":"1"},"paths":{
	  "/m/{a}/l/{b}/s/{c}/x/{d}": {"get": {"operationId":"styles","parameters":[
	    {"name":"a","in":"path","required":true,"style":"matrix","explode":true,"schema":{"type":"array","items":{"type":"integer"}}},
	    {"name":"b","in":"path","required":true,"style":"label","schema":{"type":"array","items":{"type":"string"}}},
	    {"name":"c","in":"path","required":true,"style":"simple","explode":true,"schema":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"string"}}}},
	    {"name":"d","in":"path","required":true,"schema":{"type":"string"}},
	    {"name":"f","in":"query","schema":{"type":"array","items":{"type":"string"}}},
	    {"name":"fn","in":"query","explode":false,"schema":{"type":"array","items":{"type":"string"}}},
	    {"name":"sp","in":"query","style":"spaceDelimited","explode":false,"schema":{"type":"array","items":{"type":"string"}}},
	    {"name":"pp","in":"query","style":"pipeDelimited","explode":false,"schema":{"type":"array","items":{"type":"integer"}}},
	    {"name":"deep","in":"query","style":"deepObject","explode":true,"schema":{"type":"object","properties":{"gt":{"type":"integer"},"lt":{"type":"integer"}}}},
	    {"name":"X-Ids","in":"header","schema":{"type":"array","items":{"type":"integer"}}},
	    {"name":"X-Obj","in":"header","explode":true,"schema":{"type":"object","properties":{"k":{"type":"string"}}}},
	    {"name":"ck","in":"cookie","explode":false,"schema":{"type":"array","items":{"type":"string"}}}
	  ],"responses":{"200":{"description":"ok"}}}}}}`
	up := newRecorder(t, nil)
	s := parseSpec(t, "styles", doc, up.URL)
	c := New(Options{})
	call, err := c.Prepare(t.Context(), endpoint(t, s, "styles"), Args{Parameters: map[string]any{
		"a": []any{1, 2}, "b": []any{"p", "q r"}, "c": map[string]any{"x": 1, "y": "z"}, "d": "plain",
		"f": []any{"a", "b,c"}, "fn": []any{"a", "b"}, "sp": []any{"a", "b"}, "pp": []any{1, 2},
		"deep": map[string]any{"gt": 1, "lt": 9}, "X-Ids": []any{3, 4}, "X-Obj": map[string]any{"k": "v"},
		"ck": []any{"u", "v"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := up.last(t)
	if want := "/m/;a=1;a=2/l/.p,q%20r/s/x=1,y=z/x/plain"; got.RawPath != want {
		t.Errorf("path %q, want %q", got.RawPath, want)
	}
	if want := "f=a&f=b%2Cc&fn=a,b&sp=a%20b&pp=1%7C2&deep[gt]=1&deep[lt]=9"; got.RawQuery != want {
		t.Errorf("query %q, want %q", got.RawQuery, want)
	}
	if got.Header.Get("X-Ids") != "3,4" || got.Header.Get("X-Obj") != "k=v" || got.Header.Get("Cookie") != "ck=u,v" {
		t.Errorf("headers %v", got.Header)
	}

	// Validation reads the same styles back: a wrong item type is caught.
	_, err = c.Prepare(t.Context(), endpoint(t, s, "styles"), Args{Parameters: map[string]any{
		"a": []any{1, "x"}, "b": []any{"p"}, "c": map[string]any{"x": "nope"}, "d": "d", "pp": []any{"x"},
	}})
	ae := asArgError(t, err)
	joined := strings.Join(ae.Problems, "\n")
	for _, want := range []string{`"a" (path)`, `"c" (path)`, `"pp" (query)`} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems %q lack %s", ae.Problems, want)
		}
	}
}

// Swagger 2 collectionFormat arrives converted into style/explode.
func TestSwagger2CollectionFormat(t *testing.T) {
	doc := `{"swagger":"2.0","info":{"title":"s2","version":"1"},"host":"example.invalid","basePath":"/v2","paths":{"/find":{"get":{
	  "operationId":"find","parameters":[
	    {"name":"csv","in":"query","type":"array","items":{"type":"string"},"collectionFormat":"csv"},
	    {"name":"ssv","in":"query","type":"array","items":{"type":"string"},"collectionFormat":"ssv"},
	    {"name":"pipes","in":"query","type":"array","items":{"type":"string"},"collectionFormat":"pipes"},
	    {"name":"multi","in":"query","type":"array","items":{"type":"string"},"collectionFormat":"multi"}
	  ],"responses":{"200":{"description":"ok"}}}}}}`
	up := newRecorder(t, nil)
	s := parseSpec(t, "s2", doc, up.URL+"/v2")
	call, err := New(Options{}).Prepare(t.Context(), endpoint(t, s, "find"), Args{Parameters: map[string]any{
		"csv": []any{"a", "b"}, "ssv": []any{"a", "b"}, "pipes": []any{"a", "b"}, "multi": []any{"a", "b"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := call.URL().RawQuery, "csv=a,b&ssv=a%20b&pipes=a%7Cb&multi=a&multi=b"; got != want {
		t.Errorf("query %q, want %q", got, want)
	}
}
