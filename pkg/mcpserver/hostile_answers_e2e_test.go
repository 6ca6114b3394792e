package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/serve"
	"github.com/specgate/specgate/pkg/spec"
)

// hostileDoc is the spec of hostileUpstream: a cursor list, a second list
// beside it, a deep object and a plain list.
const hostileDoc = `{"openapi":"3.0.3","info":{"title":"hostile","version":"1"},"paths":{
 "/items":{"get":{"operationId":"listItems","parameters":[
   {"name":"cursor","in":"query","schema":{"type":"string"}},
   {"name":"limit","in":"query","schema":{"type":"integer"}}],
  "responses":{"200":{"description":"ok"}}}},
 "/other":{"get":{"operationId":"listOther","parameters":[
   {"name":"cursor","in":"query","schema":{"type":"string"}}],
  "responses":{"200":{"description":"ok"}}}},
 "/deep":{"get":{"operationId":"getDeep","responses":{"200":{"description":"ok"}}}},
 "/numbers":{"get":{"operationId":"listNumbers","responses":{"200":{"description":"ok"}}}}}}`

// hostileUpstream answers as an attacker's API would: cursors of
// cursorBytes bytes (three pages: items 1-2, 3, 4), a deepLevels-deep
// object, and 200 numbers. It records the cursors it was sent.
type hostileUpstream struct {
	*httptest.Server
	cursorBytes int
	deepLevels  int

	mu      sync.Mutex
	cursors []string
}

