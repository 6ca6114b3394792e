package mcpserver

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/internal/upstreamtest"
	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/serve"
	"github.com/specgate/specgate/pkg/spec"
)

// pagingFixture serves testdata/paging.yaml (spec "paging") and
// testdata/petstore-v3.yaml (spec "petstore", for a POST) against one
// upstream: the paging test upstream, except for GitHub-style repositories
// named in odd, which answer in their own hostile ways.
type pagingFixture struct {
	srv      *Server
	client   *client.Client
	pages    *upstreamtest.Pages
	upstream string
}

// pagingOptions configure newPagingFixture; the zero value is useful.
type pagingOptions struct {
	items  int                                                 // items per list; 0: 95
	server Options                                             // Client, SpecNames are set by the fixture
	client invoke.Options                                      // the invoke client's options
	odd    map[string]func(http.ResponseWriter, *http.Request) // by repo name
	http   *serve.Options                                      // serve over HTTP with these; nil: in-process
	// cooldown and budgets, when set, govern the calls with a limiter; the
	// budgets' Match is set to the upstream's host:port.
	cooldown time.Duration
	budgets  []ratelimit.Budget
	store    ratelimit.Store // the limiter's store; nil: memory
}

func newPagingFixture(t testing.TB, o pagingOptions) *pagingFixture {
	t.Helper()
	pages, err := upstreamtest.NewPages(upstreamtest.PagesOptions{Items: o.items})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if len(segs) == 5 && segs[0] == "github" && o.odd[segs[3]] != nil {
			o.odd[segs[3]](w, r)
			return
		}
		pages.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	paging, err := spec.Load(t.Context(), upstreamtest.TestdataFile("paging.yaml"), spec.Options{Name: "paging", BaseURL: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	cat, ix, eps := servedCatalog(t, o.cooldown, paging, petstoreAt(t, up.URL))
	cl := invoke.New(o.client)
	t.Cleanup(cl.Close)
	opts := o.server
	opts.SpecNames, opts.Caller.Client = []string{"paging", "petstore"}, cl
	if o.cooldown > 0 || len(o.budgets) > 0 {
		for i := range o.budgets {
			o.budgets[i].Match = HostKey(up.URL)
		}
		l, err := ratelimit.New(ratelimit.Options{Endpoints: eps, Budgets: o.budgets, Store: o.store})
		if err != nil {
			t.Fatal(err)
		}
		opts.Caller.Limiter = l
	}
	srv := New(opts)
	srv.Publish(cat, ix, nil)
	f := &pagingFixture{srv: srv, pages: pages, upstream: up.URL}
	if o.http == nil {
		f.client = connectTB(t, srv, nil)
	} else {
		ts := httptest.NewServer(serve.NewHandler(srv, *o.http))
		t.Cleanup(ts.Close)
		f.upstream = ts.URL // the MCP endpoint, for httpClient
	}
	return f
}

// httpClient connects an mcp-go client to the fixture's HTTP endpoint with
// a bearer token.
func (f *pagingFixture) httpClient(t *testing.T, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(f.upstream+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	initClient(t, c)
	return c
}

// toolAnswer is one tool result as the model reads it.
type toolAnswer struct {
	text  string
	m     map[string]any
	isErr bool
	wire  int // bytes of the whole result as JSON: text, structuredContent and the rest
}

// callText calls a tool and returns the whole of content[0].text, decoded
// too, checking that structuredContent says the same.
func callText(t testing.TB, c *client.Client, name string, args map[string]any) toolAnswer {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: protocol error %v (tool failures must be results)", name, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", name)
	}
	text := res.Content[0].(mcp.TextContent).Text
	var m, sc map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("%s: text is not a JSON object: %v: %.200q", name, err, text)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &sc); err != nil || !bytes.Equal(mustJSON(m), mustJSON(sc)) {
		t.Fatalf("%s: text and structuredContent differ", name)
	}
	whole, _ := json.Marshal(res)
	return toolAnswer{text: text, m: m, isErr: res.IsError, wire: len(whole)}
}

// ok fails unless the answer is a success.
func (a toolAnswer) ok(t testing.TB) toolAnswer {
	t.Helper()
	if a.isErr {
		t.Fatalf("tool error: %.500s", a.text)
	}
	return a
}

// code fails unless the answer is an error, and returns its error object.
func (a toolAnswer) code(t testing.TB, want string) map[string]any {
	t.Helper()
	if !a.isErr {
		t.Fatalf("want %s, got success: %.300s", want, a.text)
	}
	e := errorOf(t.(*testing.T), a.m)
	if e["code"] != want {
		t.Fatalf("code %v, want %s: %.300s", e["code"], want, a.text)
	}
	return e
}

func (a toolAnswer) shaped(t testing.TB) map[string]any {
	t.Helper()
	s, ok := a.m["shaped"].(map[string]any)
	if !ok {
		t.Fatalf("no shaped in %.300s", a.text)
	}
	return s
}

func (a toolAnswer) nextPage() map[string]any {
	np, _ := a.m["nextPage"].(map[string]any)
	params, _ := np["parameters"].(map[string]any)
	return params
}

