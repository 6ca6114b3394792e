package mock

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/spec"
)

// clock is a settable time for the quota tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func loadSpec(t testing.TB, path string) *spec.Spec {
	t.Helper()
	s, err := spec.Load(t.Context(), path, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func parseSpec(t testing.TB, doc string) *spec.Spec {
	t.Helper()
	s, err := spec.Parse(t.Context(), "things.yaml", []byte(doc), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newMock(t *testing.T, s *spec.Spec, opts Options) *httptest.Server {
	t.Helper()
	m, err := New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return srv
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, a.body)
	}
	return m
}

func do(t *testing.T, method, url, contentType, body string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

// The bundled Petstore, as `make run` serves it.
const petstore = "../../specs/petstore.yaml"

func TestPetstoreAnswers(t *testing.T) {
	srv := newMock(t, loadSpec(t, petstore), Options{})

	a := do(t, "GET", srv.URL+"/api/v3/pet/1", "", "")
	if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
		t.Fatalf("getPetById: %d %s %s", a.status, a.header.Get("Content-Type"), a.body)
	}
	pet := a.json(t)
	for _, k := range []string{"id", "name", "photoUrls"} {
		if _, ok := pet[k]; !ok {
			t.Errorf("pet has no %q: %s", k, a.body)
		}
	}
	if again := do(t, "GET", srv.URL+"/api/v3/pet/1", "", ""); !bytes.Equal(again.body, a.body) {
		t.Errorf("the same request answered differently:\n%s\n%s", a.body, again.body)
	}
	if a.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("no quota, yet X-RateLimit-Limit = %q", a.header.Get("X-RateLimit-Limit"))
	}

	tests := []struct {
		name, method, path, ctype, body string
		status                          int
		check                           func(t *testing.T, a answer)
	}{
		{name: "path parameter not an integer", method: "GET", path: "/api/v3/pet/abc", status: 400,
			check: func(t *testing.T, a answer) {
				if m := a.json(t); m["error"] != "invalid_request" || !strings.Contains(m["message"].(string), `"petId"`) {
					t.Errorf("400 body %s", a.body)
				}
			}},
		{name: "enum query parameter", method: "GET", path: "/api/v3/pet/findByStatus?status=sold", status: 200,
			check: func(t *testing.T, a answer) {
				var pets []map[string]any
				if err := json.Unmarshal(a.body, &pets); err != nil || len(pets) == 0 {
					t.Errorf("findByStatus body %s", a.body)
				}
			}},
		{name: "query parameter outside its enum", method: "GET", path: "/api/v3/pet/findByStatus?status=lost", status: 400},
		{name: "unknown path", method: "GET", path: "/api/v3/nothing/here", status: 404},
		{name: "path outside the server path", method: "GET", path: "/pet/1", status: 404},
		{name: "known path, other method", method: "PATCH", path: "/api/v3/pet/1", status: 405,
			check: func(t *testing.T, a answer) {
				if got := a.header.Get("Allow"); got != "DELETE, GET, POST" {
					t.Errorf("Allow = %q", got)
				}
			}},
		{name: "valid body", method: "POST", path: "/api/v3/pet", ctype: "application/json",
			body: `{"name":"rex","photoUrls":["https://example.com/rex.png"]}`, status: 200},
		{name: "body missing a required field", method: "POST", path: "/api/v3/pet", ctype: "application/json",
			body: `{"name":"rex"}`, status: 400,
			check: func(t *testing.T, a answer) {
				if m := a.json(t); !strings.Contains(m["message"].(string), "request body") {
					t.Errorf("400 body %s", a.body)
				}
			}},
		{name: "body that is not JSON", method: "POST", path: "/api/v3/pet", ctype: "application/json", body: `{`, status: 400},
		{name: "trailing slash", method: "GET", path: "/api/v3/store/inventory/", status: 200},
		{name: "HEAD of a GET", method: "HEAD", path: "/api/v3/store/inventory", status: 200},
		{name: "escaped path", method: "GET", path: "/api/v3/user/a%2Fb", status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := do(t, tt.method, srv.URL+tt.path, tt.ctype, tt.body)
			if a.status != tt.status {
				t.Fatalf("%s %s = %d, want %d: %s", tt.method, tt.path, a.status, tt.status, a.body)
			}
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}

// TestSharedPetstoreQuota is `specgate mock` on the shared Petstore with 5
// requests per 10 s: the 6th gets 429 with Retry-After and X-RateLimit-*;
// unknown paths and refused requests count against nothing.
func TestSharedPetstoreQuota(t *testing.T) {
	path := sharedSpecs + "/petstore-v3.yaml"
	if _, err := os.Stat(path); err != nil {
		t.Skip("no shared specs at " + sharedSpecs)
	}
	clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	srv := newMock(t, loadSpec(t, path), Options{RequestsPerWindow: 5, Window: 10 * time.Second, Now: clk.Now})
	start := clk.Now()

	for i := 1; i <= 5; i++ {
		a := do(t, "GET", srv.URL+"/api/v3/pet/"+strconv.Itoa(i), "", "")
		if a.status != 200 {
			t.Fatalf("request %d = %d: %s", i, a.status, a.body)
		}
		if got, want := a.header.Get("X-RateLimit-Remaining"), strconv.Itoa(5-i); got != want {
			t.Errorf("request %d: X-RateLimit-Remaining = %s, want %s", i, got, want)
		}
		if got, want := a.header.Get("X-RateLimit-Reset"), strconv.FormatInt(clk.Now().Add(10*time.Second).Unix(), 10); got != want {
			t.Errorf("request %d: X-RateLimit-Reset = %s, want %s", i, got, want)
		}
		clk.Advance(time.Second)
	}
	// An unknown path: 404, and it costs nothing.
	if a := do(t, "GET", srv.URL+"/api/v3/unknown", "", ""); a.status != 404 || a.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("unknown path = %d, remaining %q", a.status, a.header.Get("X-RateLimit-Remaining"))
	}
	// The 6th, 5 s after the first: refused until the first leaves the window.
	a := do(t, "GET", srv.URL+"/api/v3/pet/6", "", "")
	if a.status != 429 {
		t.Fatalf("6th request = %d, want 429", a.status)
	}
	if got := a.header.Get("Retry-After"); got != "5" {
		t.Errorf("Retry-After = %q, want 5", got)
	}
	if a.header.Get("X-RateLimit-Limit") != "5" || a.header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("429 headers: limit %q remaining %q", a.header.Get("X-RateLimit-Limit"), a.header.Get("X-RateLimit-Remaining"))
	}
	if got, want := a.header.Get("X-RateLimit-Reset"), strconv.FormatInt(start.Add(4*time.Second+10*time.Second).Unix(), 10); got != want {
		t.Errorf("429 X-RateLimit-Reset = %s, want %s (the last admitted request leaves the window)", got, want)
	}
	if m := a.json(t); m["retryAfterSeconds"] != float64(5) {
		t.Errorf("429 body %s", a.body)
	}
	// Waiting exactly Retry-After is enough, and the refused call did not
	// count: one slot is free, not zero.
	clk.Advance(5 * time.Second)
	if a := do(t, "GET", srv.URL+"/api/v3/pet/6", "", ""); a.status != 200 || a.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("after Retry-After = %d, remaining %q", a.status, a.header.Get("X-RateLimit-Remaining"))
	}
	if a := do(t, "GET", srv.URL+"/api/v3/pet/7", "", ""); a.status != 429 {
		t.Fatalf("window full again = %d", a.status)
	}
}