func newHostileUpstream(t testing.TB, cursorBytes, deepLevels int) *hostileUpstream {
	t.Helper()
	u := &hostileUpstream{cursorBytes: cursorBytes, deepLevels: deepLevels}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

// cursor is the cursor that leads to page n (2 or 3).
func (u *hostileUpstream) cursor(n int) string {
	p := "page" + strconv.Itoa(n) + "-"
	return p + strings.Repeat("c", max(0, u.cursorBytes-len(p)))
}

func (u *hostileUpstream) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/items", "/other":
		c := r.URL.Query().Get("cursor")
		u.mu.Lock()
		u.cursors = append(u.cursors, c)
		u.mu.Unlock()
		switch c {
		case "":
			w.Write([]byte(`{"items":[{"id":1},{"id":2}],"next_cursor":"` + u.cursor(2) + `"}`))
		case u.cursor(2):
			w.Write([]byte(`{"items":[{"id":3}],"next_cursor":"` + u.cursor(3) + `"}`))
		case u.cursor(3):
			w.Write([]byte(`{"items":[{"id":4}]}`))
		default:
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"unknown cursor"}`))
		}
	case "/deep":
		w.Write(deepJSON(u.deepLevels))
	case "/numbers":
		var b bytes.Buffer
		b.WriteByte('[')
		for i := range 200 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(i))
		}
		b.WriteByte(']')
		w.Write(b.Bytes())
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// lastCursor is the cursor of the last list request.
func (u *hostileUpstream) lastCursor(t *testing.T) string {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.cursors) == 0 {
		t.Fatal("the upstream saw no list request")
	}
	return u.cursors[len(u.cursors)-1]
}

// deepJSON is n levels of {"a": ...} around 1.
func deepJSON(n int) []byte {
	return []byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
}

// newHostileServer serves hostileDoc against u, with opts.
func newHostileServer(t testing.TB, u *hostileUpstream, opts Options) *Server {
	t.Helper()
	s, err := spec.Parse(t.Context(), "hostile.json", []byte(hostileDoc), spec.Options{Name: "hostile", BaseURL: u.URL})
	if err != nil {
		t.Fatal(err)
	}
	cat, ix, _ := servedCatalog(t, 0, s)
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	opts.SpecNames, opts.Caller.Client = []string{"hostile"}, cl
	srv := New(opts)
	srv.Publish(cat, ix, nil)
	return srv
}

// httpClients serves srv over HTTP with one token per name and returns a
// client for each.
func httpClients(t *testing.T, srv *Server, names ...string) []*client.Client {
	t.Helper()
	tokens := map[string]Principal{}
	for _, n := range names {
		tokens["tok-"+n] = Principal{Subject: n, Org: "acme"}
	}
	ts := httptest.NewServer(serve.NewHandler(srv, serve.Options{Tokens: tokens}))
	t.Cleanup(ts.Close)
	f := &pagingFixture{upstream: ts.URL}
	var out []*client.Client
	for _, n := range names {
		out = append(out, f.httpClient(t, "tok-"+n))
	}
	return out
}

var listItems = map[string]any{"endpointId": "hostile.listItems", "maxBytes": answer.MinResultBytes}

// A 2 MB next_cursor was copied whole into nextPage.parameters: with
// maxBytes 1024 the result was 4,001,647 bytes. Now the answer stays in its
// budget and nextPage names the stored answer.
func TestE2EHugeCursorKeepsTheAnswerBudget(t *testing.T) {
	u := newHostileUpstream(t, 2<<20, 0)
	c := connectTB(t, newHostileServer(t, u, Options{}), nil)
	a := callText(t, c, "invoke", listItems).ok(t)
	t.Logf("2 MB cursor at maxBytes %d: content[0].text %d bytes, whole result %d bytes", answer.MinResultBytes, len(a.text), a.wire)
	if len(a.text) > answer.MinResultBytes {
		t.Errorf("content[0].text is %d bytes, over maxBytes %d", len(a.text), answer.MinResultBytes)
	}
	id, _ := a.m["responseId"].(string)
	if np, _ := a.m["nextPage"].(map[string]any); id == "" || len(np) != 1 || np["nextPageOf"] != id {
		t.Errorf("nextPage %.200v, want {nextPageOf: %q}", a.m["nextPage"], id)
	}
	r := callText(t, c, "read_response", map[string]any{"responseId": id, "maxBytes": answer.MinResultBytes}).ok(t)
	if np, _ := r.m["nextPage"].(map[string]any); len(r.text) > answer.MinResultBytes || np["nextPageOf"] != id {
		t.Errorf("read_response: %d bytes, nextPage %.200v", len(r.text), r.m["nextPage"])
	}
}

// nextPageOf fetches the page the stored answer's cursor names, with that
// cursor as is; a bad id answers as read_response does.
func TestE2ENextPageOfFollowsTheStoredCursor(t *testing.T) {
	// Large enough to be named by id at any budget, small enough for a URL.
	u := newHostileUpstream(t, 100<<10, 0)
	srv := newHostileServer(t, u, Options{})
	cs := httpClients(t, srv, "ada", "bob")
	ada, bob := cs[0], cs[1]
	first := callText(t, ada, "invoke", withArgs(listItems, "maxBytes", answer.MaxResultBytes)).ok(t)
	id, _ := first.m["responseId"].(string)
	if np, _ := first.m["nextPage"].(map[string]any); np["nextPageOf"] != id {
		t.Fatalf("nextPage %.200v, want {nextPageOf: %q} at the largest budget", first.m["nextPage"], id)
	}

	// The model passes the last call's parameters again, a stale cursor
	// among them: the stored one is used.
	second := callText(t, ada, "invoke", withArgs(listItems, "nextPageOf", id, "parameters", map[string]any{"cursor": "stale", "limit": 2})).ok(t)
	if got := u.lastCursor(t); got != u.cursor(2) {
		t.Errorf("upstream got cursor %.20q… (%d bytes), want the stored one", got, len(got))
	}
	if items := second.m["body"].(map[string]any)["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != float64(3) {
		t.Errorf("second page %v", items)
	}
	id2, _ := second.m["responseId"].(string)
	if np, _ := second.m["nextPage"].(map[string]any); len(second.text) > answer.MinResultBytes || id2 == id || np["nextPageOf"] != id2 {
		t.Errorf("second page: %d bytes, nextPage %.200v, id %q", len(second.text), second.m["nextPage"], id2)
	}
	third := callText(t, ada, "invoke", withArgs(listItems, "nextPageOf", id2)).ok(t)
	if got := u.lastCursor(t); got != u.cursor(3) || third.m["nextPage"] != nil {
		t.Errorf("third page: cursor %.20q…, nextPage %.100v", got, third.m["nextPage"])
	}

	// pages follows the huge cursors inside one call and names the last.
	walk := callText(t, ada, "invoke", withArgs(listItems, "pages", 2)).ok(t)
	wid, _ := walk.m["responseId"].(string)
	if np, _ := walk.m["nextPage"].(map[string]any); len(walk.text) > answer.MinResultBytes || np["nextPageOf"] != wid {
		t.Errorf("pages 2: %d bytes, nextPage %.200v", len(walk.text), walk.m["nextPage"])
	}
	callText(t, ada, "invoke", withArgs(listItems, "nextPageOf", wid)).ok(t)
	if got := u.lastCursor(t); got != u.cursor(3) {
		t.Errorf("after pages 2, nextPageOf sent cursor %.20q…, want page 3's", got)
	}

	unknown := callText(t, ada, "invoke", withArgs(listItems, "nextPageOf", "r_AAAAAAAAAAAAAAAAAAAAAA")).code(t, codes.NotFound)
	other := callText(t, bob, "invoke", withArgs(listItems, "nextPageOf", id)).code(t, codes.NotFound)
	if other["message"] != unknown["message"] || other["hint"] != unknown["hint"] {
		t.Errorf("another principal's id answers differently from an unknown one:\n%v\n%v", other, unknown)
	}
	callText(t, ada, "invoke", map[string]any{"endpointId": "hostile.listOther", "nextPageOf": id}).code(t, codes.ValidationFailed)
	long := callText(t, ada, "invoke", withArgs(listItems, "nextPageOf", strings.Repeat("r", 1<<20))).code(t, codes.NotFound)
	if len(mustJSON(long)) > 2048 {
		t.Errorf("a 1 MB nextPageOf comes back in a %d-byte error", len(mustJSON(long)))
	}
	before := len(u.cursors)
	callText(t, ada, "invoke", withArgs(listItems, "nextPageOf", id3(t, third))).code(t, codes.ValidationFailed)
	if len(u.cursors) != before {
		t.Errorf("a refused nextPageOf reached the upstream")
	}
}

// id3 is the responseId of the last page, which has no next page.
func id3(t *testing.T, a toolAnswer) string {
	t.Helper()
	id, _ := a.m["responseId"].(string)
	if id == "" {
		t.Fatalf("last page not stored: %.300s", a.text)
	}
	return id
}

// resultDepth is how deeply the JSON of a whole tool result nests.
func resultDepth(t *testing.T, res *mcp.CallToolResult) int {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return jsonDepth(t, b)
}

// jsonDepth is how many levels of objects and arrays b nests.
func jsonDepth(t *testing.T, b []byte) int {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	depth, deepest := 0, 0
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return deepest
}

// callRaw calls a tool and returns its whole result.
func callRaw(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	return res
}

// A 300-deep upstream object came back 301 levels deep in
// structuredContent and text, past what the parser under the Python MCP SDK
// reads. invoke, read_response and jq now answer it at most 64 levels deep
// in the body and about 70 in the whole result.
func TestE2EDeepUpstreamJSONIsCutAt64Levels(t *testing.T) {
	u := newHostileUpstream(t, 0, 300)
	c := connectTB(t, newHostileServer(t, u, Options{}), nil)
	deep := map[string]any{"endpointId": "hostile.getDeep"}
	first := callRaw(t, c, "invoke", deep)
	a := callText(t, c, "invoke", deep).ok(t)
	id, _ := a.m["responseId"].(string)
	if id == "" {
		t.Fatalf("the deep answer was not stored: %.300s", a.text)
	}
	for _, tt := range []struct {
		name string
		res  *mcp.CallToolResult
	}{
		{"invoke", first},
		{"invoke with jq", callRaw(t, c, "invoke", withArgs(deep, "jq", ".a.a"))},
		{"read_response", callRaw(t, c, "read_response", map[string]any{"responseId": id})},
		{"read_response with jq", callRaw(t, c, "read_response", map[string]any{"responseId": id, "jq": "."})},
		{"read_response at the smallest budget", callRaw(t, c, "read_response", map[string]any{"responseId": id, "maxBytes": answer.MinResultBytes})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.res.IsError {
				t.Fatalf("tool error: %.300v", tt.res.Content)
			}
			whole := resultDepth(t, tt.res)
			text := []byte(tt.res.Content[0].(mcp.TextContent).Text)
			var m struct {
				Body   json.RawMessage `json:"body"`
				Shaped *answer.Shaped  `json:"shaped"`
			}
			if err := json.Unmarshal(text, &m); err != nil {
				t.Fatal(err)
			}
			body := jsonDepth(t, m.Body)
			t.Logf("300-deep upstream object: body %d levels, whole result %d levels", body, whole)
			if body > answer.MaxAnswerDepth || whole > answer.MaxAnswerDepth+6 {
				t.Errorf("body %d levels deep, whole result %d: want at most %d and %d", body, whole, answer.MaxAnswerDepth, answer.MaxAnswerDepth+6)
			}
			if m.Shaped == nil {
				t.Errorf("a summarised body carries no shaped: %.300s", text)
			}
		})
	}
}

// One principal's jq starved another's: 8 heavy filters from one made
// another's `jq: "length"` wait about 1s, and 2 of 8 timed out. With ada's
// filters holding half the slots and more of hers waiting, bob's invoke and
// read_response with jq run at once.
func TestE2EOnePrincipalsJQLeavesSlotsForAnother(t *testing.T) {
	u := newHostileUpstream(t, 0, 0)
	slots := answer.NewJQSlots(8)
	srv := newHostileServer(t, u, Options{JQSlots: slots})
	cs := httpClients(t, srv, "ada", "bob")
	bob := cs[1]

	// Ada's 8 heavy filters, as the HTTP handler names her: half hold a
	// slot, the rest wait for one of hers.
	ada := Principal{Subject: "ada", Org: "acme"}.Key()
	adaWaits, stopAda := context.WithCancel(t.Context())
	defer stopAda()
	for range slots.Share() {
		release, err := slots.Acquire(t.Context(), ada)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopAda()
	for range 8 - slots.Share() {
		wg.Go(func() {
			if release, err := slots.Acquire(adaWaits, ada); err == nil {
				release()
			}
		})
	}

	a := callText(t, bob, "invoke", map[string]any{"endpointId": "hostile.listNumbers", "jq": "length"}).ok(t)
	if fmt.Sprint(a.m["body"]) != "200" {
		t.Errorf("bob's invoke with jq: body %.200v", a.m["body"])
	}
	id, _ := a.m["responseId"].(string)
	r := callText(t, bob, "read_response", map[string]any{"responseId": id, "jq": "length"}).ok(t)
	if fmt.Sprint(r.m["body"]) != "200" {
		t.Errorf("bob's read_response with jq: body %.200v", r.m["body"])
	}
}
