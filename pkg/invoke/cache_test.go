package invoke

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/spec"
)

const cacheDoc = `{
  "openapi": "3.0.3",
  "info": {"title": "cache", "version": "1"},
  "paths": {
    "/items": {
      "get": {"operationId": "listItems",
        "parameters": [{"name": "page", "in": "query", "schema": {"type": "integer"}}],
        "responses": {"200": {"description": "ok"}}},
      "post": {"operationId": "addItem",
        "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
        "responses": {"200": {"description": "ok"}}}
    },
    "/items/{id}": {"get": {"operationId": "getItem",
      "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
      "responses": {"200": {"description": "ok"}}}}
  }
}`

// cacheFixture is a Caller over a test upstream: /items pages twice with
// Link headers, /items/missing is a 404, /items/big is larger than the
// response cap, every other /items/{id} is a 200.
type cacheFixture struct {
	up     *recorder
	spec   *spec.Spec
	caller *Caller
	now    time.Time
}

func newCacheFixture(t *testing.T) *cacheFixture {
	t.Helper()
	f := &cacheFixture{now: time.Unix(1_800_000_000, 0)}
	f.up = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/items" && r.Method == "GET":
			page, _ := strconv.Atoi(r.URL.Query().Get("page"))
			if page < 2 {
				w.Header().Set("Link", `<`+f.up.URL+`/items?page=`+strconv.Itoa(page+1)+`>; rel="next"`)
			}
			_, _ = w.Write([]byte(`[{"page":` + strconv.Itoa(page) + `}]`))
		case r.URL.Path == "/items/missing":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"no such item"}`))
		case r.URL.Path == "/items/big":
			_, _ = w.Write([]byte(`{"data":"` + strings.Repeat("x", 4096) + `"}`))
		default:
			_, _ = w.Write([]byte(`{"ok":true}`))
		}
	})
	f.spec = parseSpec(t, "cache", cacheDoc, f.up.URL)
	clock := func() time.Time { return f.now }
	f.caller = &Caller{
		Governed: Governed{Client: New(Options{MaxResponseBytes: 1024}), Now: clock},
		Answers:  answer.NewMemoryAnswers(answer.MemoryAnswersOptions{Now: clock}),
		Cache:    &answer.ResultCache{},
		CacheTTL: func(*spec.Endpoint) time.Duration { return time.Minute },
	}
	return f
}

func (f *cacheFixture) call(t *testing.T, principal, op string, in Args, pages int) *CallResult {
	t.Helper()
	r, err := f.caller.Call(as(t.Context(), principal), endpoint(t, f.spec, op), in, CallOptions{Pages: pages})
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return r
}

func item(id string) Args { return Args{Parameters: map[string]any{"id": id}} }

// A JSON answer of one page is decoded once, to read its next page, and
// the value is handed on for the view; a cache hit is read from the store,
// which keeps only the bytes.
func TestCallerHandsOnTheDecodedBody(t *testing.T) {
	f := newCacheFixture(t)
	first := f.call(t, "ada", "listItems", Args{Parameters: map[string]any{"page": 2}}, 1)
	if got, err := answer.EncodeJSON(first.Answer.Decoded); err != nil || string(got) != `[{"page":2}]` {
		t.Errorf("decoded %s, %v; want the body's value", got, err)
	}
	hit := f.call(t, "ada", "listItems", Args{Parameters: map[string]any{"page": 2}}, 1)
	if !hit.Cached || hit.Answer.Decoded != nil {
		t.Errorf("cache hit: cached %v, decoded %v", hit.Cached, hit.Answer.Decoded)
	}
}

// An identical idempotent call within the TTL is the stored answer again,
// with its age and size, and sends nothing; past the TTL it is a call.
func TestCallerServesRepeatsFromTheCache(t *testing.T) {
	f := newCacheFixture(t)
	first := f.call(t, "ada", "getItem", item("7"), 1)
	if first.Cached || first.ResponseID == "" || first.Paged == nil || first.Size != int64(len(`{"ok":true}`)) {
		t.Fatalf("first call: %+v", first)
	}
	f.now = f.now.Add(30 * time.Second)
	hit := f.call(t, "ada", "getItem", item("7"), 1)
	if !hit.Cached || hit.Age != 30*time.Second || hit.ResponseID != first.ResponseID || hit.Size != first.Size || hit.Paged != nil {
		t.Fatalf("repeat: %+v", hit)
	}
	if string(hit.Answer.Body) != `{"ok":true}` || hit.Answer.StatusCode != 200 || hit.ReadBytes() != 0 {
		t.Fatalf("repeat answer: %+v", hit.Answer)
	}
	if f.up.count() != 1 {
		t.Fatalf("upstream saw %d requests, want 1", f.up.count())
	}
	f.now = f.now.Add(30 * time.Second)
	if late := f.call(t, "ada", "getItem", item("7"), 1); late.Cached || f.up.count() != 2 {
		t.Fatalf("past the TTL: %+v, %d requests", late, f.up.count())
	}
}

// The key holds the principal, the endpoint, the arguments and the pages.
func TestCallerCacheKeyIsTheWholeCall(t *testing.T) {
	f := newCacheFixture(t)
	f.call(t, "ada", "getItem", item("7"), 1)
	for name, again := range map[string]func() *CallResult{
		"another principal": func() *CallResult { return f.call(t, "bob", "getItem", item("7"), 1) },
		"other arguments":   func() *CallResult { return f.call(t, "ada", "getItem", item("8"), 1) },
		"more pages":        func() *CallResult { return f.call(t, "ada", "getItem", item("7"), 2) },
	} {
		if r := again(); r.Cached {
			t.Errorf("%s: served from the cache", name)
		}
	}
}

// Only stored 2xx answers that are whole are cached; calls that are not
// idempotent never are.
func TestCallerCachesOnlyWhole2xx(t *testing.T) {
	f := newCacheFixture(t)
	for _, c := range []struct {
		name, op string
		in       Args
	}{
		{"404", "getItem", item("missing")},
		{"truncated", "getItem", item("big")},
		{"POST", "addItem", Args{RequestBody: map[string]any{"name": "rex"}}},
	} {
		before := f.up.count()
		for range 2 {
			r, err := f.caller.Call(as(t.Context(), "ada"), endpoint(t, f.spec, c.op), c.in, CallOptions{})
			var he *HTTPError
			if err != nil && !errors.As(err, &he) {
				t.Fatalf("%s: %v", c.name, err)
			}
			if r.Cached {
				t.Errorf("%s: served from the cache", c.name)
			}
			if c.name == "truncated" && (r.Answer == nil || !r.Answer.Truncated) {
				t.Fatalf("%s: the answer is whole", c.name)
			}
		}
		if n := f.up.count() - before; n != 2 {
			t.Errorf("%s: upstream saw %d requests, want 2", c.name, n)
		}
	}
}

// A hit on a paged call keeps the next page of the stored answer; once the
// store has let the answer go the call is made again.
func TestCallerCacheHitKeepsNextPageAndMissesWhenTheAnswerIsGone(t *testing.T) {
	f := newCacheFixture(t)
	first := f.call(t, "ada", "listItems", Args{}, 2)
	if len(first.Paged.Results) != 2 || first.Answer.NextPage == nil || first.ReadBytes() != int64(len(`[{"page":0}]`)+len(`[{"page":1}]`)) {
		t.Fatalf("first call: %+v, next %v", first.Paged, first.Answer.NextPage)
	}
	hit := f.call(t, "ada", "listItems", Args{}, 2)
	if !hit.Cached || fmt.Sprint(hit.Answer.NextPage["page"]) != fmt.Sprint(first.Answer.NextPage["page"]) || hit.Answer.Pages != 2 {
		t.Fatalf("hit: %+v", hit.Answer)
	}
	f.caller.Answers = answer.NewMemoryAnswers(answer.MemoryAnswersOptions{})
	if r := f.call(t, "ada", "listItems", Args{}, 2); r.Cached || f.up.count() != 4 {
		t.Fatalf("answer gone: cached %v, %d requests", r.Cached, f.up.count())
	}
}

func TestCacheKey(t *testing.T) {
	in := Args{Parameters: map[string]any{"a": 1, "b": "x"}}
	same := Args{Parameters: map[string]any{"b": "x", "a": 1}}
	k := cacheKey("ada", "fp", "s.op", in, 1)
	if cacheKey("ada", "fp", "s.op", same, 1) != k {
		t.Error("equal arguments give different keys")
	}
	for name, other := range map[string]string{
		"principal":   cacheKey("bob", "fp", "s.op", in, 1),
		"credentials": cacheKey("ada", "fp2", "s.op", in, 1),
		"endpoint":    cacheKey("ada", "fp", "s.op2", in, 1),
		"pages":       cacheKey("ada", "fp", "s.op", in, 2),
		"headers":     cacheKey("ada", "fp", "s.op", Args{Parameters: in.Parameters, Headers: map[string]string{"X": "1"}}, 1),
	} {
		if other == k {
			t.Errorf("another %s gives the same key", name)
		}
	}
}
