package mcpserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/search"
	"github.com/specgate/specgate/pkg/spec"
)

// recorder is an upstream that records every request it receives.
type recorder struct {
	mu       sync.Mutex
	requests []recorded
	handler  func(w http.ResponseWriter, r *http.Request)
}

type recorded struct {
	Method, Path, Query string
	Body                []byte
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.requests = append(rc.requests, recorded{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Body: body})
	rc.mu.Unlock()
	if rc.handler != nil {
		rc.handler(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"id":7,"name":"doggie","status":"available"}`))
}

func (rc *recorder) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.requests)
}

type fixture struct {
	srv      *Server
	client   *client.Client
	upstream *recorder
	limiter  *ratelimit.Limiter
	cat      *spec.Catalog
}

// newFixture serves testdata/petstore-v3.yaml against a recording upstream
// with the given cooldown, through mcp-go's in-process client.
func newFixture(t *testing.T, interval time.Duration, budgets ...ratelimit.Budget) *fixture {
	t.Helper()
	rec := &recorder{}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	cat, ix, eps := servedCatalog(t, interval, petstoreAt(t, up.URL))
	l, err := ratelimit.New(ratelimit.Options{Endpoints: eps, Budgets: budgets})
	if err != nil {
		t.Fatal(err)
	}
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	srv := New(Options{SpecNames: []string{"petstore"}, Caller: invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l, MaxRetries: 2, MaxRetryWait: 5 * time.Second}}})
	srv.Publish(cat, ix, nil)
	c := connectTB(t, srv, nil)
	return &fixture{srv: srv, client: c, upstream: rec, limiter: l, cat: cat}
}

// petstoreAt loads testdata/petstore-v3.yaml as spec "petstore" calling
// upstream (its /api/v3).
func petstoreAt(t testing.TB, upstream string) *spec.Spec {
	t.Helper()
	s, err := spec.Load(t.Context(), "../../testdata/petstore-v3.yaml", spec.Options{Name: "petstore", BaseURL: upstream + "/api/v3"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// servedCatalog indexes specs and returns the catalog, its search index, and
// one limiter endpoint per operation with the given cooldown, on the host of
// its base URL.
func servedCatalog(t testing.TB, cooldown time.Duration, specs ...*spec.Spec) (*spec.Catalog, *search.Index, []ratelimit.Endpoint) {
	t.Helper()
	cat, err := spec.NewCatalog(specs...)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := search.New(cat, search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var eps []ratelimit.Endpoint
	for _, e := range cat.Endpoints() {
		eps = append(eps, ratelimit.Endpoint{ID: e.ID, Upstream: HostKey(e.BaseURL), Interval: cooldown})
	}
	return cat, ix, eps
}

// call calls a tool and returns its JSON text, checking that the
// structured content says the same.
func (f *fixture) call(t *testing.T, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	return callTool(t, f.client, name, args)
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: protocol error %v (tool failures must be results)", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items", name, len(res.Content))
	}
	text := res.Content[0].(mcp.TextContent).Text
	var fromText, fromStructured map[string]any
	if err := json.Unmarshal([]byte(text), &fromText); err != nil {
		t.Fatalf("%s: text is not JSON: %q", name, text)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(sc, &fromStructured); err != nil {
		t.Fatalf("%s: structuredContent is not an object: %s", name, sc)
	}
	if string(mustJSON(fromText)) != string(mustJSON(fromStructured)) {
		t.Fatalf("%s: text and structuredContent differ:\n%s\n%s", name, text, sc)
	}
	return fromText, res.IsError
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func errorOf(t *testing.T, res map[string]any) map[string]any {
	t.Helper()
	e, ok := res["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %v", res)
	}
	return e
}

func TestToolsListed(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	res, err := f.client.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		a := tool.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: not every annotation hint is set: %+v", tool.Name, a)
		}
	}
	want := "search,inspect,invoke,rate_limit_status,begin_task,end_task"
	got := strings.Join(names, ",")
	for _, n := range strings.Split(want, ",") {
		if !strings.Contains(","+got+",", ","+n+",") {
			t.Errorf("tool %s missing from %s", n, got)
		}
	}
	if strings.Contains(got, "set_rate_limit") {
		t.Error("set_rate_limit is registered without allow_runtime_tuning")
	}
}

func TestSearchInspectInvoke(t *testing.T) {
	f := newFixture(t, time.Hour)
	res, isErr := f.call(t, "search", map[string]any{"query": "find a pet by its id", "limit": 5})
	if isErr {
		t.Fatalf("search failed: %v", res)
	}
	hits := res["endpoints"].([]any)
	if len(hits) == 0 || len(hits) > 5 {
		t.Fatalf("%d hits", len(hits))
	}
	found := false
	for _, h := range hits {
		hit := h.(map[string]any)
		if hit["id"] == "petstore.getPetById" {
			found = true
			if hit["ready"] != true || hit["path"] != "/pet/{petId}" || hit["method"] != "GET" {
				t.Errorf("hit = %v", hit)
			}
		}
	}
	if !found {
		t.Fatalf("getPetById not among %v", hits)
	}

	res, isErr = f.call(t, "inspect", map[string]any{"endpointId": "petstore.getPetById"})
	if isErr || res["path"] != "/pet/{petId}" {
		t.Fatalf("inspect = %v", res)
	}
	if rl := res["rateLimit"].(map[string]any); rl["cooldown"] != "1h0m0s" || rl["ready"] != true {
		t.Errorf("inspect rateLimit = %v", rl)
	}

	res, isErr = f.call(t, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 7}})
	if isErr {
		t.Fatalf("invoke failed: %v", res)
	}
	if res["statusCode"] != float64(200) || res["body"].(map[string]any)["name"] != "doggie" {
		t.Errorf("invoke = %v", res)
	}
	if got := f.upstream.requests[0]; got.Method != "GET" || got.Path != "/api/v3/pet/7" {
		t.Errorf("upstream got %+v", got)
	}
	if _, ok := res["rateLimit"].(map[string]any)["queueWaitMs"]; !ok {
		t.Errorf("no queueWaitMs in %v", res["rateLimit"])
	}

	// The endpoint is now cooling down: search says so.
	res, _ = f.call(t, "search", map[string]any{"query": "pet by id", "limit": 3})
	for _, h := range res["endpoints"].([]any) {
		hit := h.(map[string]any)
		if hit["id"] == "petstore.getPetById" && (hit["ready"] != false || hit["retryAfterSeconds"].(float64) <= 0) {
			t.Errorf("cooling endpoint reported ready: %v", hit)
		}
	}
}

func TestCooldownRefusal(t *testing.T) {
	f := newFixture(t, time.Hour)
	args := map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}
	if res, isErr := f.call(t, "invoke", args); isErr {
		t.Fatalf("first call: %v", res)
	}
	res, isErr := f.call(t, "invoke", args)
	if !isErr {
		t.Fatalf("second call within the cooldown succeeded: %v", res)
	}
	e := errorOf(t, res)
	if e["code"] != "rate_limit" || e["scope"] != "proxy" || e["retryable"] != true {
		t.Errorf("error = %v", e)
	}
	if s := e["retryAfterSeconds"].(float64); s <= 3599 || s > 3600 {
		t.Errorf("retryAfterSeconds = %v, want just under an hour", s)
	}
	if lim := e["limit"].(map[string]any); lim["kind"] != "cooldown" || lim["key"] != "petstore.getPetById" || lim["interval"] != "1h0m0s" {
		t.Errorf("limit = %v", lim)
	}
	sugg, _ := e["suggestions"].([]any)
	if len(sugg) == 0 || len(sugg) > 5 {
		t.Fatalf("suggestions = %v", e["suggestions"])
	}
	for _, s := range sugg {
		if s.(map[string]any)["id"] == "petstore.getPetById" {
			t.Error("the refused endpoint suggests itself")
		}
	}
	if !strings.Contains(e["hint"].(string), "Meanwhile you can call: ") {
		t.Errorf("hint = %q", e["hint"])
	}
	if n := f.upstream.count(); n != 1 {
		t.Errorf("upstream saw %d requests, want 1", n)
	}
	// Recovery: once the cooldown is shortened at runtime the call passes.
	if err := f.limiter.SetCooldown("petstore.getPetById", 0); err != nil {
		t.Fatal(err)
	}
	if res, isErr := f.call(t, "invoke", args); isErr {
		t.Fatalf("after the cooldown: %v", res)
	}
}

// TestUndeclaredArgumentHintNamesTheDeclared: mapError replaced the
// argument error's hint with a fixed sentence; the model now reads the
// parameters the operation declares, and the one it misspelled.
func TestUndeclaredArgumentHintNamesTheDeclared(t *testing.T) {
	f := newFixture(t, time.Hour)
	for _, tt := range []struct {
		name   string
		params map[string]any
		hint   string
	}{
		{"undeclared", map[string]any{"orderId": 1, "color": "red"},
			"Use only the declared parameters: orderId (path). Call inspect for their schemas."},
		{"misspelled", map[string]any{"orderID": 1},
			`"orderID" is not declared: did you mean "orderId"? Use only the declared parameters: orderId (path). Call inspect for their schemas.`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, isErr := f.call(t, "invoke", map[string]any{"endpointId": "petstore.getOrderById", "parameters": tt.params})
			e := errorOf(t, res)
			if !isErr || e["code"] != codes.ValidationFailed || e["hint"] != tt.hint {
				t.Errorf("error = %v, want validation_failed with hint %q", e, tt.hint)
			}
		})
	}
	if n := f.upstream.count(); n != 0 {
		t.Fatalf("bad calls reached the upstream %d times", n)
	}
}

func TestBadCallsCostNothing(t *testing.T) {
	f := newFixture(t, time.Hour)
	tests := []struct {
		name string
		args map[string]any
		code string
	}{
		{"unknown id", map[string]any{"endpointId": "petstore.nope"}, "not_found"},
		{"undeclared parameter", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1, "color": "red"}}, "validation_failed"},
		{"missing required", map[string]any{"endpointId": "petstore.getPetById"}, "validation_failed"},
		{"wrong type", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": "seven"}}, "validation_failed"},
		{"parameters not an object", map[string]any{"endpointId": "petstore.getPetById", "parameters": "petId=1"}, "validation_failed"},
		{"unknown tool argument", map[string]any{"endpointId": "petstore.getPetById", "params": map[string]any{}}, "validation_failed"},
		{"no id", map[string]any{}, "validation_failed"},
		{"jq not allowed", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}, "jq": "def f: .; f"}, "validation_failed"},
		{"jq does not compile", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}, "jq": ".[ | "}, "validation_failed"},
		{"jq string repetition", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}, "jq": `"x" * 5e8`}, "validation_failed"},
		{"maxBytes 0", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}, "maxBytes": 0}, "validation_failed"},
		{"pages 99", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}, "pages": 99}, "validation_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, isErr := f.call(t, "invoke", tt.args)
			if !isErr {
				t.Fatalf("succeeded: %v", res)
			}
			if e := errorOf(t, res); e["code"] != tt.code || e["message"] == "" {
				t.Errorf("error = %v, want code %s", e, tt.code)
			}
		})
	}
	if n := f.upstream.count(); n != 0 {
		t.Fatalf("bad calls reached the upstream %d times", n)
	}
	// None of them charged the cooldown.
	ok, isErr := f.call(t, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}})
	if isErr {
		t.Fatalf("a valid call after bad ones was refused: %v", ok)
	}
	// The endpoint now cools down for an hour, and its answer is still
	// read again at no cost: read_response asks neither the upstream nor
	// the limiter.
	for range 3 {
		if res, isErr := f.call(t, "read_response", map[string]any{"responseId": ok["responseId"], "jq": ".name"}); isErr || res["body"] == nil {
			t.Fatalf("read_response while cooling down: %v", res)
		}
	}
	if res, isErr := f.call(t, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}); !isErr || errorOf(t, res)["code"] != "rate_limit" {
		t.Fatalf("a second invoke within the cooldown: %v", res)
	}
	if n := f.upstream.count(); n != 1 {
		t.Fatalf("upstream saw %d requests, want 1", n)
	}
	res, isErr := f.call(t, "inspect", map[string]any{"endpointId": "petstore.getPetByID"})
	if !isErr || errorOf(t, res)["code"] != "not_found" {
		t.Fatalf("inspect of an unknown id: %v", res)
	}
	if sugg, _ := errorOf(t, res)["suggestions"].([]any); len(sugg) == 0 {
		t.Error("not_found carries no suggestions")
	}
	res, isErr = f.call(t, "search", map[string]any{"query": "pets", "limit": 51})
	if !isErr || errorOf(t, res)["code"] != "validation_failed" {
		t.Errorf("limit 51: %v", res)
	}
}

// N simultaneous calls to one endpoint put exactly one on the wire.
func TestConcurrentCallsOneOnTheWire(t *testing.T) {
	f := newFixture(t, time.Hour)
	const n = 16
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := mcp.CallToolRequest{}
			req.Params.Name = "invoke"
			req.Params.Arguments = map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": i}}
			res, err := f.client.CallTool(t.Context(), req)
			if err != nil {
				t.Error(err)
				return
			}
			if res.IsError {
				refused.Add(1)
			} else {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || refused.Load() != n-1 || f.upstream.count() != 1 {
		t.Errorf("admitted %d, refused %d, upstream saw %d; want 1, %d, 1", ok.Load(), refused.Load(), f.upstream.count(), n-1)
	}
}

func TestUpstreamRateLimitLearned(t *testing.T) {
	f := newFixture(t, 0)
	f.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"message":"slow down"}`))
	}
	res, isErr := f.call(t, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}})
	if !isErr {
		t.Fatalf("a 429 came back as success: %v", res)
	}
	e := errorOf(t, res)
	if e["code"] != "upstream_rate_limit" || e["scope"] != "upstream" {
		t.Fatalf("error = %v", e)
	}
	if s := e["retryAfterSeconds"].(float64); s < 119 || s > 120 {
		t.Errorf("retryAfterSeconds = %v, want about 120", s)
	}
	// The next call, to another endpoint of the same upstream, is held by
	// specgate: the same 429 is not hit twice.
	res, isErr = f.call(t, "invoke", map[string]any{"endpointId": "petstore.getInventory"})
	if !isErr {
		t.Fatalf("call during the upstream's block succeeded: %v", res)
	}
	e = errorOf(t, res)
	if e["code"] != "upstream_rate_limit" || e["scope"] != "upstream" || e["limit"].(map[string]any)["kind"] != "learned" {
		t.Errorf("error = %v", e)
	}
	if n := f.upstream.count(); n != 1 {
		t.Errorf("upstream saw %d requests, want 1 (no retry past the deadline, no second 429)", n)
	}
	st, _ := f.call(t, "rate_limit_status", map[string]any{"spec": "petstore"})
	ups := st["upstreams"].([]any)
	if len(ups) != 1 || ups[0].(map[string]any)["upstream429s"] != float64(1) {
		t.Errorf("status upstreams = %v", ups)
	}
}