func TestCooldownPerOperation(t *testing.T) {
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	srv := newMock(t, loadSpec(t, petstore), Options{Cooldown: 3 * time.Second, Now: clk.Now})
	if a := do(t, "GET", srv.URL+"/api/v3/pet/1", "", ""); a.status != 200 {
		t.Fatalf("first = %d", a.status)
	}
	clk.Advance(1500 * time.Millisecond)
	a := do(t, "GET", srv.URL+"/api/v3/pet/2", "", "")
	if a.status != 429 || a.header.Get("Retry-After") != "2" {
		t.Fatalf("within the cooldown = %d, Retry-After %q (want 429, 2: rounded up)", a.status, a.header.Get("Retry-After"))
	}
	if a.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("a cooldown alone has no window to advertise, got X-RateLimit-Limit %q", a.header.Get("X-RateLimit-Limit"))
	}
	if a := do(t, "GET", srv.URL+"/api/v3/store/inventory", "", ""); a.status != 200 {
		t.Errorf("another operation = %d, want 200", a.status)
	}
	clk.Advance(1500 * time.Millisecond)
	if a := do(t, "GET", srv.URL+"/api/v3/pet/2", "", ""); a.status != 200 {
		t.Errorf("after the cooldown = %d", a.status)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{RequestsPerWindow: -1, Window: time.Second}, "requests per window must be positive"},
		{Options{RequestsPerWindow: 5}, "a window is required"},
		{Options{Window: time.Second}, "a window needs requests per window"},
		{Options{Cooldown: -time.Second}, "cooldown must not be negative"},
	} {
		if _, err := New(&spec.Spec{}, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want %q", tt.opts, err, tt.want)
		}
	}
}

