package paging

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/specgate/specgate/pkg/spec"
)

// pagingDoc declares one operation per paging convention NextPage knows.
// users_list has the parameters of Slack's users.list: the shared
// A Slack-style cursor API, written here so the test needs no shared spec.
const pagingDoc = `{
  "openapi": "3.0.3",
  "info": {"title": "paging", "version": "1"},
  "servers": [{"url": "https://api.example.com"}],
  "components": {
    "parameters": {
      "page": {"name": "page", "in": "query", "schema": {"$ref": "#/components/schemas/PageNumber"}}
    },
    "schemas": {"PageNumber": {"type": "integer", "minimum": 1}}
  },
  "paths": {
    "/orgs/{org}/items": {
      "parameters": [{"name": "org", "in": "path", "required": true, "schema": {"type": "string"}}],
      "get": {
        "operationId": "listItems",
        "parameters": [
          {"$ref": "#/components/parameters/page"},
          {"name": "per_page", "in": "query", "schema": {"type": "integer"}},
          {"name": "q", "in": "query", "schema": {"type": "string"}},
          {"name": "ids", "in": "query", "schema": {"type": "array", "items": {"type": "integer"}}},
          {"name": "X-Trace", "in": "header", "schema": {"type": "string"}}
        ],
        "responses": {"200": {"description": "ok"}}
      }
    },
    "/pages": {"get": {
      "operationId": "speakeasyPage",
      "parameters": [
        {"name": "page", "in": "query", "schema": {"type": "integer"}},
        {"name": "size", "in": "query", "schema": {"type": "integer"}}
      ],
      "x-speakeasy-pagination": {"type": "offsetLimit",
        "inputs": [{"name": "page", "in": "parameters", "type": "page"}, {"name": "size", "in": "parameters", "type": "limit"}],
        "outputs": {"results": "$.data.items", "numPages": "$.data.numPages"}},
      "responses": {"200": {"description": "ok"}}
    }},
    "/offsets": {"get": {
      "operationId": "speakeasyOffset",
      "parameters": [
        {"name": "offset", "in": "query", "schema": {"type": "integer"}},
        {"name": "limit", "in": "query", "schema": {"type": "integer"}}
      ],
      "x-speakeasy-pagination": {"type": "offsetLimit",
        "inputs": [{"name": "offset", "in": "parameters", "type": "offset"}, {"name": "limit", "in": "parameters", "type": "limit"}],
        "outputs": {"results": "$['results']"}},
      "responses": {"200": {"description": "ok"}}
    }},
    "/since": {"get": {
      "operationId": "speakeasyCursor",
      "parameters": [{"name": "since", "in": "query", "schema": {"type": "integer"}}],
      "x-speakeasy-pagination": {"type": "cursor",
        "inputs": [{"name": "since", "in": "parameters", "type": "cursor"}],
        "outputs": {"results": "$.data", "nextCursor": "$.data[(@.length-1)].created_at"}},
      "responses": {"200": {"description": "ok"}}
    }},
    "/follow": {"get": {
      "operationId": "speakeasyURL",
      "parameters": [{"name": "after", "in": "query", "schema": {"type": "string"}}],
      "x-speakeasy-pagination": {"type": "url", "outputs": {"nextUrl": "$.links.next"}},
      "responses": {"200": {"description": "ok"}}
    }},
    "/search": {"post": {
      "operationId": "speakeasyBodyInput",
      "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
      "x-speakeasy-pagination": {"type": "offsetLimit",
        "inputs": [{"name": "page", "in": "requestBody", "type": "page"}],
        "outputs": {"results": "$.hits"}},
      "responses": {"200": {"description": "ok"}}
    }},
    "/users.list": {"get": {
      "operationId": "users_list",
      "parameters": [
        {"name": "token", "in": "query", "schema": {"type": "string"}},
        {"name": "limit", "in": "query", "schema": {"type": "integer"}},
        {"name": "cursor", "in": "query", "schema": {"type": "string"}},
        {"name": "include_locale", "in": "query", "schema": {"type": "boolean"}}
      ],
      "responses": {"200": {"description": "ok"}}
    }},
    "/books": {"get": {
      "operationId": "listBooks",
      "parameters": [
        {"name": "pageSize", "in": "query", "schema": {"type": "integer"}},
        {"name": "pageToken", "in": "query", "schema": {"type": "string"}}
      ],
      "responses": {"200": {"description": "ok"}}
    }},
    "/events": {"get": {
      "operationId": "listEvents",
      "parameters": [{"name": "page_token", "in": "query", "schema": {"type": "string"}}],
      "responses": {"200": {"description": "ok"}}
    }},
    "/logs": {"get": {
      "operationId": "listLogs",
      "parameters": [{"name": "cursor", "in": "query", "schema": {"type": "string"}}],
      "responses": {"200": {"description": "ok"}}
    }},
    "/charges": {"get": {
      "operationId": "listCharges",
      "parameters": [
        {"name": "limit", "in": "query", "schema": {"type": "integer"}},
        {"name": "starting_after", "in": "query", "schema": {"type": "string"}},
        {"name": "ending_before", "in": "query", "schema": {"type": "string"}}
      ],
      "responses": {"200": {"description": "ok"}}
    }},
    "/plain": {"get": {
      "operationId": "noPaging",
      "responses": {"200": {"description": "ok"}}
    }}
  }
}`

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func linkHeader(values ...string) http.Header {
	h := http.Header{}
	for _, v := range values {
		h.Add("Link", v)
	}
	return h
}