// upstreamGet fetches path from the upstream directly and decodes it.
func upstreamGet(t *testing.T, base, path string) any {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

var listPulls = map[string]any{"endpointId": "paging.listPulls", "parameters": map[string]any{"owner": "rails", "repo": "rails"}}

func withArgs(base map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func TestE2EGitHubPageDefaultAnswer(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	a := callText(t, f.client, "invoke", listPulls).ok(t)
	if len(a.text) > answer.DefaultResultBytes {
		t.Errorf("answer is %d bytes, over the %d budget", len(a.text), answer.DefaultResultBytes)
	}
	if !json.Valid([]byte(a.text)) {
		t.Error("answer is not valid JSON")
	}
	sh := a.shaped(t)
	if sh["items"] != float64(30) || sh["path"] != "." || sh["reason"] != answer.ReasonOverBudget {
		t.Errorf("shaped %v, want 30 items at . over budget", sh)
	}
	if b, _ := sh["bytes"].(float64); b < 600_000 {
		t.Errorf("shaped.bytes %v, want the whole ~670 KB page", b)
	}
	id, _ := a.m["responseId"].(string)
	if id == "" {
		t.Fatal("no responseId")
	}
	hint, _ := a.m["hint"].(string)
	if !strings.Contains(hint, id) || !strings.Contains(hint, "read_response") {
		t.Errorf("hint %q does not name read_response with the id", hint)
	}
	want := map[string]any{"owner": "rails", "repo": "rails", "page": float64(2), "per_page": float64(30)}
	if diff := cmp.Diff(want, a.nextPage()); diff != "" {
		t.Errorf("nextPage.parameters (-want +got):\n%s", diff)
	}
	// The preview's items are the page's first items.
	body, _ := a.m["body"].([]any)
	if len(body) == 0 || body[0].(map[string]any)["number"] != float64(1) {
		t.Errorf("preview does not start with pull request 1")
	}
	if got := f.pages.Count(upstreamtest.GitHubStyle); got != 1 {
		t.Errorf("upstream saw %d requests, want 1", got)
	}
}

func TestE2EJQProjectionExact(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	a := callText(t, f.client, "invoke", withArgs(listPulls, "jq", "[.[] | {number, title}]")).ok(t)
	page := upstreamGet(t, f.upstream, "/github/repos/rails/rails/pulls").([]any)
	var want []any
	for _, it := range page {
		pr := it.(map[string]any)
		want = append(want, map[string]any{"number": pr["number"], "title": pr["title"]})
	}
	if len(want) != 30 {
		t.Fatalf("upstream page has %d items", len(want))
	}
	if diff := cmp.Diff(want, a.m["body"]); diff != "" {
		t.Errorf("projection (-want +got):\n%s", diff)
	}
	if a.m["shaped"] != nil || a.m["jqError"] != nil {
		t.Errorf("a projection that fits is shaped or failed: %.300s", a.text)
	}
	if a.nextPage() == nil {
		t.Error("jq dropped the nextPage")
	}
	// read_response with the same filter answers the same, with no call.
	before := f.pages.Count(upstreamtest.GitHubStyle)
	r := callText(t, f.client, "read_response", map[string]any{"responseId": a.m["responseId"], "jq": "[.[] | {number, title}]"}).ok(t)
	if diff := cmp.Diff(want, r.m["body"]); diff != "" {
		t.Errorf("read_response projection (-want +got):\n%s", diff)
	}
	if got := f.pages.Count(upstreamtest.GitHubStyle); got != before {
		t.Errorf("read_response sent %d upstream requests", got-before)
	}
}

// readAll pages through a stored answer with offset/limit, following
// nextOffset, and returns the items and how many calls it took. Every
// answer must fit budget.
func readAll(t *testing.T, c *client.Client, id string, limit, budget int, extra ...any) ([]any, int) {
	t.Helper()
	var all []any
	offset, calls := 0, 0
	for {
		if calls++; calls > 200 {
			t.Fatal("nextOffset does not end")
		}
		args := withArgs(map[string]any{"responseId": id, "offset": offset, "limit": limit}, extra...)
		a := callText(t, c, "read_response", args).ok(t)
		if len(a.text) > budget {
			t.Fatalf("offset %d: answer is %d bytes, over %d", offset, len(a.text), budget)
		}
		if a.m["shaped"] != nil {
			t.Fatalf("offset %d limit %d: window was previewed, not whole: %v", offset, limit, a.m["shaped"])
		}
		items, ok := a.m["body"].([]any)
		if !ok {
			t.Fatalf("offset %d: body is not an array: %.200s", offset, a.text)
		}
		all = append(all, items...)
		next, ok := a.m["nextOffset"].(float64)
		if !ok {
			return all, calls
		}
		if int(next) != offset+len(items) {
			t.Fatalf("nextOffset %v after %d items from %d", next, len(items), offset)
		}
		offset = int(next)
	}
}

func TestE2EReadResponseWindowsRebuildTheBody(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	t.Run("github", func(t *testing.T) {
		a := callText(t, f.client, "invoke", listPulls).ok(t)
		before := f.pages.Count(upstreamtest.GitHubStyle)
		// One pull request is ~22 KB: more than the default budget, so
		// whole items need maxBytes near its 48,000 ceiling.
		got, calls := readAll(t, f.client, a.m["responseId"].(string), 1, answer.MaxResultBytes, "maxBytes", answer.MaxResultBytes)
		want := upstreamGet(t, f.upstream, "/github/repos/rails/rails/pulls")
		if diff := cmp.Diff(want, any(got)); diff != "" {
			t.Errorf("pages joined differ from the body (-want +got):\n%.2000s", diff)
		}
		if calls != 30 {
			t.Errorf("%d read_response calls, want 30", calls)
		}
		if n := f.pages.Count(upstreamtest.GitHubStyle) - before; n != 1 { // the upstreamGet above
			t.Errorf("read_response sent %d upstream requests", n-1)
		}
	})
	t.Run("kubernetes", func(t *testing.T) {
		// 95 pods (~24 KB): over the default budget whole, 20 at a time in it.
		a := callText(t, f.client, "invoke", map[string]any{"endpointId": "paging.listPods", "parameters": map[string]any{"namespace": "default"}}).ok(t)
		if a.shaped(t)["path"] != ".items" {
			t.Fatalf("main array at %v, want .items", a.shaped(t)["path"])
		}
		got, calls := readAll(t, f.client, a.m["responseId"].(string), 20, answer.DefaultResultBytes)
		want := upstreamGet(t, f.upstream, "/k8s/api/v1/namespaces/default/pods").(map[string]any)["items"]
		if diff := cmp.Diff(want, any(got)); diff != "" {
			t.Errorf("pages joined differ from .items (-want +got):\n%.2000s", diff)
		}
		if calls != 5 {
			t.Errorf("%d read_response calls, want 5", calls)
		}
	})
}

func TestE2EPagesWalk(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	a := callText(t, f.client, "invoke", withArgs(listPulls, "pages", 3)).ok(t)
	if got := f.pages.Count(upstreamtest.GitHubStyle); got != 3 {
		t.Errorf("upstream saw %d requests, want 3", got)
	}
	for i, r := range f.pages.Requests() {
		if got, want := r.Query().Get("page"), []string{"", "2", "3"}[i]; got != want {
			t.Errorf("request %d: page %q, want %q", i, got, want)
		}
	}
	if len(a.text) > answer.DefaultResultBytes {
		t.Errorf("answer is %d bytes", len(a.text))
	}
	sh := a.shaped(t)
	if sh["pages"] != float64(3) || sh["items"] != float64(90) {
		t.Errorf("shaped %v, want 3 pages of 90 items", sh)
	}
	if p := a.nextPage(); p["page"] != float64(4) {
		t.Errorf("nextPage %v, want page 4", p)
	}
	// The stored answer is the three pages joined.
	r := callText(t, f.client, "read_response", map[string]any{"responseId": a.m["responseId"], "jq": "[.[].number]"}).ok(t)
	var want []any
	for i := 1; i <= 90; i++ {
		want = append(want, float64(i))
	}
	if diff := cmp.Diff(want, r.m["body"]); diff != "" {
		t.Errorf("stored numbers (-want +got):\n%s", diff)
	}
}

func TestE2EPagesRefusedBeforeSending(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	for _, tt := range []struct {
		name string
		args map[string]any
	}{
		{"post", map[string]any{"endpointId": "petstore.addPet", "pages": 2, "requestBody": map[string]any{"name": "doggie", "photoUrls": []any{}}}},
		{"zero", withArgs(listPulls, "pages", 0)},
		{"ninety-nine", withArgs(listPulls, "pages", 99)},
		{"fraction", withArgs(listPulls, "pages", 1.5)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			callText(t, f.client, "invoke", tt.args).code(t, codes.ValidationFailed)
		})
	}
	if got := len(f.pages.Requests()); got != 0 {
		t.Errorf("upstream got %d requests, want none", got)
	}
}

func TestE2ENextPageStyles(t *testing.T) {
	const items = 23
	f := newPagingFixture(t, pagingOptions{items: items})
	slackCursor := base64.StdEncoding.EncodeToString([]byte("user:U00000006"))
	tests := []struct {
		style  upstreamtest.Style
		op     string
		params map[string]any
		path   string // of the main array in the body
		check  func(t *testing.T, next map[string]any)
		pages  int // to the end
	}{
		{upstreamtest.StripeStyle, "listCustomers", map[string]any{"limit": 10}, "data", func(t *testing.T, next map[string]any) {
			if diff := cmp.Diff(map[string]any{"limit": float64(10), "starting_after": "cus_00000010"}, next); diff != "" {
				t.Errorf("nextPage (-want +got):\n%s", diff)
			}
		}, 3},
		{upstreamtest.SlackStyle, "listUsers", map[string]any{"limit": 5}, "members", func(t *testing.T, next map[string]any) {
			if diff := cmp.Diff(map[string]any{"limit": float64(5), "cursor": slackCursor}, next); diff != "" {
				t.Errorf("nextPage (-want +got):\n%s", diff)
			}
		}, 5},
		{upstreamtest.KubernetesStyle, "listPods", map[string]any{"namespace": "default", "limit": 10}, "items", func(t *testing.T, next map[string]any) {
			tok, _ := next["continue"].(string)
			raw, err := base64.RawURLEncoding.DecodeString(tok)
			if err != nil || !strings.Contains(string(raw), `"start":"pod-00010\u0000"`) {
				t.Errorf("continue %q (%s), want the token starting at pod-00010", tok, raw)
			}
			if next["namespace"] != "default" || next["limit"] != float64(10) {
				t.Errorf("nextPage %v lost namespace or limit", next)
			}
		}, 3},
	}
	for _, tt := range tests {
		t.Run(string(tt.style), func(t *testing.T) {
			args := map[string]any{"endpointId": "paging." + tt.op, "parameters": tt.params}
			before := f.pages.Count(tt.style)
			a := callText(t, f.client, "invoke", args).ok(t)
			next := a.nextPage()
			tt.check(t, next)
			// The parameters given back fetch the second page.
			b := callText(t, f.client, "invoke", map[string]any{"endpointId": "paging." + tt.op, "parameters": next}).ok(t)
			if first, second := a.m["body"].(map[string]any)[tt.path].([]any), b.m["body"].(map[string]any)[tt.path].([]any); len(second) == 0 || cmp.Equal(first[0], second[0]) {
				t.Errorf("nextPage did not move on: %v then %v", first[0], second[0])
			}
			// pages walks to the end, and asks for no more than there are.
			w := callText(t, f.client, "invoke", withArgs(args, "pages", invoke.MaxPages)).ok(t)
			if got := f.pages.Count(tt.style) - before; got != 2+tt.pages {
				t.Errorf("upstream saw %d requests, want %d", got, 2+tt.pages)
			}
			if w.m["nextPage"] != nil {
				t.Errorf("nextPage %v after the last page", w.m["nextPage"])
			}
			list, _ := w.m["body"].(map[string]any)[tt.path].([]any)
			if len(list) != items {
				t.Fatalf("walk joined %d items, want %d: %.300s", len(list), items, w.text)
			}
			seen := map[string]bool{}
			for _, it := range list {
				seen[string(mustJSON(it))] = true
			}
			if len(seen) != items {
				t.Errorf("walk holds %d distinct items of %d", len(seen), items)
			}
		})
	}
}

func TestE2EAnswersBelongToTheirPrincipal(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{http: &serve.Options{Tokens: map[string]Principal{
		"tok-a": {Subject: "ada", Org: "acme"},
		"tok-b": {Subject: "bob", Org: "acme"},
	}}})
	ca, cb := f.httpClient(t, "tok-a"), f.httpClient(t, "tok-b")
	a := callText(t, ca, "invoke", listPulls).ok(t)
	id := a.m["responseId"].(string)
	callText(t, ca, "read_response", map[string]any{"responseId": id, "jq": "length"}).ok(t)

	other := callText(t, cb, "read_response", map[string]any{"responseId": id}).code(t, codes.NotFound)
	random := callText(t, cb, "read_response", map[string]any{"responseId": "r_" + base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef"))}).code(t, codes.NotFound)
	if other["message"] != random["message"] || other["hint"] != random["hint"] {
		t.Errorf("another principal's id answers differently from an unknown one:\n%v\n%v", other, random)
	}
	if strings.Contains(fmt.Sprint(other), "ada") {
		t.Errorf("the answer names the owner: %v", other)
	}
	// Still there for its owner.
	callText(t, ca, "read_response", map[string]any{"responseId": id, "offset": 0, "limit": 1, "maxBytes": answer.MaxResultBytes}).ok(t)
}

func TestE2EEvictedAnswerSaysSo(t *testing.T) {
	// A GitHub page deflates to a few KB (its 30 items are copies); room
	// for a handful.
	f := newPagingFixture(t, pagingOptions{server: Options{Caller: invoke.Caller{Answers: answer.NewMemoryAnswers(answer.MemoryAnswersOptions{MaxBytes: 96 << 10})}}})
	var ids []string
	for page := 1; page <= 40; page++ {
		a := callText(t, f.client, "invoke", map[string]any{"endpointId": "paging.listPulls",
			"parameters": map[string]any{"owner": "rails", "repo": "rails", "page": page%4 + 1}}).ok(t)
		id, _ := a.m["responseId"].(string)
		if id == "" {
			t.Fatalf("call %d: not stored: %.300s", page, a.text)
		}
		ids = append(ids, id)
	}
	e := callText(t, f.client, "read_response", map[string]any{"responseId": ids[0]}).code(t, codes.NotFound)
	if msg, _ := e["message"].(string); !strings.Contains(msg, "evicted") {
		t.Errorf("message %q does not say evicted", msg)
	}
	callText(t, f.client, "read_response", map[string]any{"responseId": ids[len(ids)-1], "jq": "length"}).ok(t)
}

func TestE2EBadInput(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	for _, tt := range []struct {
		name string
		args map[string]any
	}{
		{"jq definition", withArgs(listPulls, "jq", "def f: .; f")},
		{"jq range", withArgs(listPulls, "jq", "range(1e9)")},
		{"jq does not compile", withArgs(listPulls, "jq", ".[ | ")},
		{"maxBytes 0", withArgs(listPulls, "maxBytes", 0)},
		{"maxBytes -1", withArgs(listPulls, "maxBytes", -1)},
		{"maxBytes 1e9", withArgs(listPulls, "maxBytes", 1e9)},
		{"maxBytes string", withArgs(listPulls, "maxBytes", "16384")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			callText(t, f.client, "invoke", tt.args).code(t, codes.ValidationFailed)
		})
	}
	// 10,000 unknown parameters gave a 516 KB error naming each, a 100 KB
	// contentType came back at 400 KB: an error names the first few and
	// counts the rest.
	many := map[string]any{"owner": "rails", "repo": "rails"}
	for i := range 10_000 {
		many[fmt.Sprintf("p%05d", i)] = i
	}
	for _, tt := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"10,000 unknown parameters", withArgs(listPulls, "parameters", many), `"p00009" and 9990 more: not declared`},
		{"100 KB contentType", withArgs(listPulls, "contentType", strings.Repeat("x", 100<<10)), "contentType"},
		{"100 KB parameter name", withArgs(listPulls, "parameters", map[string]any{"owner": "rails", "repo": "rails", strings.Repeat("n", 100<<10): 1}), "not declared"},
		{"100 KB invalid header name", withArgs(listPulls, "headers", map[string]any{strings.Repeat("h ", 50<<10): "v"}), "not a valid header name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := callText(t, f.client, "invoke", tt.args)
			e := a.code(t, codes.ValidationFailed)
			if len(a.text) > 2048 {
				t.Errorf("the error is %d bytes: %.300s", len(a.text), a.text)
			}
			if !strings.Contains(fmt.Sprint(e["problems"]), tt.want) {
				t.Errorf("problems %v, want %q", e["problems"], tt.want)
			}
		})
	}
	if got := len(f.pages.Requests()); got != 0 {
		t.Errorf("upstream got %d requests, want none", got)
	}
	for _, tt := range []struct{ name, id string }{
		{"random", "r_" + base64.RawURLEncoding.EncodeToString([]byte("fedcba9876543210"))},
		{"10 KB", "r_" + strings.Repeat("A", 10<<10)},
		{"empty-looking", "r_"},
	} {
		t.Run("read "+tt.name, func(t *testing.T) {
			a := callText(t, f.client, "read_response", map[string]any{"responseId": tt.id})
			a.code(t, codes.NotFound)
			if len(a.text) > 2048 {
				t.Errorf("not_found for a %d-byte id is %d bytes", len(tt.id), len(a.text))
			}
		})
	}
	t.Run("read_response jq not allowed", func(t *testing.T) {
		a := callText(t, f.client, "invoke", withArgs(listPulls, "jq", "length")).ok(t)
		callText(t, f.client, "read_response", map[string]any{"responseId": a.m["responseId"], "jq": "def f: .; f"}).code(t, codes.ValidationFailed)
		callText(t, f.client, "read_response", map[string]any{"responseId": a.m["responseId"], "maxBytes": 1e9}).code(t, codes.ValidationFailed)
	})
}