const thingsSpec = `
openapi: 3.0.3
info: {title: things, version: "1"}
servers: [{url: "https://things.example/v2/"}]
paths:
  /things:
    post:
      operationId: createThing
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Thing"}
      responses:
        "201":
          description: created
          headers:
            Location: {schema: {type: string, format: uri}}
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Thing"}
        "400": {description: bad}
    get:
      operationId: listThings
      parameters:
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 50}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: array
                items: {$ref: "#/components/schemas/Thing"}
  /things/{id}:
    get:
      operationId: getThing
      parameters:
        - {name: id, in: path, required: true, schema: {type: string, format: uuid}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Thing"}
    delete:
      operationId: deleteThing
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        "204": {description: gone}
  /broken:
    get:
      operationId: getBroken
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, required: [n], properties: {n: {type: integer}}}
              example: {n: "not a number"}
  /text:
    get:
      operationId: getText
      responses:
        "200":
          description: ok
          content:
            text/plain:
              schema: {type: string, pattern: "^[A-Z]{3}-[0-9]{4}$"}
components:
  schemas:
    Thing:
      allOf:
        - {$ref: "#/components/schemas/Base"}
        - type: object
          required: [kind, shape, created, owner, count, size]
          properties:
            kind: {type: string, enum: [box, ball]}
            shape:
              oneOf:
                - {$ref: "#/components/schemas/Square"}
                - {$ref: "#/components/schemas/Circle"}
            created: {type: string, format: date-time}
            owner: {type: string, format: email}
            home: {type: string, format: uri}
            count: {type: integer, format: int64, minimum: 10, maximum: 12}
            size: {type: number, exclusiveMinimum: true, minimum: 0, maximum: 1}
            code: {type: string, minLength: 12, maxLength: 12}
            parent: {$ref: "#/components/schemas/Thing"}
            children: {type: array, items: {$ref: "#/components/schemas/Thing"}}
            secret: {type: string, writeOnly: true}
    Base:
      type: object
      required: [id]
      properties:
        id: {type: string, format: uuid, readOnly: true}
    Square:
      type: object
      required: [side]
      properties: {side: {type: integer}}
      additionalProperties: false
    Circle:
      type: object
      required: [radius]
      properties: {radius: {type: number}}
      additionalProperties: false
`

func TestGeneratedValues(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	srv := newMock(t, parseSpec(t, thingsSpec), Options{Logger: log})

	a := do(t, "GET", srv.URL+"/v2/things/0b6c7d62-0e0f-4a53-9d4b-6a4f4f4b2a11", "", "")
	if a.status != 200 {
		t.Fatalf("getThing = %d: %s", a.status, a.body)
	}
	thing := a.json(t)
	for _, k := range []string{"id", "kind", "shape", "created", "owner", "count", "size"} {
		if _, ok := thing[k]; !ok {
			t.Errorf("required %q missing: %s", k, a.body)
		}
	}
	if _, ok := thing["secret"]; ok {
		t.Errorf("writeOnly property in an answer: %s", a.body)
	}
	if k := thing["kind"]; k != "box" && k != "ball" {
		t.Errorf("kind = %v", k)
	}
	if _, err := time.Parse(time.RFC3339, thing["created"].(string)); err != nil {
		t.Errorf("created: %v", err)
	}
	if id := thing["id"].(string); len(id) != 36 || id[14] != '4' {
		t.Errorf("id %q is not a v4 uuid", id)
	}
	if o := thing["owner"].(string); !strings.Contains(o, "@") {
		t.Errorf("owner %q is not an email", o)
	}
	if c := thing["count"].(float64); c < 10 || c > 12 {
		t.Errorf("count %v outside [10, 12]", c)
	}
	if s := thing["size"].(float64); s <= 0 || s > 1 {
		t.Errorf("size %v outside (0, 1]", s)
	}
	if c, ok := thing["code"].(string); ok && len(c) != 12 {
		t.Errorf("code %q is not 12 long", c)
	}
	shape := thing["shape"].(map[string]any)
	if _, sq := shape["side"]; !sq {
		if _, ci := shape["radius"]; !ci {
			t.Errorf("shape is neither branch: %v", shape)
		}
	}
	if p, ok := thing["parent"]; ok && p != nil {
		t.Errorf("the $ref cycle was followed: parent = %v", p)
	}

	if a := do(t, "GET", srv.URL+"/v2/things?limit=99", "", ""); a.status != 400 || !strings.Contains(string(a.body), `query parameter \"limit\"`) {
		t.Errorf("limit above its maximum = %d: %s", a.status, a.body)
	}
	if a := do(t, "GET", srv.URL+"/v2/things?limit=3", "", ""); a.status != 200 {
		t.Errorf("listThings = %d: %s", a.status, a.body)
	}

	created := do(t, "POST", srv.URL+"/v2/things", "application/json",
		`{"kind":"box","shape":{"side":2},"created":"2026-01-02T03:04:05Z","owner":"a@b.c","count":11,"size":0.5}`)
	if created.status != 201 {
		t.Fatalf("createThing = %d, want the documented 201: %s", created.status, created.body)
	}
	if loc := created.header.Get("Location"); !strings.HasPrefix(loc, "https://") {
		t.Errorf("Location = %q", loc)
	}
	if a := do(t, "POST", srv.URL+"/v2/things", "application/json", `{"kind":"cube"}`); a.status != 400 {
		t.Errorf("createThing with a bad body = %d", a.status)
	}
	if a := do(t, "DELETE", srv.URL+"/v2/things/x", "", ""); a.status != 204 || len(a.body) != 0 {
		t.Errorf("deleteThing = %d %q", a.status, a.body)
	}

	// An example that fails its own schema is served, with one warning.
	for range 2 {
		if a := do(t, "GET", srv.URL+"/v2/broken", "", ""); a.status != 200 || string(a.body) != `{"n":"not a number"}` {
			t.Errorf("getBroken = %d %s", a.status, a.body)
		}
	}
	if n := strings.Count(logs.String(), "fails its own schema"); n != 1 {
		t.Errorf("%d warnings for the broken example, want 1:\n%s", n, logs.String())
	}

	text := do(t, "GET", srv.URL+"/v2/text", "", "")
	if text.status != 200 || text.header.Get("Content-Type") != "text/plain" || string(text.body) != "AAA-0000" {
		t.Errorf("getText = %d %q %q", text.status, text.header.Get("Content-Type"), text.body)
	}
}

