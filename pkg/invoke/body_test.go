package invoke

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const bodyDoc = `{"openapi":"3.0.3","info":{"title":"b","version":"1"},"paths":{
  "/form": {"post": {"operationId":"form","requestBody":{"content":{"application/x-www-form-urlencoded":{
     "schema":{"type":"object","properties":{
       "name":{"type":"string"},
       "count":{"type":"integer"},
       "active":{"type":"boolean"},
       "metadata":{"type":"object","additionalProperties":{"type":"string"}},
       "items":{"type":"array","items":{"type":"object","properties":{"price":{"type":"string"},"quantity":{"type":"integer"}}}},
       "expand":{"type":"array","items":{"type":"string"}},
       "tags":{"type":"array","items":{"type":"string"}},
       "joined":{"type":"array","items":{"type":"string"}}
     }},
     "encoding":{"expand":{"style":"deepObject","explode":true},"joined":{"explode":false}}}}},
   "responses":{"200":{"description":"ok"}}}},
  "/upload": {"post": {"operationId":"upload","requestBody":{"required":true,"content":{"multipart/form-data":{
     "schema":{"type":"object","required":["file","purpose"],"properties":{
       "file":{"type":"string","format":"binary"},
       "purpose":{"type":"string","enum":["fine-tune","assistants"]},
       "meta":{"type":"object","properties":{"a":{"type":"integer"}}},
       "labels":{"type":"array","items":{"type":"string"}}
     }},
     "encoding":{"file":{"contentType":"application/jsonl"}}}}},
   "responses":{"200":{"description":"ok"}}}},
  "/raw": {"put": {"operationId":"raw","requestBody":{"content":{
     "application/octet-stream":{"schema":{"type":"string","format":"binary"}},
     "text/plain":{"schema":{"type":"string","maxLength":10}}}},
   "responses":{"200":{"description":"ok"}}}}
}}`

func TestFormBody(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "b", bodyDoc, up.URL)
	call, err := New(Options{}).Prepare(t.Context(), endpoint(t, s, "form"), Args{RequestBody: map[string]any{
		"name": "Jo & Co", "count": 2, "active": true,
		"metadata": map[string]any{"order_id": "6735", "note": "a=b"},
		"items":    []any{map[string]any{"price": "price_1", "quantity": 2}, map[string]any{"price": "price_2"}},
		"expand":   []any{"customer", "invoice"},
		"tags":     []any{"x", "y"},
		"joined":   []any{"p", "q"},
	}})
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
	want := "active=true&count=2&expand[0]=customer&expand[1]=invoice" +
		"&items[0][price]=price_1&items[0][quantity]=2&items[1][price]=price_2" +
		"&joined=p,q&metadata[note]=a%3Db&metadata[order_id]=6735&name=Jo+%26+Co&tags=x&tags=y"
	if string(got.Body) != want {
		t.Errorf("body\n got %s\nwant %s", got.Body, want)
	}
	// Validation sees the JSON value, not the wire form.
	_, err = New(Options{}).Prepare(t.Context(), endpoint(t, s, "form"), Args{RequestBody: map[string]any{
		"count": "many", "items": []any{map[string]any{"quantity": "x"}},
	}})
	ae := asArgError(t, err)
	if len(ae.Problems) != 2 {
		t.Errorf("problems %q", ae.Problems)
	}
}

func readParts(t *testing.T, r recorded) map[string][]partInfo {
	t.Helper()
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	out := map[string][]partInfo{}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(p)
		out[p.FormName()] = append(out[p.FormName()], partInfo{filename: p.FileName(), contentType: p.Header.Get("Content-Type"), data: string(data)})
	}
	return out
}

type partInfo struct{ filename, contentType, data string }