// A Retry-After of 999999999 (or 1e26, or a date in year 9999) was taken
// as absent: the call was retried max_retries times and the model told to
// wait a second. It is the longest wait instead: one request, and an
// upstream_rate_limit saying 24 hours.
func TestUpstreamRetryAfterFarFutureNotRetried(t *testing.T) {
	for _, v := range []string{"999999999", "1e26", "Fri, 31 Dec 9999 23:59:59 GMT"} {
		t.Run(v, func(t *testing.T) {
			f, e := invoke429(t, v)
			if e["code"] != "upstream_rate_limit" || e["retryAfterSeconds"] != float64(86400) {
				t.Errorf("error = %v, want upstream_rate_limit with retryAfterSeconds 86400", e)
			}
			if msg, _ := e["message"].(string); !strings.Contains(msg, "86400 seconds") {
				t.Errorf("message %q does not say how long", msg)
			}
			if n := f.upstream.count(); n != 1 {
				t.Errorf("upstream saw %d requests, want 1", n)
			}
			// The upstream stays blocked: the next call does not reach it.
			res, _ := f.call(t, "invoke", map[string]any{"endpointId": "petstore.getInventory"})
			if e := errorOf(t, res); e["code"] != "upstream_rate_limit" || e["retryAfterSeconds"].(float64) < 86399 {
				t.Errorf("second call: %v", e)
			}
			if n := f.upstream.count(); n != 1 {
				t.Errorf("upstream saw %d requests after the block, want 1", n)
			}
		})
	}
}