// odd upstream answers, each served for GitHub repository name.
func oddUpstream() map[string]func(http.ResponseWriter, *http.Request) {
	return map[string]func(http.ResponseWriter, *http.Request){
		"notjson": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"items": [1, 2, <html>oops</html>`)
		},
		"huge": func(w http.ResponseWriter, r *http.Request) {
			// 50 MB of a JSON array of objects, streamed.
			w.Header().Set("Content-Type", "application/json")
			item := []byte(`{"id":1,"title":"` + strings.Repeat("x", 1000) + `"},`)
			io.WriteString(w, "[")
			for written := 0; written < 50<<20; written += len(item) {
				if _, err := w.Write(item); err != nil {
					return // the client stopped reading at its limit
				}
			}
			io.WriteString(w, `{"id":0}]`)
		},
		"elsewhere": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Link", `<http://203.0.113.7/github/repos/rails/elsewhere/pulls?page=2>; rel="next"`)
			io.WriteString(w, `[{"number":1}]`)
		},
		"file": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Link", `<file:///etc/passwd?page=2>; rel="next"`)
			io.WriteString(w, `[{"number":1}]`)
		},
		"bigheader": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Padding", strings.Repeat("p", 1<<20))
			w.Header().Set("Link", "<"+strings.Repeat("l", 512<<10)+">; rel=\"next\"")
			io.WriteString(w, `[{"number":1}]`)
		},
		"selectedheaders": func(w http.ResponseWriter, r *http.Request) {
			// The headers an answer repeats, each 1 MiB.
			mib := strings.Repeat("h", 1<<20)
			w.Header().Set("Content-Type", "application/json; x="+mib)
			w.Header().Set("Location", "/"+mib)
			w.Header().Set("X-RateLimit-Policy", mib)
			w.Header().Set("RateLimit-Policy", mib)
			io.WriteString(w, `[{"number":1}]`)
		},
		"manyheaders": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			for i := range 20_000 {
				w.Header().Set(fmt.Sprintf("X-RateLimit-Foo%d", i), strings.Repeat("v", 40))
			}
			io.WriteString(w, `[{"number":1}]`)
		},
		"nulbomb": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(nulBomb())
		},
		"badutf8": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("[{\"number\":1,\"title\":\"caf\xff\xfe \xc3\"}]"))
		},
	}
}