func TestFromPattern(t *testing.T) {
	for _, tt := range []struct {
		pattern        string
		minLen, maxLen int
	}{
		{`^[0-9a-fA-F]+$`, 40, 40},
		{`^[a-z]{2,5}-\d+$`, 0, -1},
		{`^(foo|bar)_[A-Z]?x*$`, 6, 10},
		{`^\w+@\w+\.com$`, 0, -1},
	} {
		v, ok := fromPattern(tt.pattern, tt.minLen, tt.maxLen, maxStringBytes)
		if !ok {
			t.Errorf("fromPattern(%q) found nothing", tt.pattern)
			continue
		}
		if len(v) < tt.minLen || tt.maxLen >= 0 && len(v) > tt.maxLen {
			t.Errorf("fromPattern(%q) = %q: length %d outside [%d, %d]", tt.pattern, v, len(v), tt.minLen, tt.maxLen)
		}
	}
	if _, ok := fromPattern(`^a{5}$`, 0, 3, maxStringBytes); ok {
		t.Error("a pattern longer than maxLength gave a value")
	}
}

// TestExamplesServed: an answer comes from the media type's example, else
// its first named example, else the schema's example, else values made
// from the schema, which use property examples where given.
func TestExamplesServed(t *testing.T) {
	const doc = `
openapi: 3.0.3
info: {title: ex, version: "1"}
servers: [{url: "/"}]
paths:
  /media:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, properties: {a: {type: integer}}}
              example: {a: 1}
              examples: {zz: {value: {a: 9}}}
  /named:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, properties: {a: {type: integer}}}
              examples: {second: {value: {a: 3}}, first: {value: {a: 2}}}
  /schema:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, properties: {a: {type: integer}}, example: {a: 4}}
  /props:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                required: [name, tags]
                properties:
                  name: {type: string, example: doggie}
                  tags: {type: array, items: {type: string, example: good}}
`
	srv := newMock(t, parseSpec(t, doc), Options{})
	for path, want := range map[string]string{
		"/media":  `{"a":1}`,
		"/named":  `{"a":2}`,
		"/schema": `{"a":4}`,
	} {
		if a := do(t, "GET", srv.URL+path, "", ""); a.status != 200 || strings.TrimSpace(string(a.body)) != want {
			t.Errorf("GET %s = %d %s, want %s", path, a.status, a.body, want)
		}
	}
	a := do(t, "GET", srv.URL+"/props", "", "")
	m := a.json(t)
	tags, _ := m["tags"].([]any)
	if m["name"] != "doggie" || len(tags) == 0 || tags[0] != "good" {
		t.Errorf("GET /props = %s, want the property examples", a.body)
	}
}