type nextPageCase struct {
	name   string
	op     string
	url    string // the request URL; default https://api.example.com/orgs/acme/items
	params map[string]any
	header http.Header
	body   string
	want   map[string]any // nil: no next page
}

func runNextPageCases(t *testing.T, s *spec.Spec, cases []nextPageCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e := endpoint(t, s, tt.op)
			raw := tt.url
			if raw == "" {
				raw = "https://api.example.com/orgs/acme/items"
			}
			params := tt.params
			before := cloneParams(params)
			got := Next(Request{Endpoint: e, URL: mustURL(t, raw), Params: params}, tt.header, decodeBody(t, tt.body))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Next (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, params); diff != "" {
				t.Errorf("Next modified the caller's params (-before +after):\n%s", diff)
			}
		})
	}
}

func cloneParams(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestNextPageLink(t *testing.T) {
	s := parseSpec(t, "paging", pagingDoc, "")
	acme := map[string]any{"org": "acme", "q": "red"}
	next := func(page string) map[string]any {
		return map[string]any{"org": "acme", "q": "red", "page": json.Number(page)}
	}
	const base = "https://api.example.com"
	cases := []nextPageCase{
		{name: "next among four rels", op: "listItems", params: map[string]any{"org": "acme", "q": "red", "page": 2},
			header: linkHeader(`<` + base + `/orgs/acme/items?q=red&page=1>; rel="prev", <` + base + `/orgs/acme/items?q=red&page=3>; rel="next", <` + base + `/orgs/acme/items?q=red&page=9>; rel="last", <` + base + `/orgs/acme/items?q=red&page=1>; rel="first"`),
			want:   next("3")},
		{name: "rel list next last", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items?q=red&page=2>; rel="next last"`), want: next("2")},
		{name: "rel unquoted and upper case", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items?q=red&page=2>;rel=NEXT`), want: next("2")},
		{name: "quoted title with comma and semicolon before next", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items?q=red&page=1>; title="a, b; rel=\"next\""; rel="prev", <` + base + `/orgs/acme/items?q=red&page=2>; rel="next"`),
			want:   next("2")},
		{name: "first rel param wins", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items?q=red&page=2>; rel="prev"; rel="next"`)},
		{name: "second Link field", op: "listItems", params: acme,
			header: linkHeader(`<`+base+`/orgs/acme/items?q=red&page=1>; rel="prev"`, `<`+base+`/orgs/acme/items?q=red&page=2>; rel="next"`),
			want:   next("2")},
		{name: "relative path reference", op: "listItems", params: acme,
			header: linkHeader(`</orgs/acme/items?q=red&page=2>; rel="next"`), want: next("2")},
		{name: "query-only reference", op: "listItems", params: acme,
			header: linkHeader(`<?q=red&page=2>; rel="next"`), want: next("2")},
		{name: "explicit default port and upper-case host", op: "listItems", params: acme,
			header: linkHeader(`<https://API.example.com:443/orgs/acme/items?q=red&page=2>; rel="next"`), want: next("2")},
		{name: "other path same origin maps the query", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/organizations/77/items?q=red&page=2>; rel="next"`), want: next("2")},
		{name: "link query overrides and adds per_page", op: "listItems", params: map[string]any{"org": "acme", "q": "blue"},
			header: linkHeader(`<` + base + `/orgs/acme/items?q=red&per_page=50&page=2>; rel="next"`),
			want:   map[string]any{"org": "acme", "q": "red", "per_page": json.Number("50"), "page": json.Number("2")}},
		{name: "repeated key for an array parameter", op: "listItems", params: map[string]any{"org": "acme", "ids": []any{1, 2}},
			header: linkHeader(`<` + base + `/orgs/acme/items?ids=1&ids=2&page=2>; rel="next"`),
			want:   map[string]any{"org": "acme", "ids": []any{json.Number("1"), json.Number("2")}, "page": json.Number("2")}},
		{name: "non-numeric text for an integer stays a string", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items?page=last>; rel="next"`),
			want:   map[string]any{"org": "acme", "q": "red", "page": "last"}},

		// Never offered.
		{name: "another host", op: "listItems", params: acme,
			header: linkHeader(`<https://evil.example/orgs/acme/items?page=2>; rel="next"`)},
		{name: "sub-domain of the host", op: "listItems", params: acme,
			header: linkHeader(`<https://x.api.example.com/orgs/acme/items?page=2>; rel="next"`)},
		{name: "protocol-relative to another host", op: "listItems", params: acme,
			header: linkHeader(`<//evil.example/orgs/acme/items?page=2>; rel="next"`)},
		{name: "user info hiding another host", op: "listItems", params: acme,
			header: linkHeader(`<https://api.example.com@evil.example/items?page=2>; rel="next"`)},
		{name: "user info on the same host", op: "listItems", params: acme,
			header: linkHeader(`<https://user:pw@api.example.com/orgs/acme/items?page=2>; rel="next"`)},
		{name: "file URL", op: "listItems", params: acme,
			header: linkHeader(`<file:///etc/passwd?page=2>; rel="next"`)},
		{name: "javascript URL", op: "listItems", params: acme,
			header: linkHeader(`<javascript:alert(1)//?page=2>; rel="next"`)},
		{name: "http when the request was https", op: "listItems", params: acme,
			header: linkHeader(`<http://api.example.com/orgs/acme/items?page=2>; rel="next"`)},
		{name: "another port", op: "listItems", params: acme,
			header: linkHeader(`<https://api.example.com:8443/orgs/acme/items?page=2>; rel="next"`)},
		{name: "default port of the other scheme", op: "listItems", url: "http://api.example.com/orgs/acme/items", params: acme,
			header: linkHeader(`<http://api.example.com:443/orgs/acme/items?page=2>; rel="next"`)},
		{name: "prev only", op: "listItems", params: map[string]any{"org": "acme", "page": 2},
			header: linkHeader(`<` + base + `/orgs/acme/items?page=1>; rel="prev", <` + base + `/orgs/acme/items?page=1>; rel="first"`)},
		{name: "undeclared query key", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items?page=2&since=2024-01-01>; rel="next"`)},
		{name: "header parameter in the query", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items?page=2&X-Trace=1>; rel="next"`)},
		{name: "no query", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items>; rel="next"`)},
		{name: "the current page again", op: "listItems", params: map[string]any{"org": "acme", "q": "red", "page": json.Number("2")},
			header: linkHeader(`<` + base + `/orgs/acme/items?q=red&page=2>; rel="next"`)},
		{name: "the current page with an int", op: "listItems", params: map[string]any{"org": "acme", "page": 2},
			header: linkHeader(`<` + base + `/orgs/acme/items?page=2>; rel="next"`)},
		{name: "anchored link has another context", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items?page=2>; rel="next"; anchor="/orgs/other"`)},
		{name: "unclosed target", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items?page=2; rel="next"`)},
		{name: "no angle brackets", op: "listItems", params: acme,
			header: linkHeader(base + `/orgs/acme/items?page=2; rel="next"`)},
		{name: "unclosed quote", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items?page=2>; rel="next`)},
		{name: "garbage after a link", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items?page=1>; rel="prev" junk, <` + base + `/orgs/acme/items?page=2>; rel="next"`)},
		{name: "bad query escape", op: "listItems", params: acme,
			header: linkHeader(`<` + base + `/orgs/acme/items?page=%zz>; rel="next"`)},
		{name: "operation without paging parameters", op: "noPaging", params: nil,
			header: linkHeader(`<` + base + `/plain?page=2>; rel="next"`)},
		{name: "no header no body", op: "listItems", params: acme},
	}
	runNextPageCases(t, s, cases)
}

// A Link field of thousands of link-values costs no more than its first
// maxLinks: a next link past them is not looked for.
func TestNextPageLinkBoundedWork(t *testing.T) {
	s := parseSpec(t, "paging", pagingDoc, "")
	e := endpoint(t, s, "listItems")
	u := mustURL(t, "https://api.example.com/orgs/acme/items")
	many := func(n int, last string) http.Header {
		var b strings.Builder
		for i := range n {
			b.WriteString(`<https://api.example.com/orgs/acme/items?page=` + strconv.Itoa(i) + `>; rel="prev", `)
		}
		b.WriteString(last)
		return linkHeader(b.String())
	}
	const next = `<https://api.example.com/orgs/acme/items?page=10001>; rel="next"`
	params := map[string]any{"org": "acme"}

	if got := Next(Request{Endpoint: e, URL: u, Params: params}, many(10000, next), nil); got != nil {
		t.Errorf("next after 10,000 links: got %v, want nil", got)
	}
	first := linkHeader(next + ", " + many(10000, "").Get("Link"))
	if got := Next(Request{Endpoint: e, URL: u, Params: params}, first, nil); got["page"] != json.Number("10001") {
		t.Errorf("next before 10,000 links: got %v", got)
	}
	if got := Next(Request{Endpoint: e, URL: u, Params: params}, many(maxLinks-1, next), nil); got["page"] != json.Number("10001") {
		t.Errorf("next as link %d: got %v", maxLinks, got)
	}

	// The work does not grow with the header: the same allocations for
	// 100 links as for 10,000.
	h100, h10k := many(100, next), many(10000, next)
	small := testing.AllocsPerRun(20, func() { Next(Request{Endpoint: e, URL: u, Params: params}, h100, nil) })
	large := testing.AllocsPerRun(20, func() { Next(Request{Endpoint: e, URL: u, Params: params}, h10k, nil) })
	if large > small {
		t.Errorf("allocations: %v for 10,000 links, %v for 100", large, small)
	}
}