// nulBomb is 16 MiB of NUL bytes gzipped to 16 KB: twice the cap the
// hostile-upstream tests read to.
var nulBomb = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 16 {
		zw.Write(zeros)
	}
	zw.Close()
	return b.Bytes()
})

func TestE2EHostileUpstream(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{odd: oddUpstream(), client: invoke.Options{MaxResponseBytes: 8 << 20}})
	call := func(t *testing.T, repo string) toolAnswer {
		t.Helper()
		a := callText(t, f.client, "invoke", map[string]any{"endpointId": "paging.listPulls", "parameters": map[string]any{"owner": "rails", "repo": repo}}).ok(t)
		if !utf8.ValidString(a.text) {
			t.Errorf("answer is not valid UTF-8")
		}
		if len(a.text) > answer.DefaultResultBytes {
			t.Errorf("answer is %d bytes, over the budget", len(a.text))
		}
		// structuredContent, and the text escaped once more as a JSON
		// string (at most twice its length), and little else.
		if a.wire > 3*answer.DefaultResultBytes+1024 {
			t.Errorf("the result is %d bytes on the wire", a.wire)
		}
		return a
	}
	t.Run("claims JSON and is not", func(t *testing.T) {
		a := call(t, "notjson")
		if s, ok := a.m["body"].(string); !ok || !strings.Contains(s, "<html>oops") {
			t.Errorf("body %v, want the text as it came", a.m["body"])
		}
		if note, _ := a.m["note"].(string); !strings.Contains(note, "not valid JSON") {
			t.Errorf("note %q does not say the JSON is invalid", note)
		}
	})
	t.Run("50 MB body", func(t *testing.T) {
		a := call(t, "huge")
		if a.m["truncated"] != true {
			t.Errorf("not truncated: %.500s", a.text)
		}
		if size, _ := a.m["size"].(float64); size > 8<<20 {
			t.Errorf("kept %v bytes, over max_response_bytes", size)
		}
		if id, _ := a.m["responseId"].(string); id == "" {
			t.Error("a truncated answer was not stored")
		}
	})
	for _, repo := range []string{"elsewhere", "file"} {
		t.Run("Link to "+repo, func(t *testing.T) {
			if a := call(t, repo); a.m["nextPage"] != nil {
				t.Errorf("nextPage %v from a Link off the origin", a.m["nextPage"])
			}
		})
	}
	t.Run("1 MiB header", func(t *testing.T) {
		a := callText(t, f.client, "invoke", map[string]any{"endpointId": "paging.listPulls", "parameters": map[string]any{"owner": "rails", "repo": "bigheader"}}).ok(t)
		if len(a.text) > 64<<10 {
			t.Errorf("answer is %d bytes, want under 64 KiB", len(a.text))
		}
		if a.m["nextPage"] != nil {
			t.Errorf("nextPage from a junk Link: %v", a.m["nextPage"])
		}
		if body, _ := a.m["body"].([]any); len(body) != 1 {
			t.Errorf("body %v, want the one item", a.m["body"])
		}
	})
	// Three 1 MiB headers of those an answer repeats made an 8.4 MB
	// result, 20,000 X-RateLimit-Foo<n> headers 1.1 MB: each value and the
	// set are capped, and counted in the answer's budget.
	t.Run("1 MiB selected headers", func(t *testing.T) {
		a := call(t, "selectedheaders")
		if len(a.text) > 8<<10 {
			t.Errorf("answer is %d bytes, want under 8 KiB", len(a.text))
		}
		h, _ := a.m["headers"].(map[string]any)
		for _, name := range []string{"content-type", "location", "x-ratelimit-policy", "ratelimit-policy"} {
			if v, _ := h[name].(string); v == "" || len(v) > 600 {
				t.Errorf("header %s is %d bytes, want a cut value", name, len(v))
			}
		}
		if body, _ := a.m["body"].([]any); len(body) != 1 {
			t.Errorf("body %v, want the one item", a.m["body"])
		}
	})
	t.Run("20,000 rate-limit headers", func(t *testing.T) {
		a := call(t, "manyheaders")
		h, _ := a.m["headers"].(map[string]any)
		if len(h) > 25 {
			t.Errorf("%d headers repeated", len(h))
		}
		if n, _ := h["x-specgate-omitted-headers"].(string); n == "" {
			t.Errorf("the omitted headers are not counted: %v", h)
		}
		if len(a.text) > 8<<10 {
			t.Errorf("answer is %d bytes, want under 8 KiB", len(a.text))
		}
	})
	// A gzip bomb of NULs read to the cap became a 3.4 MB message: a NUL
	// is six bytes as JSON, and the result is sent as text and as
	// structuredContent. The encoded answer is what the budget bounds.
	t.Run("gzip bomb of NULs", func(t *testing.T) {
		a := call(t, "nulbomb")
		if a.m["truncated"] != true {
			t.Errorf("not truncated: %.300s", a.text)
		}
		if sh, _ := a.m["shaped"].(map[string]any); sh == nil || sh["bytes"] != float64(8<<20) {
			t.Errorf("shaped %v, want a preview of the 8 MiB read", a.m["shaped"])
		}
		if body, _ := a.m["body"].(string); !strings.HasPrefix(body, "\x00\x00") {
			t.Errorf("body %.40q", body)
		}
	})
	t.Run("invalid UTF-8 in a string", func(t *testing.T) {
		a := call(t, "badutf8")
		body, _ := a.m["body"].([]any)
		if len(body) != 1 {
			t.Fatalf("body %v, want the one item", a.m["body"])
		}
		title, _ := body[0].(map[string]any)["title"].(string)
		if !strings.HasPrefix(title, "caf") || !utf8.ValidString(title) {
			t.Errorf("title %q", title)
		}
	})
}