// invoke429 invokes an endpoint whose upstream answers 429 with the given
// Retry-After, and returns the fixture and the error the model got.
func invoke429(t *testing.T, retryAfter string) (*fixture, map[string]any) {
	t.Helper()
	f := newFixture(t, 0)
	f.upstream.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", retryAfter)
		w.WriteHeader(http.StatusTooManyRequests)
	}
	res, isErr := f.call(t, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}})
	if !isErr {
		t.Fatalf("a 429 came back as success: %v", res)
	}
	return f, errorOf(t, res)
}

// A Retry-After of -5 (or text) was read as absent: the call was retried
// max_retries times. It asks for a wait it cannot state: one request, not
// retried, and an upstream_rate_limit saying so.
func TestUpstreamRetryAfterUnreadableNotRetried(t *testing.T) {
	for _, v := range []string{"-5", "soon"} {
		t.Run(v, func(t *testing.T) {
			f, e := invoke429(t, v)
			if e["code"] != "upstream_rate_limit" || e["retryAfterSeconds"].(float64) < 1 {
				t.Errorf("error = %v, want upstream_rate_limit with a wait of at least a second", e)
			}
			if msg, _ := e["message"].(string); !strings.Contains(msg, "not retried") {
				t.Errorf("message %q does not say the call was not retried", msg)
			}
			if n := f.upstream.count(); n != 1 {
				t.Errorf("upstream saw %d requests, want 1", n)
			}
		})
	}
}