func TestNextPageBody(t *testing.T) {
	s := parseSpec(t, "paging", pagingDoc, "")
	cases := []nextPageCase{
		// x-speakeasy-pagination
		{name: "speakeasy page", op: "speakeasyPage", params: map[string]any{"page": 2, "size": 2},
			body: `{"data":{"items":[1,2],"numPages":4}}`, want: map[string]any{"page": json.Number("3"), "size": 2}},
		{name: "speakeasy page from none", op: "speakeasyPage",
			body: `{"data":{"items":[1,2],"numPages":4}}`, want: map[string]any{"page": json.Number("2")}},
		{name: "speakeasy page last by numPages", op: "speakeasyPage", params: map[string]any{"page": json.Number("4")},
			body: `{"data":{"items":[1,2],"numPages":4}}`},
		{name: "speakeasy page empty results", op: "speakeasyPage", params: map[string]any{"page": 2},
			body: `{"data":{"items":[],"numPages":4}}`},
		{name: "speakeasy page fewer than the limit", op: "speakeasyPage", params: map[string]any{"page": 2, "size": "3"},
			body: `{"data":{"items":[1,2],"numPages":4}}`},
		{name: "speakeasy page results not an array", op: "speakeasyPage",
			body: `{"data":{"items":{"a":1},"numPages":4}}`},
		{name: "speakeasy offset", op: "speakeasyOffset", params: map[string]any{"offset": 20, "limit": 3},
			body: `{"results":["a","b","c"]}`, want: map[string]any{"offset": json.Number("23"), "limit": 3}},
		{name: "speakeasy offset from none", op: "speakeasyOffset",
			body: `{"results":["a","b","c"]}`, want: map[string]any{"offset": json.Number("3")}},
		{name: "speakeasy offset short page", op: "speakeasyOffset", params: map[string]any{"limit": 10},
			body: `{"results":["a","b","c"]}`},
		{name: "speakeasy cursor last item", op: "speakeasyCursor", params: map[string]any{"since": 100},
			body: `{"data":[{"created_at":101},{"created_at":205}]}`, want: map[string]any{"since": json.Number("205")}},
		{name: "speakeasy cursor no results", op: "speakeasyCursor", params: map[string]any{"since": 100},
			body: `{"data":[]}`},
		{name: "speakeasy url same origin", op: "speakeasyURL", url: "https://api.example.com/follow",
			body: `{"links":{"next":"/follow?after=abc"}}`, want: map[string]any{"after": "abc"}},
		{name: "speakeasy url other host", op: "speakeasyURL", url: "https://api.example.com/follow",
			body: `{"links":{"next":"https://evil.example/follow?after=abc"}}`},
		{name: "speakeasy url null", op: "speakeasyURL", url: "https://api.example.com/follow",
			body: `{"links":{"next":null}}`},
		{name: "speakeasy input in the body", op: "speakeasyBodyInput", body: `{"hits":[1,2,3]}`},

		// Stripe
		{name: "stripe has_more", op: "listCharges", params: map[string]any{"limit": 2},
			body: `{"object":"list","data":[{"id":"ch_1"},{"id":"ch_2"}],"has_more":true,"url":"/v1/charges"}`,
			want: map[string]any{"limit": 2, "starting_after": "ch_2"}},
		{name: "stripe paging back", op: "listCharges", params: map[string]any{"ending_before": "ch_9"},
			body: `{"object":"list","data":[{"id":"ch_7"},{"id":"ch_8"}],"has_more":true}`,
			want: map[string]any{"ending_before": "ch_7"}},
		{name: "stripe has_more false", op: "listCharges",
			body: `{"object":"list","data":[{"id":"ch_1"}],"has_more":false}`},
		{name: "stripe empty data", op: "listCharges", body: `{"object":"list","data":[],"has_more":true}`},
		{name: "stripe item without id", op: "listCharges", body: `{"object":"list","data":[{"x":1}],"has_more":true}`},
		{name: "stripe has_more as text", op: "listCharges", body: `{"object":"list","data":[{"id":"ch_1"}],"has_more":"true"}`},
		{name: "stripe same cursor", op: "listCharges", params: map[string]any{"starting_after": "ch_2"},
			body: `{"object":"list","data":[{"id":"ch_2"}],"has_more":true}`},
		{name: "stripe shape without starting_after", op: "listLogs",
			body: `{"object":"list","data":[{"id":"x"}],"has_more":true}`},

		// Slack
		{name: "slack next_cursor", op: "users_list", params: map[string]any{"limit": 2},
			body: `{"ok":true,"members":[{"id":"U1"}],"response_metadata":{"next_cursor":"dXNlcjpVMEc5V0ZYTlo="}}`,
			want: map[string]any{"limit": 2, "cursor": "dXNlcjpVMEc5V0ZYTlo="}},
		{name: "slack last page", op: "users_list",
			body: `{"ok":true,"members":[{"id":"U1"}],"response_metadata":{"next_cursor":""}}`},

		// Google style and generic cursors
		{name: "nextPageToken", op: "listBooks", params: map[string]any{"pageSize": 10},
			body: `{"books":[],"nextPageToken":"CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA"}`,
			want: map[string]any{"pageSize": 10, "pageToken": "CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA"}},
		{name: "next_page_token", op: "listEvents", body: `{"events":[],"next_page_token":"p2"}`,
			want: map[string]any{"page_token": "p2"}},
		{name: "numeric next_cursor stays a string parameter", op: "listLogs", body: `{"logs":[],"next_cursor":12345678901234567890}`,
			want: map[string]any{"cursor": "12345678901234567890"}},
		{name: "next_cursor null", op: "listLogs", body: `{"logs":[],"next_cursor":null}`},
		{name: "nextPageToken without pageToken declared", op: "listLogs", body: `{"nextPageToken":"x"}`},
		{name: "array body", op: "listLogs", body: `[{"next_cursor":"x"}]`},
		{name: "non-JSON body", op: "listLogs"},
	}
	runNextPageCases(t, s, cases)
}