func TestMultipartBody(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "b", bodyDoc, up.URL)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "train.jsonl"), []byte(`{"prompt":"a"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := New(Options{UploadsDir: dir})
	e := endpoint(t, s, "upload")

	tests := []struct {
		name string
		file any
		want partInfo
	}{
		{"base64", base64.StdEncoding.EncodeToString([]byte("hello")), partInfo{"file", "application/jsonl", "hello"}},
		{"object", map[string]any{"base64": base64.StdEncoding.EncodeToString([]byte("hi")), "filename": "a.txt", "contentType": "text/plain"}, partInfo{"a.txt", "text/plain", "hi"}},
		{"text", map[string]any{"text": "plain text", "filename": "t.jsonl"}, partInfo{"t.jsonl", "application/jsonl", "plain text"}},
		{"path", map[string]any{"path": "train.jsonl"}, partInfo{"train.jsonl", "application/jsonl", `{"prompt":"a"}` + "\n"}},
		{"absolute path", map[string]any{"path": filepath.Join(dir, "train.jsonl")}, partInfo{"train.jsonl", "application/jsonl", `{"prompt":"a"}` + "\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, err := c.Prepare(t.Context(), e, Args{RequestBody: map[string]any{
				"file": tt.file, "purpose": "fine-tune", "meta": map[string]any{"a": 1}, "labels": []any{"x", "y"},
			}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := call.Do(t.Context()); err != nil {
				t.Fatal(err)
			}
			parts := readParts(t, up.last(t))
			if got := parts["file"]; len(got) != 1 || got[0] != tt.want {
				t.Errorf("file part %+v, want %+v", got, tt.want)
			}
			if got := parts["purpose"]; len(got) != 1 || got[0].data != "fine-tune" || got[0].filename != "" {
				t.Errorf("purpose part %+v", got)
			}
			if got := parts["meta"]; len(got) != 1 || got[0].data != `{"a":1}` || got[0].contentType != "application/json" {
				t.Errorf("meta part %+v", got)
			}
			if got := parts["labels"]; len(got) != 2 || got[0].data != "x" || got[1].data != "y" {
				t.Errorf("labels parts %+v", got)
			}
		})
	}
}

func TestUploadsOnlyUnderUploadsDir(t *testing.T) {
	s := parseSpec(t, "b", bodyDoc, "http://127.0.0.1:1")
	e := endpoint(t, s, "upload")
	root := t.TempDir()
	dir := filepath.Join(root, "uploads")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(root, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../secret.txt", secret, "link.txt", "/etc/passwd", "", "missing.txt", "."} {
		t.Run(p, func(t *testing.T) {
			_, err := New(Options{UploadsDir: dir}).Prepare(t.Context(), e, Args{RequestBody: map[string]any{
				"file": map[string]any{"path": p}, "purpose": "fine-tune",
			}})
			ae := asArgError(t, err)
			if strings.Contains(ae.Error(), "top secret") {
				t.Error("file content leaked")
			}
		})
	}
	// Without an uploads directory, reading by path is off.
	_, err := New(Options{}).Prepare(t.Context(), e, Args{RequestBody: map[string]any{"file": map[string]any{"path": "x"}, "purpose": "fine-tune"}})
	if ae := asArgError(t, err); !strings.Contains(ae.Error(), "no uploads directory") {
		t.Errorf("got %v", ae)
	}
	// Not base64.
	_, err = New(Options{}).Prepare(t.Context(), e, Args{RequestBody: map[string]any{"file": "not base64!", "purpose": "fine-tune"}})
	asArgError(t, err)
	// Enum checked, file present.
	_, err = New(Options{}).Prepare(t.Context(), e, Args{RequestBody: map[string]any{"file": "aGk=", "purpose": "other"}})
	if ae := asArgError(t, err); !strings.Contains(ae.Error(), "purpose") {
		t.Errorf("got %v", ae)
	}
}

func TestRawBodies(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "b", bodyDoc, up.URL)
	c := New(Options{})
	e := endpoint(t, s, "raw")
	call, err := c.Prepare(t.Context(), e, Args{RequestBody: base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 255})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := up.last(t); !bytes.Equal(got.Body, []byte{0, 1, 2, 255}) || got.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("octet body %v type %q", got.Body, got.Header.Get("Content-Type"))
	}
	call, err = c.Prepare(t.Context(), e, Args{RequestBody: "hello", ContentType: "text/plain; charset=utf-8"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call.Do(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := up.last(t); string(got.Body) != "hello" || got.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("text body %q type %q", got.Body, got.Header.Get("Content-Type"))
	}
	_, err = c.Prepare(t.Context(), e, Args{RequestBody: "far too long for ten", ContentType: "text/plain"})
	asArgError(t, err)
	_, err = c.Prepare(t.Context(), e, Args{RequestBody: "%%%", ContentType: "application/octet-stream"})
	asArgError(t, err)
}

// A wildcard media type is no Content-Type a server can read: a string body
// declared */* or text/* went out as "Content-Type: */*".
func TestWildcardStringBodyIsSentWithAConcreteType(t *testing.T) {
	const doc = `{"openapi":"3.0.3","info":{"title":"w","version":"1"},"paths":{
  "/obj": {"post": {"operationId":"obj","requestBody":{"content":{"*/*":{"schema":{"type":"object","properties":{"kind":{"type":"string"}}}}}},
   "responses":{"200":{"description":"ok"}}}},
  "/any": {"post": {"operationId":"any","requestBody":{"content":{"*/*":{"schema":{"type":"string"}}}},
   "responses":{"200":{"description":"ok"}}}},
  "/text": {"post": {"operationId":"text","requestBody":{"content":{"text/*":{"schema":{"type":"string"}}}},
   "responses":{"200":{"description":"ok"}}}}
}}`
	up := newRecorder(t, nil)
	s := parseSpec(t, "w", doc, up.URL)
	c := New(Options{})
	for _, tt := range []struct {
		id       string
		body     any
		wantType string
		wantBody string
	}{
		{"obj", map[string]any{"kind": "Pod"}, "application/json", `{"kind":"Pod"}`},
		// the JSON document a schema that takes no string asks for, given as a string
		{"obj", `{"kind": "Pod"}`, "application/json", `{"kind":"Pod"}`},
		{"any", "raw bytes", "application/octet-stream", "raw bytes"},
		{"text", "hello", "text/plain", "hello"},
	} {
		call, err := c.Prepare(t.Context(), endpoint(t, s, tt.id), Args{RequestBody: tt.body})
		if err != nil {
			t.Fatalf("%s %v: %v", tt.id, tt.body, err)
		}
		if _, err := call.Do(t.Context()); err != nil {
			t.Fatal(err)
		}
		got := up.last(t)
		if ct := got.Header.Get("Content-Type"); ct != tt.wantType || string(got.Body) != tt.wantBody {
			t.Errorf("%s %v: sent %q typed %q, want %q typed %q", tt.id, tt.body, got.Body, ct, tt.wantBody, tt.wantType)
		}
	}
	// A string that is not one JSON document, for a schema that takes no
	// string, went out as unchecked bytes.
	sent := len(up.reqs)
	for _, body := range []string{"not json at all", `{"kind":"Pod"} trailing`, `{"a":1}{"b":2}`, ""} {
		_, err := c.Prepare(t.Context(), endpoint(t, s, "obj"), Args{RequestBody: body})
		asArgError(t, err)
	}
	if len(up.reqs) != sent {
		t.Errorf("%d requests sent for refused bodies", len(up.reqs)-sent)
	}
}