// maxBytes bounds the whole of content[0].text, from its smallest value to
// its largest, for invoke and read_response alike; the answer still names
// its responseId and the next page.
func TestE2EMaxBytesBoundsTheWholeAnswer(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	for i, maxBytes := range []int{answer.MinResultBytes, 2000, 4096, answer.MaxResultBytes} {
		args := withArgs(listPulls, "maxBytes", maxBytes, "parameters", map[string]any{"owner": "rails", "repo": "rails", "page": i%3 + 1})
		a := callText(t, f.client, "invoke", args).ok(t)
		if len(a.text) > maxBytes {
			t.Errorf("invoke maxBytes %d: answer is %d bytes", maxBytes, len(a.text))
		}
		id, _ := a.m["responseId"].(string)
		if id == "" || a.nextPage() == nil || a.shaped(t)["items"] != float64(30) {
			t.Errorf("invoke maxBytes %d: responseId %q, nextPage %v, shaped %v", maxBytes, id, a.nextPage(), a.m["shaped"])
		}
		if hint, _ := a.m["hint"].(string); !strings.Contains(hint, id) {
			t.Errorf("invoke maxBytes %d: hint %q does not name the id", maxBytes, hint)
		}
		r := callText(t, f.client, "read_response", map[string]any{"responseId": id, "maxBytes": maxBytes}).ok(t)
		if len(r.text) > maxBytes {
			t.Errorf("read_response maxBytes %d: answer is %d bytes", maxBytes, len(r.text))
		}
	}
}