// The Link header is tried before the body's conventions; the body's cursor
// is used when the Link names nothing usable.
func TestNextPageSourceOrder(t *testing.T) {
	s := parseSpec(t, "paging", pagingDoc, "")
	e := endpoint(t, s, "listLogs")
	u := mustURL(t, "https://api.example.com/logs")
	body := decodeBody(t, `{"next_cursor":"from-body"}`)
	got := Next(Request{Endpoint: e, URL: u}, linkHeader(`</logs?cursor=from-link>; rel="next"`), body)
	if diff := cmp.Diff(map[string]any{"cursor": "from-link"}, got); diff != "" {
		t.Errorf("link first (-want +got):\n%s", diff)
	}
	got = Next(Request{Endpoint: e, URL: u}, linkHeader(`<https://evil.example/logs?cursor=x>; rel="next"`), body)
	if diff := cmp.Diff(map[string]any{"cursor": "from-body"}, got); diff != "" {
		t.Errorf("body after a refused link (-want +got):\n%s", diff)
	}
	if got := Next(Request{URL: u}, nil, body); got != nil {
		t.Errorf("no endpoint: got %v", got)
	}
	if got := Next(Request{Endpoint: e}, linkHeader(`</logs?cursor=x>; rel="next"`), nil); got != nil {
		t.Errorf("no request URL: got %v", got)
	}
}