func TestInstructionsAndToolsStaySmall(t *testing.T) {
	f := newFixture(t, time.Second)
	res, err := f.client.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := json.Marshal(res.Tools)
	instr := instructions([]string{"petstore"})
	if len(instr) > 2048 {
		t.Errorf("instructions are %d bytes, want ≤ 2 KB", len(instr))
	}
	t.Logf("instructions: %d bytes", len(instr))
	for _, tool := range res.Tools {
		t.Logf("%s: description %d bytes", tool.Name, len(tool.Description))
		if len(tool.Description) > 2048 {
			t.Errorf("the %s description is %d bytes, want ≤ 2 KB", tool.Name, len(tool.Description))
		}
	}
	// Nine tools with input and output schemas (invoke with jq, pages and
	// maxBytes; read_response; run_script, whose description teaches the
	// script api with an example: 2 KB of it) and the jq note: still far
	// below one tool per endpoint.
	if total := len(tools) + len(instr); total > 14336 {
		t.Errorf("tools/list + instructions = %d bytes, want ≤ 14 KB", total)
	}
	// What model APIs are given of the tools (name, description, input
	// schema; the output schema and annotations stay with the client)
	// plus the instructions, set_rate_limit aside (it exists only with
	// runtime tuning): at most 6,000 B with run_script and script_result,
	// the jq subset told in a refused filter's hint instead.
	given := len(instr)
	for _, tool := range res.Tools {
		if tool.Name == "set_rate_limit" {
			continue
		}
		in := tool.RawInputSchema
		if in == nil {
			in, _ = json.Marshal(tool.InputSchema)
		}
		b, _ := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}{tool.Name, tool.Description, in})
		given += len(b) + 1
	}
	if given > 6000 {
		t.Errorf("a model is given %d bytes of tools and instructions, want ≤ 6,000", given)
	}
	t.Logf("a model is given %d bytes of tools and instructions", given)
}