// A cache hit is the stored answer rendered again: the next page and the
// rest of what the first answer said come with it.
func TestE2ECacheHitKeepsNextPage(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{server: Options{Caller: invoke.Caller{CacheTTL: func(*spec.Endpoint) time.Duration { return time.Minute }}}})
	first := callText(t, f.client, "invoke", listPulls).ok(t)
	hit := callText(t, f.client, "invoke", withArgs(listPulls, "jq", "[.[].number]")).ok(t)
	if hit.m["cached"] != true {
		t.Fatalf("not a cache hit: %.300s", hit.text)
	}
	if got := f.pages.Count(upstreamtest.GitHubStyle); got != 1 {
		t.Errorf("upstream saw %d requests, want 1", got)
	}
	if diff := cmp.Diff(first.nextPage(), hit.nextPage()); diff != "" || hit.nextPage() == nil {
		t.Errorf("nextPage of the hit (-first +hit):\n%s", diff)
	}
	if n, _ := hit.m["body"].([]any); len(n) != 30 {
		t.Errorf("the hit's own jq gave %v", hit.m["body"])
	}
}

// cache_ttl keys on the principal: an identical call of another principal
// goes to the upstream, and its answer is its own.
func TestE2ECacheKeysOnPrincipal(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{
		server: Options{Caller: invoke.Caller{CacheTTL: func(*spec.Endpoint) time.Duration { return time.Minute }}},
		http: &serve.Options{Tokens: map[string]Principal{
			"tok-a": {Subject: "ada", Org: "acme"},
			"tok-b": {Subject: "bob", Org: "acme"},
		}},
	})
	ca, cb := f.httpClient(t, "tok-a"), f.httpClient(t, "tok-b")
	a := callText(t, ca, "invoke", listPulls).ok(t)
	again := callText(t, ca, "invoke", listPulls).ok(t)
	b := callText(t, cb, "invoke", listPulls).ok(t)
	if again.m["cached"] != true || b.m["cached"] == true {
		t.Errorf("cached: ada's repeat %v, bob's first call %v", again.m["cached"], b.m["cached"])
	}
	if got := f.pages.Count(upstreamtest.GitHubStyle); got != 2 {
		t.Errorf("upstream saw %d requests, want 2 (one per principal)", got)
	}
	if a.m["responseId"] == b.m["responseId"] {
		t.Error("bob was given ada's stored answer")
	}
	callText(t, cb, "read_response", map[string]any{"responseId": a.m["responseId"]}).code(t, codes.NotFound)
}

// petstoreWithKey serves the petstore at upURL with secret as its api_key
// credential and a memory answer store, and connects an MCP client.
func petstoreWithKey(t *testing.T, upURL, secret string) (*client.Client, answer.AnswerStore) {
	t.Helper()
	cat, ix, _ := servedCatalog(t, 0, petstoreAt(t, upURL))
	cl := invoke.New(invoke.Options{Specs: map[string]invoke.SpecOptions{"petstore": {Auth: map[string]invoke.Credential{"api_key": {Value: secret}}}}})
	t.Cleanup(cl.Close)
	store := answer.NewMemoryAnswers(answer.MemoryAnswersOptions{})
	srv := New(Options{SpecNames: []string{"petstore"}, Caller: invoke.Caller{Governed: invoke.Governed{Client: cl}, Answers: store}})
	srv.Publish(cat, ix, nil)
	return connectTB(t, srv, nil), store
}

// An upstream that echoes the credential it was sent, in a body far over
// the budget: the key is in no answer the model reads, previewed, filtered
// or paged, and not in the stored answer either.
func TestE2EStoredAnswerHoldsNoCredential(t *testing.T) {
	const secret = "SECRET-petstore-key-5e6f7a"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("api_key")
		var items []any
		for i := range 40 {
			items = append(items, map[string]any{"id": i, "seenKey": key, "note": "the key was " + key + strings.Repeat(" padding", 100)})
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo-Key", key)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": 1, "name": "doggie", "photoUrls": []any{}, "tags": items})
	}))
	t.Cleanup(up.Close)
	c, store := petstoreWithKey(t, up.URL, secret)

	a := callText(t, c, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}).ok(t)
	id, _ := a.m["responseId"].(string)
	if id == "" || a.m["shaped"] == nil {
		t.Fatalf("want a stored preview: %.300s", a.text)
	}
	texts := []string{a.text}
	for _, args := range []map[string]any{
		{"responseId": id, "jq": "[.tags[] | {seenKey, note}]", "maxBytes": answer.MaxResultBytes},
		{"responseId": id, "jq": ".tags[0]"},
		{"responseId": id, "offset": 0, "limit": 5, "maxBytes": answer.MaxResultBytes},
		{"responseId": id, "maxBytes": answer.MaxResultBytes},
	} {
		texts = append(texts, callText(t, c, "read_response", args).ok(t).text)
	}
	if !strings.Contains(texts[2], "[redacted]") {
		t.Errorf("the echoed key is not marked redacted: %.300s", texts[2])
	}
	stored, err := store.Get(t.Context(), localPrincipal, id)
	if err != nil {
		t.Fatal(err)
	}
	texts = append(texts, string(stored.Body), fmt.Sprint(stored.Headers))
	for i, text := range texts {
		if strings.Contains(text, secret) {
			t.Errorf("answer %d holds the credential", i)
		}
	}
}

