package invoke

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/specgate/specgate/internal/spectest"
)

// recorded is exactly what arrived at the test upstream.
type recorded struct {
	Method   string
	RawPath  string // the request target's path as sent (escaped)
	RawQuery string
	Header   http.Header
	Host     string
	Body     []byte
}

// recorder is an httptest upstream that records every request and answers
// with handler (200 {"ok":true} when nil).
type recorder struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []recorded
	handler http.HandlerFunc
}

func newRecorder(t *testing.T, handler http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{handler: handler}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		path := req.RequestURI
		if i := indexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{
			Method: req.Method, RawPath: path, RawQuery: req.URL.RawQuery,
			Header: req.Header.Clone(), Host: req.Host, Body: body,
		})
		r.mu.Unlock()
		if r.handler != nil {
			r.handler(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(r.Close)
	return r
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func (r *recorder) last(t *testing.T) recorded {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		t.Fatal("upstream received no request")
	}
	return r.reqs[len(r.reqs)-1]
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

// Specs for tests, shared with the other packages' tests.
var (
	parseSpec      = spectest.Parse
	endpoint       = spectest.Endpoint
	skipLargeSpecs = spectest.SkipLarge
	sharedSpec     = spectest.Shared
	decodeBody     = spectest.DecodeJSON
)

// asArgError fails unless err is an *ArgError.
func asArgError(t *testing.T, err error) *ArgError {
	t.Helper()
	var ae *ArgError
	if !errors.As(err, &ae) {
		t.Fatalf("got error %T %v, want *ArgError", err, err)
	}
	return ae
}

// petDoc is a small OpenAPI 3 document covering every parameter location.
const petDoc = `{
  "openapi": "3.0.3",
  "info": {"title": "pets", "version": "1"},
  "servers": [{"url": "http://example.invalid/api/v1"}],
  "components": {
    "securitySchemes": {
      "api_key": {"type": "apiKey", "in": "header", "name": "X-API-Key"}
    },
    "schemas": {
      "Pet": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}}
      }}
    }
  },
  "paths": {
    "/pets/{petId}": {
      "parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "string"}}],
      "get": {
        "operationId": "getPet",
        "parameters": [
          {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
          {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}},
          {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
          {"name": "session", "in": "cookie", "schema": {"type": "string"}}
        ],
        "responses": {"200": {"description": "ok"}}
      },
      "put": {
        "operationId": "updatePet",
        "requestBody": {"required": true, "content": {
          "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}},
          "application/x-www-form-urlencoded": {"schema": {"$ref": "#/components/schemas/Pet"}}
        }},
        "responses": {"200": {"description": "ok"}}
      }
    },
    "/pets": {
      "get": {
        "operationId": "listPets",
        "parameters": [
          {"name": "status", "in": "query", "required": true, "schema": {"type": "string", "enum": ["available", "sold"]}},
          {"name": "ids", "in": "query", "schema": {"type": "array", "items": {"type": "integer"}}}
        ],
        "security": [{"api_key": []}],
        "responses": {"200": {"description": "ok"}}
      },
      "post": {
        "operationId": "createPet",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
        "responses": {"201": {"description": "ok"}}
      }
    }
  }
}`