// Operations from the real shared specs, with answers shaped as those APIs
// send them.
func TestNextPageRealSpecs(t *testing.T) {
	skipLargeSpecs(t)
	const gh = "https://api.github.com"
	ghLink := `<https://api.github.com/repositories/1300192/pulls?page=2&per_page=30>; rel="next", <https://api.github.com/repositories/1300192/pulls?page=34&per_page=30>; rel="last"`
	tests := []struct {
		file   string
		op     string
		url    string
		params map[string]any
		header http.Header
		body   string
		want   map[string]any
	}{
		// GitHub links the repository by id: another path, the same origin.
		{file: "github-full.json", op: "pulls/list", url: gh + "/repos/rails/rails/pulls?per_page=30",
			params: map[string]any{"owner": "rails", "repo": "rails", "per_page": 30}, header: linkHeader(ghLink),
			want: map[string]any{"owner": "rails", "repo": "rails", "per_page": json.Number("30"), "page": json.Number("2")}},
		{file: "github-full.json", op: "pulls/list", url: gh + "/repos/rails/rails/pulls?state=closed&page=2",
			params: map[string]any{"owner": "rails", "repo": "rails", "state": "closed", "page": 2},
			header: linkHeader(`<https://api.github.com/repositories/8514/pulls?state=closed&page=1>; rel="prev", <https://api.github.com/repositories/8514/pulls?state=closed&page=3>; rel="next", <https://api.github.com/repositories/8514/pulls?state=closed&page=1467>; rel="last", <https://api.github.com/repositories/8514/pulls?state=closed&page=1>; rel="first"`),
			want:   map[string]any{"owner": "rails", "repo": "rails", "state": "closed", "page": json.Number("3")}},
		{file: "github-full.json", op: "pulls/list", url: gh + "/repos/rails/rails/pulls",
			params: map[string]any{"owner": "rails", "repo": "rails"},
			header: linkHeader(`<https://uploads.github.com/repositories/1300192/pulls?page=2>; rel="next"`)},
		{file: "github-full.json", op: "pulls/list", url: gh + "/repos/rails/rails/pulls",
			params: map[string]any{"owner": "rails", "repo": "rails"},
			header: linkHeader(`<https://api.github.com/repositories/1300192/pulls?page=2&after=Y3Vyc29y>; rel="next"`)},
		{file: "stripe.json", op: "GetCustomers", url: "https://api.stripe.com/v1/customers?limit=3",
			params: map[string]any{"limit": 3, "email": "jo@example.com"},
			body:   `{"object":"list","url":"/v1/customers","has_more":true,"data":[{"id":"cus_NffrFeUfNV2Hib","object":"customer"},{"id":"cus_NffrFeUfNV2Hic","object":"customer"}]}`,
			want:   map[string]any{"limit": 3, "email": "jo@example.com", "starting_after": "cus_NffrFeUfNV2Hic"}},
		{file: "stripe.json", op: "GetCustomers", url: "https://api.stripe.com/v1/customers",
			body: `{"object":"list","url":"/v1/customers","has_more":false,"data":[{"id":"cus_1","object":"customer"}]}`},
		{file: "k8s.json", op: "listCoreV1NamespacedPod", url: "https://k8s.example:6443/api/v1/namespaces/default/pods?limit=500",
			params: map[string]any{"namespace": "default", "limit": 500},
			body:   `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"24971","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjQ5NzEsInN0YXJ0IjoicG9kLTQ5OVx1MDAwMCJ9"},"items":[{"metadata":{"name":"pod-0"}}]}`,
			want:   map[string]any{"namespace": "default", "limit": 500, "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjQ5NzEsInN0YXJ0IjoicG9kLTQ5OVx1MDAwMCJ9"}},
		{file: "k8s.json", op: "listCoreV1NamespacedPod", url: "https://k8s.example:6443/api/v1/namespaces/default/pods",
			params: map[string]any{"namespace": "default"},
			body:   `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"24971"},"items":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.op, func(t *testing.T) {
			e := endpoint(t, loadSharedOnce(t, tt.file), tt.op)
			got := Next(Request{Endpoint: e, URL: mustURL(t, tt.url), Params: tt.params}, tt.header, decodeBody(t, tt.body))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Next (-want +got):\n%s", diff)
			}
		})
	}
}

var sharedSpecs struct {
	sync.Mutex
	m map[string]*spec.Spec
}

// loadSharedOnce is sharedSpec loaded once per test binary.
func loadSharedOnce(t *testing.T, file string) *spec.Spec {
	t.Helper()
	sharedSpecs.Lock()
	defer sharedSpecs.Unlock()
	if s, ok := sharedSpecs.m[file]; ok {
		return s
	}
	s := sharedSpec(t, file, "")
	if sharedSpecs.m == nil {
		sharedSpecs.m = map[string]*spec.Spec{}
	}
	sharedSpecs.m[file] = s
	return s
}

var linkTarget = regexp.MustCompile(`<([^>]*)>`)

func FuzzNextPageLink(f *testing.F) {
	for _, seed := range []string{
		`<https://api.example.com/orgs/acme/items?page=2>; rel="next"`,
		`<https://api.example.com/orgs/acme/items?page=1>; rel="prev", </orgs/acme/items?page=3&per_page=5>; rel="next last"`,
		`<https://evil.example/orgs/acme/items?page=2>; rel="next"`,
		`<//evil.example/?page=2>; rel=next`,
		`<https://api.example.com@evil.example/?page=2>; rel="next"`,
		`<file:///etc/passwd?page=2>; rel="next"`,
		`<http://api.example.com/?page=2>; rel="next"`,
		`<https://api.example.com:444/?page=2>; rel="next"`,
		`<?page=2>; title="x, y"; rel="next"`,
		`<https://api.example.com/?page=2>; rel="next; anchor="x"`,
		`<https://API.EXAMPLE.COM:443/?page=2&ids=1&ids=2>;rel=NEXT`,
		`<https://api.example.com/?page=2>; rel="next"; rel="prev"`,
		`<\x00>; rel="next"`,
	} {
		f.Add(seed)
	}
	s := parseSpec(f, "paging", pagingDoc, "")
	e := endpoint(f, s, "listItems")
	u := mustURL(f, "https://api.example.com/orgs/acme/items?page=1")
	f.Fuzz(func(t *testing.T, link string) {
		params := map[string]any{"org": "acme", "page": 1}
		got := Next(Request{Endpoint: e, URL: u, Params: params}, http.Header{"Link": {link}}, nil)
		if got == nil {
			return
		}
		if got["org"] != "acme" {
			t.Fatalf("path parameter lost: %v", got)
		}
		// Every offered value comes from one link whose target has the
		// request's origin, checked here without NextPage's parser.
		for _, m := range linkTarget.FindAllStringSubmatch(link, -1) {
			ref, err := url.Parse(strings.TrimSpace(m[1]))
			if err != nil {
				continue
			}
			target := u.ResolveReference(ref)
			if target.Scheme != "https" || !strings.EqualFold(target.Hostname(), "api.example.com") ||
				(target.Port() != "" && target.Port() != "443") || target.User != nil {
				continue
			}
			q, err := url.ParseQuery(target.RawQuery)
			if err != nil {
				continue
			}
			if fromLink(got, params, q) {
				return
			}
		}
		t.Fatalf("offered %v from no same-origin link in %q", got, link)
	})
}

// fromLink reports whether got is params with the query q set.
func fromLink(got, params map[string]any, q url.Values) bool {
	for k, vs := range q {
		var want []string
		switch v := got[k].(type) {
		case []any:
			for _, it := range v {
				s, _ := valueText(it)
				want = append(want, s)
			}
		default:
			s, ok := valueText(v)
			if !ok {
				return false
			}
			want = []string{s}
		}
		if !cmp.Equal(want, vs) {
			return false
		}
	}
	for k, v := range got {
		if _, set := q[k]; !set && !cmp.Equal(params[k], v) {
			return false
		}
	}
	return true
}

func BenchmarkNextPageLink(b *testing.B) {
	s := parseSpec(b, "paging", pagingDoc, "")
	r := Request{
		Endpoint: endpoint(b, s, "listItems"),
		URL:      mustURL(b, "https://api.example.com/orgs/acme/items?q=red&page=2"),
		Params:   map[string]any{"org": "acme", "q": "red", "page": 2},
	}
	h := linkHeader(`<https://api.example.com/orgs/acme/items?q=red&page=1>; rel="prev", <https://api.example.com/orgs/acme/items?q=red&page=3>; rel="next", <https://api.example.com/orgs/acme/items?q=red&page=9>; rel="last", <https://api.example.com/orgs/acme/items?q=red&page=1>; rel="first"`)
	b.ReportAllocs()
	for b.Loop() {
		if Next(r, h, nil) == nil {
			b.Fatal("no next page")
		}
	}
}