// pages walks under governance: the endpoint's cooldown is charged once
// for the call (pages 2 and 3 are not refused by it, a later call is), and
// every page is admitted by the upstream's budget: one that runs out
// mid-walk ends it with the pages read and a nextPage for the rest.
func TestE2EPagesUnderGovernance(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{cooldown: time.Hour, budgets: []ratelimit.Budget{
		{Requests: 5, Window: time.Hour, OnLimit: ratelimit.Reject},
	}})
	a := callText(t, f.client, "invoke", withArgs(listPulls, "pages", 3)).ok(t)
	if got := f.pages.Count(upstreamtest.GitHubStyle); got != 3 {
		t.Fatalf("upstream saw %d requests, want 3", got)
	}
	if sh := a.shaped(t); sh["pages"] != float64(3) {
		t.Errorf("shaped %v, want 3 pages", sh)
	}
	e := callText(t, f.client, "invoke", listPulls).code(t, codes.RateLimit)
	if lim, _ := e["limit"].(map[string]any); lim["kind"] != string(ratelimit.KindCooldown) {
		t.Errorf("refusal %v, want the cooldown", e)
	}
	// Two requests of the budget are left: a walk of five pages reads two.
	b := callText(t, f.client, "invoke", map[string]any{"endpointId": "paging.listCustomers", "parameters": map[string]any{"limit": 10}, "pages": 5}).ok(t)
	if got := len(f.pages.Requests()); got != 5 {
		t.Errorf("upstream saw %d requests, want 5", got)
	}
	note, _ := b.m["note"].(string)
	if !strings.Contains(note, "stopped after 2 pages") || !strings.Contains(note, codes.RateLimit) {
		t.Errorf("note %q does not say the budget stopped the walk", note)
	}
	if next := b.nextPage(); next["starting_after"] != "cus_00000020" {
		t.Errorf("nextPage %v, want the third page", next)
	}
	if list, _ := b.m["body"].(map[string]any)["data"].([]any); len(list) != 20 {
		t.Errorf("walk kept %d customers, want 20", len(list))
	}
}

// Bodies that are not JSON: an image within the budget comes back as MCP
// image content; a larger image and other binary are stored and described,
// and read_response windows give their bytes back in base64; a text body
// comes back as its head and size, and byte windows give it back whole.
func TestE2ENonJSONBodies(t *testing.T) {
	bin := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7) ^ seed
		}
		return b
	}
	smallPNG := append([]byte("\x89PNG\r\n\x1a\n"), bin(2000, 1)...)
	bigPNG := append([]byte("\x89PNG\r\n\x1a\n"), bin(100_000, 2)...)
	pdf := append([]byte("%PDF-1.7\n"), bin(30_000, 3)...)
	var csv strings.Builder
	for i := 0; csv.Len() < 100_000; i++ {
		fmt.Fprintf(&csv, "%d,pull request %d,open,octocat,2026-11-%02d\n", i, i, i%28+1)
	}
	serve := func(ct string, body []byte) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			_, _ = w.Write(body)
		}
	}
	f := newPagingFixture(t, pagingOptions{odd: map[string]func(http.ResponseWriter, *http.Request){
		"smallpng": serve("image/png", smallPNG),
		"bigpng":   serve("image/png", bigPNG),
		"pdf":      serve("application/pdf", pdf),
		"csv":      serve("text/csv", []byte(csv.String())),
	}})
	invokeRepo := func(t *testing.T, repo string) *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name = "invoke"
		req.Params.Arguments = map[string]any{"endpointId": "paging.listPulls", "parameters": map[string]any{"owner": "rails", "repo": repo}}
		res, err := f.client.CallTool(t.Context(), req)
		if err != nil || res.IsError {
			t.Fatalf("invoke %s: %v %v", repo, err, res)
		}
		if text := res.Content[0].(mcp.TextContent).Text; len(text) > answer.DefaultResultBytes {
			t.Errorf("invoke %s: text is %d bytes", repo, len(text))
		}
		return res
	}
	// readWindows reads a stored answer through offset/limit windows,
	// following nextOffset, and returns the bodies in order.
	readWindows := func(t *testing.T, id string, limit int) []string {
		t.Helper()
		var parts []string
		for offset, calls := 0, 0; ; calls++ {
			if calls > 100 {
				t.Fatal("nextOffset does not end")
			}
			r := callText(t, f.client, "read_response", map[string]any{"responseId": id, "offset": offset, "limit": limit}).ok(t)
			if len(r.text) > answer.DefaultResultBytes {
				t.Fatalf("offset %d: %d bytes", offset, len(r.text))
			}
			s, _ := r.m["body"].(string)
			parts = append(parts, s)
			next, ok := r.m["nextOffset"].(float64)
			if !ok {
				return parts
			}
			offset = int(next)
		}
	}
	t.Run("small image", func(t *testing.T) {
		res := invokeRepo(t, "smallpng")
		if len(res.Content) != 2 {
			t.Fatalf("%d content parts, want text and image", len(res.Content))
		}
		img, ok := res.Content[1].(mcp.ImageContent)
		if !ok || img.MIMEType != "image/png" || img.Data != base64.StdEncoding.EncodeToString(smallPNG) {
			t.Errorf("image content %T %v", res.Content[1], ok)
		}
	})
	for _, tt := range []struct {
		repo, ct string
		body     []byte
	}{{"bigpng", "image/png", bigPNG}, {"pdf", "application/pdf", pdf}} {
		t.Run(tt.repo, func(t *testing.T) {
			res := invokeRepo(t, tt.repo)
			if len(res.Content) != 1 {
				t.Errorf("%d content parts for a body over the budget", len(res.Content))
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &m); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("binary body: %s, %d bytes", tt.ct, len(tt.body)); m["body"] != want {
				t.Errorf("body %v, want %q", m["body"], want)
			}
			id, _ := m["responseId"].(string)
			if hint, _ := m["hint"].(string); id == "" || !strings.Contains(hint, id) {
				t.Fatalf("responseId %q, hint %q", id, m["hint"])
			}
			var got []byte
			for _, part := range readWindows(t, id, 8000) {
				b, err := base64.StdEncoding.DecodeString(part)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, b...)
			}
			if !bytes.Equal(got, tt.body) {
				t.Errorf("windows give back %d bytes, not the %d of the body", len(got), len(tt.body))
			}
		})
	}
	t.Run("csv", func(t *testing.T) {
		res := invokeRepo(t, "csv")
		var m map[string]any
		if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &m); err != nil {
			t.Fatal(err)
		}
		head, _ := m["body"].(string)
		sh, _ := m["shaped"].(map[string]any)
		if !strings.HasPrefix(csv.String(), strings.Split(head, "…")[0]) || sh["bytes"] != float64(csv.Len()) {
			t.Errorf("head %.80q…, shaped %v", head, sh)
		}
		if got := strings.Join(readWindows(t, m["responseId"].(string), 8000), ""); got != csv.String() {
			t.Errorf("windows give back %d bytes, not the %d of the text", len(got), csv.Len())
		}
	})
}