// Tools answer before loading finishes; search waits for the index.
func TestSearchWaitsForLoading(t *testing.T) {
	srv := New(Options{SpecNames: []string{"petstore"}})
	c := connectTB(t, srv, nil)
	if _, err := c.ListTools(t.Context(), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan map[string]any)
	go func() {
		res, _ := callTool(t, c, "search", map[string]any{"query": "pet"})
		done <- res
	}()
	s, err := spec.Load(t.Context(), "../../testdata/petstore-v3.yaml", spec.Options{Name: "petstore"})
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := spec.NewCatalog(s)
	ix, err := search.New(cat, search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Publish(cat, ix, nil)
	res := <-done
	if hits, _ := res["endpoints"].([]any); len(hits) == 0 {
		t.Fatalf("search after loading = %v", res)
	}
}

func TestRetrySecondsNeverZeroNorRoundedDown(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want float64
	}{
		{time.Nanosecond, 0.001},
		{time.Millisecond, 0.001},
		{time.Millisecond + 1, 0.002},
		{8200 * time.Millisecond, 8.2},
		{8200*time.Millisecond + 1, 8.201},
	}
	for _, tt := range tests {
		if got := ratelimit.WaitSeconds(tt.in); got != tt.want {
			t.Errorf("ratelimit.WaitSeconds(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestInitializeDoesNotAgreeTo20250326: specgate agreed to MCP 2025-03-26,
// where receiving JSON-RPC batches is a MUST, and then refused every
// batch. Now a client asking for 2025-03-26 (or naming no version) is
// offered 2025-06-18, which has no batches; other versions are agreed as
// asked.
func TestInitializeDoesNotAgreeTo20250326(t *testing.T) {
	f := newApprovalFixture(t)
	for _, tt := range []struct{ asked, want string }{
		{mcp.ProtocolVersion20250326, mcp.ProtocolVersion20250618},
		{"", mcp.ProtocolVersion20250618},
		{mcp.ProtocolVersion20241105, mcp.ProtocolVersion20241105},
		{mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250618},
		{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20251125},
	} {
		msg := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + tt.asked + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
		out, _ := json.Marshal(f.srv.MCP().HandleMessage(t.Context(), []byte(msg)))
		var res struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.Result.ProtocolVersion != tt.want {
			t.Errorf("initialize asking %q agreed %q, want %s", tt.asked, res.Result.ProtocolVersion, tt.want)
		}
	}
}