// An answer not read for response_ttl is gone, and read_response says it
// expired (not that the id is unknown); reading an answer keeps it.
func TestE2EExpiredAnswerSaysSo(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	store := answer.NewMemoryAnswers(answer.MemoryAnswersOptions{TTL: 15 * time.Minute, Now: clock})
	f := newPagingFixture(t, pagingOptions{server: Options{Caller: invoke.Caller{Answers: store}}})
	idle := callText(t, f.client, "invoke", listPulls).ok(t).m["responseId"]
	read := callText(t, f.client, "invoke", withArgs(listPulls, "parameters", map[string]any{"owner": "rails", "repo": "rails", "page": 2})).ok(t).m["responseId"]
	advance(10 * time.Minute)
	callText(t, f.client, "read_response", map[string]any{"responseId": read, "jq": "length"}).ok(t)
	advance(10 * time.Minute)
	e := callText(t, f.client, "read_response", map[string]any{"responseId": idle}).code(t, codes.NotFound)
	if msg, _ := e["message"].(string); !strings.Contains(msg, "expired") {
		t.Errorf("message %q does not say expired", msg)
	}
	callText(t, f.client, "read_response", map[string]any{"responseId": read, "jq": "length"}).ok(t)
}

// A jq that fails at run time after invoke went out does not lose the call:
// the answer is stored and comes back as its preview with jqError, never
// isError, so the model does not repeat a call that had its effect. The
// same filter on read_response, where nothing was sent, is an error.
func TestE2EJQRunTimeFailureKeepsTheAnswer(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{server: Options{JQTimeout: 50 * time.Millisecond}})
	const slow = `[.[] as $a | .[] as $b | .[] as $c | .[] as $d | .[] as $e | 1] | length`
	for i, tt := range []struct {
		jq, says, readCode string
	}{
		{`.[0].title | error`, "error", codes.ValidationFailed},
		{slow, "50ms", codes.Timeout},
		{`.[0] | tojson | test("[a-z]{0,1000}x")`, "too costly", codes.ValidationFailed},
	} {
		args := withArgs(listPulls, "jq", tt.jq, "parameters", map[string]any{"owner": "rails", "repo": "rails", "page": i + 1})
		a := callText(t, f.client, "invoke", args).ok(t)
		if msg, _ := a.m["jqError"].(string); !strings.Contains(msg, tt.says) {
			t.Errorf("%s: jqError %q, want it to say %q", tt.jq, msg, tt.says)
		}
		if len(a.text) > answer.DefaultResultBytes || a.shaped(t)["items"] != float64(30) {
			t.Errorf("%s: not the unfiltered preview: %d bytes, shaped %v", tt.jq, len(a.text), a.m["shaped"])
		}
		id, _ := a.m["responseId"].(string)
		callText(t, f.client, "read_response", map[string]any{"responseId": id, "jq": tt.jq}).code(t, tt.readCode)
		if n := callText(t, f.client, "read_response", map[string]any{"responseId": id, "jq": "length"}).ok(t).m["body"]; n != float64(30) {
			t.Errorf("%s: the stored answer has %v items", tt.jq, n)
		}
	}
	if got := f.pages.Count(upstreamtest.GitHubStyle); got != 3 {
		t.Errorf("upstream saw %d requests, want one per invoke", got)
	}
}

// pages stops once the pages read reach max_response_bytes: one stored
// answer stays near that cap whatever pages asks for, and nextPage offers
// the rest.
func TestE2EPagesStopAtTheResponseCap(t *testing.T) {
	probe := newPagingFixture(t, pagingOptions{items: 23})
	resp, err := http.Get(probe.upstream + "/stripe/v1/customers?limit=10")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(page) < 1000 {
		t.Fatalf("probe: %d, %d bytes", resp.StatusCode, len(page))
	}
	f := newPagingFixture(t, pagingOptions{items: 23, client: invoke.Options{MaxResponseBytes: int64(len(page)) * 3 / 2}})
	a := callText(t, f.client, "invoke", map[string]any{"endpointId": "paging.listCustomers", "parameters": map[string]any{"limit": 10}, "pages": 5}).ok(t)
	if got := f.pages.Count(upstreamtest.StripeStyle); got != 2 {
		t.Errorf("upstream saw %d requests, want 2", got)
	}
	if note, _ := a.m["note"].(string); !strings.Contains(note, "max_response_bytes") {
		t.Errorf("note %q does not name the cap", note)
	}
	if next := a.nextPage(); next["starting_after"] != "cus_00000020" {
		t.Errorf("nextPage %v, want the third page", next)
	}
}
