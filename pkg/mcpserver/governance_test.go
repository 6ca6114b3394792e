package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/internal/upstreamtest"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
	"github.com/specgate/specgate/pkg/telemetry"
)

// quotaSpec is a small API of GET endpoints, served by a quota-enforcing upstream.
const quotaSpec = `openapi: 3.0.3
info: {title: Quota API, version: "1"}
paths:
  /items:   {get: {operationId: listItems,   summary: List items,   tags: [items],   responses: {"200": {description: ok}}}}
  /users:   {get: {operationId: listUsers,   summary: List users,   tags: [users],   responses: {"200": {description: ok}}}}
  /orders:  {get: {operationId: listOrders,  summary: List orders,  tags: [orders],  responses: {"200": {description: ok}}}}
  /regions: {get: {operationId: listRegions, summary: List regions, tags: [regions], responses: {"200": {description: ok}}}}
  /stats:   {get: {operationId: getStats,    summary: Get stats,    tags: [stats],   responses: {"200": {description: ok}}}}
  /health:  {get: {operationId: getHealth,   summary: Get health,   tags: [health],  responses: {"200": {description: ok}}}}
`

// quotaEndpoints are the endpoint ids of quotaSpec under the spec name "quota".
var quotaEndpoints = []string{"quota.listItems", "quota.listUsers", "quota.listOrders", "quota.listRegions", "quota.getStats", "quota.getHealth"}

// govConfig configures a governance fixture.
type govConfig struct {
	upstream upstreamtest.Options
	// interval is every endpoint's cooldown; zero: none.
	interval time.Duration
	// budgets returns the budgets, given the quota upstream's key (host:port).
	budgets func(key string) []ratelimit.Budget
	tuning  bool
	// maxRetries and maxRetryWait are Options.MaxRetries and MaxRetryWait.
	maxRetries   int
	maxRetryWait time.Duration
	// timeout is the call deadline; zero: invoke's default.
	timeout time.Duration
	// progressEvery is the limiter's ProgressInterval; zero: its default.
	progressEvery time.Duration
	// other adds a second spec, "other", with the same paths on a second upstream with
	// the same quota.
	other bool
}

type govFixture struct {
	srv      *Server
	client   *client.Client
	limiter  *ratelimit.Limiter
	up       *upstreamtest.Server
	key      string // the quota upstream's key
	other    *upstreamtest.Server
	otherKey string
}

// newGovFixture serves quotaSpec (and, with cfg.other, a second copy) against
// quota-enforcing upstreams, through mcp-go's in-process client.
func newGovFixture(t testing.TB, cfg govConfig) *govFixture {
	t.Helper()
	f := &govFixture{up: upstreamtest.New(cfg.upstream)}
	hs := httptest.NewServer(f.up)
	t.Cleanup(hs.Close)
	specs := []*spec.Spec{parseQuotaSpec(t, "quota", hs.URL)}
	f.key = HostKey(hs.URL)
	if cfg.other {
		f.other = upstreamtest.New(cfg.upstream)
		hs2 := httptest.NewServer(f.other)
		t.Cleanup(hs2.Close)
		specs = append(specs, parseQuotaSpec(t, "other", hs2.URL))
		f.otherKey = HostKey(hs2.URL)
	}
	cat, ix, eps := servedCatalog(t, cfg.interval, specs...)
	var budgets []ratelimit.Budget
	if cfg.budgets != nil {
		budgets = cfg.budgets(f.key)
	}
	var err error
	f.limiter, err = ratelimit.New(ratelimit.Options{Endpoints: eps, Budgets: budgets, ProgressInterval: cfg.progressEvery})
	if err != nil {
		t.Fatal(err)
	}
	cl := invoke.New(invoke.Options{Timeout: cfg.timeout})
	t.Cleanup(cl.Close)
	f.srv = New(Options{SpecNames: cat.SpecNames(), AllowRuntimeTuning: cfg.tuning,
		Caller: invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: f.limiter, MaxRetries: cfg.maxRetries, MaxRetryWait: cfg.maxRetryWait}},
	})
	f.srv.Publish(cat, ix, nil)
	f.client = connectTB(t, f.srv, nil)
	return f
}

func parseQuotaSpec(t testing.TB, name, baseURL string) *spec.Spec {
	t.Helper()
	s, err := spec.Parse(t.Context(), name+".yaml", []byte(quotaSpec), spec.Options{Name: name, BaseURL: baseURL})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// connectTB is connect for tests and benchmarks; onNotify, when not nil, receives the
// server's notifications.
func connectTB(t testing.TB, srv *Server, onNotify func(mcp.JSONRPCNotification)) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if onNotify != nil {
		c.OnNotification(onNotify)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return c
}

// toolCall calls a tool without a *testing.T, so goroutines can use it. progressToken,
// when not nil, asks for progress notifications.
func toolCall(ctx context.Context, c *client.Client, name string, args map[string]any, progressToken mcp.ProgressToken) (map[string]any, bool, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	if progressToken != nil {
		req.Params.Meta = &mcp.Meta{ProgressToken: progressToken}
	}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, false, err
	}
	if len(res.Content) != 1 {
		return nil, res.IsError, fmt.Errorf("%s: %d content items", name, len(res.Content))
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		return nil, res.IsError, fmt.Errorf("%s: content is %T", name, res.Content[0])
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text.Text), &out); err != nil {
		return nil, res.IsError, fmt.Errorf("%s: text is not JSON: %q", name, text.Text)
	}
	return out, res.IsError, nil
}

func (f *govFixture) call(t *testing.T, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	return callTool(t, f.client, name, args)
}

func (f *govFixture) callOK(t *testing.T, name string, args map[string]any) map[string]any {
	t.Helper()
	res, isErr := f.call(t, name, args)
	if isErr {
		t.Fatalf("%s %v failed: %v", name, args, res)
	}
	return res
}

// callFail returns the error object of a tool call that must fail with code.
func (f *govFixture) callFail(t *testing.T, name string, args map[string]any, code string) map[string]any {
	t.Helper()
	res, isErr := f.call(t, name, args)
	if !isErr {
		t.Fatalf("%s %v succeeded, want %s: %v", name, args, code, res)
	}
	e := errorOf(t, res)
	if e["code"] != code {
		t.Fatalf("%s %v: code %v, want %s: %v", name, args, e["code"], code, e)
	}
	return e
}

func (f *govFixture) invokeOK(t *testing.T, id string) map[string]any {
	t.Helper()
	return f.callOK(t, "invoke", map[string]any{"endpointId": id})
}

func (f *govFixture) invokeFail(t *testing.T, id, code string) map[string]any {
	t.Helper()
	return f.callFail(t, "invoke", map[string]any{"endpointId": id}, code)
}

func onlyUpstream(t *testing.T, status map[string]any) map[string]any {
	t.Helper()
	ups, _ := status["upstreams"].([]any)
	if len(ups) != 1 {
		t.Fatalf("%d upstreams in %v, want 1", len(ups), status)
	}
	return ups[0].(map[string]any)
}

func TestSetRateLimitNotRegisteredByDefault(t *testing.T) {
	f := newGovFixture(t, govConfig{upstream: upstreamtest.Options{Limit: 100, Window: time.Second}, interval: time.Hour})
	res, err := f.client.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "set_rate_limit" {
			t.Fatal("set_rate_limit is listed without AllowRuntimeTuning")
		}
	}
	// Calling it anyway changes nothing.
	out, isErr, err := toolCall(t.Context(), f.client, "set_rate_limit", map[string]any{"endpointId": "quota.listItems", "rateLimitInterval": "0s"}, nil)
	if err == nil && !isErr {
		t.Fatalf("set_rate_limit answered without AllowRuntimeTuning: %v", out)
	}
	st := f.limiter.StatusAt(time.Now(), func(id string) bool { return id == "quota.listItems" })
	if iv := st.Endpoints[0].Interval; iv != time.Hour {
		t.Errorf("cooldown is %v after a refused set_rate_limit, want 1h", iv)
	}
}

// set_rate_limit changes an endpoint's cooldown and an upstream's budget at once,
// keeping what was already admitted; rate_limit_status and the next calls show it.
func TestSetRateLimitTakesEffectAtOnce(t *testing.T) {
	f := newGovFixture(t, govConfig{
		upstream: upstreamtest.Options{Limit: 100, Window: time.Second},
		interval: time.Hour,
		budgets: func(key string) []ratelimit.Budget {
			return []ratelimit.Budget{{Match: key, Requests: 100, Window: time.Minute, OnLimit: ratelimit.Reject}}
		},
		tuning: true,
	})
	f.invokeOK(t, "quota.listItems")
	f.invokeFail(t, "quota.listItems", "rate_limit")

	res := f.callOK(t, "set_rate_limit", map[string]any{"endpointId": "quota.listItems", "rateLimitInterval": "0s"})
	if res["cooldown"] != "0s" {
		t.Errorf("set cooldown answered %v", res)
	}
	res = f.callOK(t, "set_rate_limit", map[string]any{"upstream": f.key, "requestsPerWindow": 3, "window": "1m"})
	if lim := res["limits"].(map[string]any); lim["requestsPerWindow"] != float64(3) || lim["window"] != "1m0s" {
		t.Errorf("set budget answered %v", res)
	}

	st := f.callOK(t, "rate_limit_status", map[string]any{"endpointId": "quota.listItems"})
	ep := st["endpoints"].([]any)[0].(map[string]any)
	if _, ok := ep["cooldown"]; ok || ep["ready"] != true {
		t.Errorf("endpoint after tuning = %v, want no cooldown and ready", ep)
	}
	up := onlyUpstream(t, st)
	if lim := up["limits"].(map[string]any); lim["requestsPerWindow"] != float64(3) || lim["window"] != "1m0s" {
		t.Errorf("upstream limits = %v", lim)
	}
	// The call already admitted still counts against the new budget.
	if up["requestsUsed"] != float64(1) || up["requestsRemaining"] != float64(2) {
		t.Errorf("requestsUsed %v, requestsRemaining %v; want 1 and 2", up["requestsUsed"], up["requestsRemaining"])
	}

	// Behaviour: the cooldown no longer refuses, the new budget does after three calls.
	f.invokeOK(t, "quota.listItems")
	f.invokeOK(t, "quota.listItems")
	e := f.invokeFail(t, "quota.listItems", "rate_limit")
	if lim := e["limit"].(map[string]any); lim["kind"] != "requests" || lim["limit"] != float64(3) || lim["window"] != "1m0s" || e["scope"] != "proxy" {
		t.Errorf("refusal = %v", e)
	}
	if n := f.up.Requests(); n != 3 {
		t.Errorf("upstream saw %d requests, want 3", n)
	}

	t.Run("bad arguments", func(t *testing.T) {
		tests := []struct {
			args map[string]any
			code string
		}{
			{map[string]any{"endpointId": "quota.nope", "rateLimitInterval": "1s"}, "not_found"},
			{map[string]any{"endpointId": "quota.listItems"}, "validation_failed"},
			{map[string]any{"endpointId": "quota.listItems", "rateLimitInterval": "soon"}, "validation_failed"},
			{map[string]any{"endpointId": "quota.listItems", "rateLimitInterval": "-1s"}, "validation_failed"},
			{map[string]any{"upstream": f.key, "window": "a minute"}, "validation_failed"},
			{map[string]any{"upstream": f.key, "requestsPerWindow": -1}, "validation_failed"},
			{map[string]any{}, "validation_failed"},
			{map[string]any{"endpointId": "quota.listItems", "rateLimitInterval": "1s", "window": "1m"}, "validation_failed"},
			{map[string]any{"upstream": f.key, "rateLimitInterval": "1s"}, "validation_failed"},
			{map[string]any{"upstream": f.key, "endpointId": "quota.listItems", "requestsPerWindow": 2}, "validation_failed"},
			{map[string]any{"upstream": f.key, "requestsPerWindow": 1.5}, "validation_failed"},
			{map[string]any{"upstream": f.key, "window": 60}, "validation_failed"},
			{map[string]any{"upstream": f.key}, "validation_failed"},
		}
		for _, tt := range tests {
			f.callFail(t, "set_rate_limit", tt.args, tt.code)
		}
		if b, _ := f.limiter.Budget(f.key); b.Requests != 3 || b.Window != time.Minute {
			t.Errorf("bad arguments changed the budget: %+v", b)
		}
	})
}

func TestRateLimitStatusFilters(t *testing.T) {
	f := newGovFixture(t, govConfig{
		upstream: upstreamtest.Options{Limit: 100, Window: time.Second, Latency: 2 * time.Millisecond},
		interval: time.Hour,
		budgets: func(key string) []ratelimit.Budget {
			return []ratelimit.Budget{{Match: key, Requests: 50, Window: time.Minute}}
		},
		other: true,
	})
	f.invokeOK(t, "quota.listItems")
	f.invokeOK(t, "quota.listUsers")
	f.invokeOK(t, "other.listItems")
	f.invokeFail(t, "quota.listItems", "rate_limit")

	t.Run("all", func(t *testing.T) {
		st := f.callOK(t, "rate_limit_status", map[string]any{})
		if _, ok := st["endpoints"]; ok {
			t.Errorf("unfiltered status lists endpoints: %v", st["endpoints"])
		}
		var keys []string
		for _, u := range st["upstreams"].([]any) {
			keys = append(keys, u.(map[string]any)["upstream"].(string))
		}
		if len(keys) != 2 || !contains(keys, f.key) || !contains(keys, f.otherKey) {
			t.Errorf("upstreams %v, want %s and %s", keys, f.key, f.otherKey)
		}
	})
	t.Run("endpointId", func(t *testing.T) {
		st := f.callOK(t, "rate_limit_status", map[string]any{"endpointId": "quota.listItems"})
		eps := st["endpoints"].([]any)
		if len(eps) != 1 {
			t.Fatalf("endpoints = %v, want only quota.listItems", eps)
		}
		ep := eps[0].(map[string]any)
		if ep["id"] != "quota.listItems" || ep["upstream"] != f.key || ep["cooldown"] != "1h0m0s" || ep["ready"] != false ||
			ep["admitted"] != float64(1) || ep["refused"] != float64(1) {
			t.Errorf("endpoint = %v", ep)
		}
		if s, _ := ep["retryAfterSeconds"].(float64); s <= 3590 || s > 3600 {
			t.Errorf("retryAfterSeconds = %v, want just under an hour", ep["retryAfterSeconds"])
		}
		up := onlyUpstream(t, st)
		if up["upstream"] != f.key || up["admitted"] != float64(2) || up["requestsUsed"] != float64(2) ||
			up["requestsRemaining"] != float64(48) || up["upstream429s"] != float64(0) {
			t.Errorf("upstream = %v", up)
		}
		if up["refusedByScope"].(map[string]any)["proxy"] != float64(1) || up["refusedByCode"].(map[string]any)["rate_limit"] != float64(1) {
			t.Errorf("refusals = %v / %v", up["refusedByScope"], up["refusedByCode"])
		}
		if ms, _ := up["avgLatencyMs"].(float64); ms < 2 {
			t.Errorf("avgLatencyMs = %v, want at least the upstream's 2ms", up["avgLatencyMs"])
		}
	})
	t.Run("spec", func(t *testing.T) {
		st := f.callOK(t, "rate_limit_status", map[string]any{"spec": "other"})
		eps := st["endpoints"].([]any)
		if len(eps) != len(quotaEndpoints) {
			t.Errorf("%d endpoints, want %d", len(eps), len(quotaEndpoints))
		}
		for _, e := range eps {
			if id := e.(map[string]any)["id"].(string); !strings.HasPrefix(id, "other.") {
				t.Errorf("spec other lists %s", id)
			}
		}
		up := onlyUpstream(t, st)
		if up["upstream"] != f.otherKey || up["admitted"] != float64(1) {
			t.Errorf("upstream = %v", up)
		}
		if _, ok := up["limits"]; ok {
			t.Errorf("unconfigured upstream shows limits %v", up["limits"])
		}
	})
	t.Run("unknown", func(t *testing.T) {
		e := f.callFail(t, "rate_limit_status", map[string]any{"endpointId": "quota.listItem"}, "not_found")
		if sugg, _ := e["suggestions"].([]any); len(sugg) == 0 {
			t.Errorf("no suggestions for a near miss: %v", e)
		}
		e = f.callFail(t, "rate_limit_status", map[string]any{"spec": "quotas"}, "not_found")
		if h, _ := e["hint"].(string); !strings.Contains(h, "quota") || !strings.Contains(h, "other") {
			t.Errorf("hint %q does not list the loaded specs", h)
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// A task review counts the calls on the wire, upstream time, refusals by scope and code,
// and the round at which the given concurrency would meet each configured limit.
func TestTaskReview(t *testing.T) {
	f := newGovFixture(t, govConfig{
		// The upstream allows 3 calls a minute and says so with Retry-After.
		upstream: upstreamtest.Options{Limit: 3, Window: time.Minute, Latency: 2 * time.Millisecond, Headers: upstreamtest.RetryAfterSeconds},
		interval: time.Hour,
		budgets: func(key string) []ratelimit.Budget {
			return []ratelimit.Budget{{Match: key, Requests: 20, Window: 2 * time.Second, MinInterval: time.Millisecond, MaxConcurrent: 4}}
		},
	})
	begin := f.callOK(t, "begin_task", map[string]any{"name": "inventory sweep"})
	id, _ := begin["taskId"].(string)
	if id == "" || begin["name"] != "inventory sweep" {
		t.Fatalf("begin_task = %v", begin)
	}
	for _, ep := range quotaEndpoints[:3] {
		f.invokeOK(t, ep)
	}
	// specgate's cooldown refuses (proxy) ...
	f.invokeFail(t, "quota.listItems", "rate_limit")
	// ... the upstream answers 429 (no retries configured) ...
	e := f.invokeFail(t, quotaEndpoints[3], "upstream_rate_limit")
	if s, _ := e["retryAfterSeconds"].(float64); s < 50 || s > 60 {
		t.Errorf("retryAfterSeconds = %v, want the upstream's minute less what passed", e["retryAfterSeconds"])
	}
	// ... and specgate holds the next call for what the upstream said (upstream).
	e = f.invokeFail(t, quotaEndpoints[4], "upstream_rate_limit")
	if e["scope"] != "upstream" || e["limit"].(map[string]any)["kind"] != "learned" {
		t.Errorf("held call = %v", e)
	}
	if n := f.up.Requests(); n != 4 {
		t.Errorf("upstream saw %d requests, want 4", n)
	}

	r := f.callOK(t, "end_task", map[string]any{"taskId": id, "concurrency": 8})
	if r["taskId"] != id || r["name"] != "inventory sweep" || r["concurrency"] != float64(8) {
		t.Errorf("review header = %v", r)
	}
	if r["calls"] != float64(4) {
		t.Errorf("calls = %v, want the 4 that reached the upstream", r["calls"])
	}
	if up, _ := r["upstreamSeconds"].(float64); up < 0.008 || up > r["wallSeconds"].(float64) {
		t.Errorf("upstreamSeconds = %v (wall %v), want at least 4×2ms and at most the wall time", r["upstreamSeconds"], r["wallSeconds"])
	}
	if est, _ := r["serialEstimateSeconds"].(float64); est <= 0 {
		t.Errorf("serialEstimateSeconds = %v", r["serialEstimateSeconds"])
	}
	if r["endpointsTouched"] != float64(4) {
		t.Errorf("endpointsTouched = %v, want 4", r["endpointsTouched"])
	}
	ref, _ := r["refusals"].(map[string]any)
	if ref["proxy/rate_limit"] != float64(1) {
		t.Errorf("refusals = %v, want proxy/rate_limit 1 (the cooldown)", ref)
	}
	if n, _ := ref["upstream/upstream_rate_limit"].(float64); n < 1 {
		t.Errorf("refusals = %v, want upstream/upstream_rate_limit", ref)
	}
	rounds, _ := r["limitHitAtRound"].(map[string]any)
	want := map[string]any{
		"cooldown quota.listItems": float64(1), // two calls to one endpoint in one round
		"requests " + f.key:        float64(3), // 8 a round: the 21st call is in round 3
		"concurrency " + f.key:     float64(1), // 8 > 4 in flight
		"interval " + f.key:        float64(1), // 8 at once are closer than 1ms
	}
	for k, v := range want {
		if rounds[k] != v {
			t.Errorf("limitHitAtRound[%q] = %v, want %v (all: %v)", k, rounds[k], v, rounds)
		}
	}

	f.callFail(t, "end_task", map[string]any{"taskId": id}, "not_found")
	f.callFail(t, "end_task", map[string]any{"taskId": "task-999"}, "not_found")
	f.callFail(t, "end_task", map[string]any{"taskId": id, "concurrency": 0}, "validation_failed")

	// At a concurrency within the limits the review says so.
	id2 := f.callOK(t, "begin_task", map[string]any{"name": "small"})["taskId"].(string)
	r = f.callOK(t, "end_task", map[string]any{"taskId": id2, "concurrency": 2})
	if r["calls"] != float64(0) {
		t.Errorf("a task with no calls counts %v", r["calls"])
	}
	if rounds, _ := r["limitHitAtRound"].(map[string]any); len(rounds) != 0 {
		// No endpoint touched, so no upstream to plan for.
		t.Errorf("limitHitAtRound for a task with no calls = %v", rounds)
	}
}

// TestTaskReviewNamesARoundForLearnedLimits: a task that met an upstream 429 ended with
// a review that had no limitHitAtRound, since it read the configured budgets only. The
// limits the upstream advertised count too: each names a round or says "not reached".
func TestTaskReviewNamesARoundForLearnedLimits(t *testing.T) {
	f := newGovFixture(t, govConfig{
		// 3 a minute, said with X-RateLimit-* and Retry-After; no budget configured
		upstream: upstreamtest.Options{Limit: 3, Window: time.Minute, Headers: upstreamtest.RetryAfterSeconds | upstreamtest.XRateLimit},
	})
	id := f.callOK(t, "begin_task", map[string]any{"name": "sweep"})["taskId"].(string)
	for _, ep := range quotaEndpoints[:3] {
		f.invokeOK(t, ep)
	}
	f.invokeFail(t, quotaEndpoints[3], "upstream_rate_limit")
	r := f.callOK(t, "end_task", map[string]any{"taskId": id, "concurrency": 2})
	rounds, _ := r["limitHitAtRound"].(map[string]any)
	// 2 a round against 3 a minute: the 4th call, in round 2, meets it
	if got := rounds["learned requests "+f.key]; got != float64(2) {
		t.Errorf("limitHitAtRound[learned requests] = %v, want 2 (all: %v)", got, rounds)
	}

	// a 429 with Retry-After alone: the block and the budget inferred from it
	h := newGovFixture(t, govConfig{
		upstream: upstreamtest.Options{Limit: 3, Window: time.Minute, Headers: upstreamtest.RetryAfterSeconds},
	})
	id = h.callOK(t, "begin_task", map[string]any{"name": "blind"})["taskId"].(string)
	for _, ep := range quotaEndpoints[:3] {
		h.invokeOK(t, ep)
	}
	h.invokeFail(t, quotaEndpoints[3], "upstream_rate_limit")
	r = h.callOK(t, "end_task", map[string]any{"taskId": id, "concurrency": 2})
	rounds, _ = r["limitHitAtRound"].(map[string]any)
	if got := rounds["inferred requests "+h.key]; got != float64(2) {
		t.Errorf("limitHitAtRound[inferred requests] = %v, want 2 (all: %v)", got, rounds)
	}
	if got := rounds["learned block "+h.key]; got != float64(1) {
		t.Errorf("limitHitAtRound[learned block] = %v, want 1 while blocked (all: %v)", got, rounds)
	}

	// a learned quota the task cannot reach in a window says so
	g := newGovFixture(t, govConfig{
		upstream: upstreamtest.Options{Limit: 100000, Window: time.Second, Headers: upstreamtest.XRateLimit},
	})
	id = g.callOK(t, "begin_task", map[string]any{"name": "light"})["taskId"].(string)
	g.invokeOK(t, quotaEndpoints[0])
	r = g.callOK(t, "end_task", map[string]any{"taskId": id, "concurrency": 1})
	rounds, _ = r["limitHitAtRound"].(map[string]any)
	if got := rounds["learned requests "+g.key]; got != "not reached" {
		t.Errorf("limitHitAtRound[learned requests] = %v, want \"not reached\" (all: %v)", got, rounds)
	}
}

func TestTaskReviewLimitsNotReached(t *testing.T) {
	f := newGovFixture(t, govConfig{
		upstream: upstreamtest.Options{Limit: 100, Window: time.Second},
		budgets: func(key string) []ratelimit.Budget {
			return []ratelimit.Budget{{Match: key, Requests: 1000, Window: time.Second, MaxConcurrent: 4}}
		},
	})
	id := f.callOK(t, "begin_task", map[string]any{"name": "t"})["taskId"].(string)
	f.invokeOK(t, "quota.listItems")
	r := f.callOK(t, "end_task", map[string]any{"taskId": id, "concurrency": 2})
	rounds, _ := r["limitHitAtRound"].(map[string]any)
	if rounds["concurrency "+f.key] != "not reached" {
		t.Errorf("concurrency 2 of 4: %v", rounds)
	}
	if _, ok := rounds["requests "+f.key]; !ok {
		t.Errorf("no requests entry in %v", rounds)
	}
}

// A call that waits in an upstream's queue (on_limit wait) sends progress notifications
// to a client that passed a progress token.
func TestProgressWhileQueued(t *testing.T) {
	f := newGovFixture(t, govConfig{
		upstream: upstreamtest.Options{Limit: 100, Window: time.Second},
		budgets: func(key string) []ratelimit.Budget {
			return []ratelimit.Budget{{Match: key, MinInterval: 300 * time.Millisecond, OnLimit: ratelimit.Wait}}
		},
		progressEvery: 50 * time.Millisecond,
	})
	var mu sync.Mutex
	var got []map[string]any
	first := make(chan struct{})
	c := connectTB(t, f.srv, func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/progress" {
			return
		}
		b, _ := json.Marshal(n.Params)
		var p map[string]any
		json.Unmarshal(b, &p)
		mu.Lock()
		got = append(got, p)
		if len(got) == 1 {
			close(first)
		}
		mu.Unlock()
	})
	// A call without a token waits too but asks for no progress.
	if _, isErr, err := toolCall(t.Context(), c, "invoke", map[string]any{"endpointId": "quota.listItems"}, nil); err != nil || isErr {
		t.Fatalf("first call: %v %v", isErr, err)
	}
	res, isErr, err := toolCall(t.Context(), c, "invoke", map[string]any{"endpointId": "quota.listUsers"}, nil)
	if err != nil || isErr {
		t.Fatalf("second call: %v %v %v", res, isErr, err)
	}
	res, isErr, err = toolCall(t.Context(), c, "invoke", map[string]any{"endpointId": "quota.listOrders"}, "p1")
	if err != nil || isErr {
		t.Fatalf("call with a progress token: %v %v %v", res, isErr, err)
	}
	if w, _ := res["rateLimit"].(map[string]any)["queueWaitMs"].(float64); w < 200 || w > 2000 {
		t.Errorf("queueWaitMs = %v, want about 300", res["rateLimit"])
	}
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification for a call that waited in the queue")
	}
	mu.Lock()
	defer mu.Unlock()
	last := -1.0
	for _, p := range got {
		// Notifications arrive in order: one without "p1" would be from the call that
		// asked for none.
		if p["progressToken"] != "p1" {
			t.Errorf("progress with token %v: %v", p["progressToken"], p)
		}
		pr, _ := p["progress"].(float64)
		if pr < last {
			t.Errorf("progress went back from %v to %v", last, pr)
		}
		last = pr
		if msg, _ := p["message"].(string); !strings.Contains(msg, "queue") && !strings.Contains(msg, "rate limit") {
			t.Errorf("progress message %q", msg)
		}
	}
}

// on_limit reject refuses at once with rate_limit, the limit that bound the call and the
// exact wait: waiting retryAfterSeconds from the decision is exactly the limit.
func TestOnLimitRejectExactWait(t *testing.T) {
	tests := []struct {
		name     string
		budget   ratelimit.Budget
		admitted int
		kind     string
		wait     time.Duration
		check    func(t *testing.T, limit map[string]any)
	}{
		{"requests", ratelimit.Budget{Requests: 2, Window: time.Minute, OnLimit: ratelimit.Reject}, 2, "requests",
			time.Minute + ratelimit.DefaultWindowPad,
			func(t *testing.T, lim map[string]any) {
				if lim["limit"] != float64(2) || lim["window"] != "1m0s" {
					t.Errorf("limit = %v", lim)
				}
			}},
		{"interval", ratelimit.Budget{MinInterval: 10 * time.Second, OnLimit: ratelimit.Reject}, 1, "interval",
			10 * time.Second,
			func(t *testing.T, lim map[string]any) {
				if lim["interval"] != "10s" {
					t.Errorf("limit = %v", lim)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newGovFixture(t, govConfig{
				upstream: upstreamtest.Options{Limit: 100, Window: time.Second},
				budgets: func(key string) []ratelimit.Budget {
					b := tt.budget
					b.Match = key
					return []ratelimit.Budget{b}
				},
			})
			t0 := time.Now()
			for i := range tt.admitted {
				f.invokeOK(t, quotaEndpoints[i])
			}
			e := f.invokeFail(t, quotaEndpoints[tt.admitted], "rate_limit")
			t1 := time.Now()
			if e["scope"] != "proxy" || e["retryable"] != true {
				t.Errorf("error = %v", e)
			}
			lim := e["limit"].(map[string]any)
			if lim["kind"] != tt.kind || lim["key"] != f.key {
				t.Errorf("limit = %v, want kind %s on %s", lim, tt.kind, f.key)
			}
			tt.check(t, lim)
			// The first admission was between t0 and t1; the refusal was decided before t1.
			secs := e["retryAfterSeconds"].(float64)
			if lo, hi := (tt.wait - t1.Sub(t0)).Seconds(), tt.wait.Seconds(); secs < lo || secs > hi {
				t.Errorf("retryAfterSeconds = %v, want within [%.3f, %.3f]", secs, lo, hi)
			}
			at, err := time.Parse(time.RFC3339Nano, e["retryAt"].(string))
			if err != nil {
				t.Fatal(err)
			}
			if lo, hi := t0.Add(tt.wait), t1.Add(tt.wait+time.Millisecond); at.Before(lo) || at.After(hi) {
				t.Errorf("retryAt = %v, want within [%v, %v]", at, lo, hi)
			}
			if n := f.up.Requests(); n != int64(tt.admitted) {
				t.Errorf("upstream saw %d requests, want %d", n, tt.admitted)
			}
			if d := time.Since(t0); d > 5*time.Second {
				t.Errorf("reject took %v: it must not wait", d)
			}
		})
	}
}

// A full queue answers queue_full at once; a cancelled waiter frees its place.
func TestQueueFullAndCancelFreesSlot(t *testing.T) {
	f := newGovFixture(t, govConfig{
		upstream: upstreamtest.Options{Limit: 100, Window: time.Second},
		budgets: func(key string) []ratelimit.Budget {
			return []ratelimit.Budget{{Match: key, MinInterval: time.Second, OnLimit: ratelimit.Wait, QueueDepth: 1}}
		},
		progressEvery: time.Hour, // only the notification on entering the queue
	})
	queued := make(chan string, 8)
	c := connectTB(t, f.srv, func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			b, _ := json.Marshal(n.Params)
			var p map[string]any
			json.Unmarshal(b, &p)
			tok, _ := p["progressToken"].(string)
			queued <- tok
		}
	})
	f.invokeOK(t, "quota.listItems")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := toolCall(ctx, c, "invoke", map[string]any{"endpointId": "quota.listUsers"}, "waiter")
		done <- err
	}()
	if tok := <-queued; tok != "waiter" {
		t.Fatalf("progress for %q", tok)
	}

	e := f.invokeFail(t, "quota.listOrders", "queue_full")
	if e["retryable"] != true || e["scope"] != "proxy" {
		t.Errorf("queue_full = %v", e)
	}
	// The estimate is when a new call would be served: behind the waiting one, one
	// interval after it.
	if s, _ := e["retryAfterSeconds"].(float64); s <= 1 || s > 2 {
		t.Errorf("retryAfterSeconds = %v, want the head's wait plus one 1s interval", e["retryAfterSeconds"])
	}
	up := onlyUpstream(t, f.callOK(t, "rate_limit_status", map[string]any{"endpointId": "quota.listOrders"}))
	if up["queueDepth"] != float64(1) || up["refusedByCode"].(map[string]any)["queue_full"] != float64(1) {
		t.Errorf("status = %v", up)
	}

	cancel()
	<-done
	up = onlyUpstream(t, f.callOK(t, "rate_limit_status", map[string]any{"endpointId": "quota.listOrders"}))
	if up["queueDepth"] != float64(0) {
		t.Fatalf("the cancelled call still holds its place: %v", up)
	}
	// Its place is free: the next call queues instead of being refused, and goes.
	res := f.invokeOK(t, "quota.listRegions")
	if w, _ := res["rateLimit"].(map[string]any)["queueWaitMs"].(float64); w <= 0 {
		t.Errorf("call after the cancel did not wait: %v", res["rateLimit"])
	}
	if n := f.up.Requests(); n != 2 {
		t.Errorf("upstream saw %d requests, want 2 (the cancelled and the refused never went)", n)
	}
}

// A shadow budget (enforce: false) refuses nothing; rate_limit_status and
// /metrics report the calls it would have held.
func TestShadowBudgetReported(t *testing.T) {
	f := newGovFixture(t, govConfig{
		upstream: upstreamtest.Options{Limit: 100, Window: time.Second},
		budgets: func(key string) []ratelimit.Budget {
			return []ratelimit.Budget{{Match: key, Requests: 2, Window: time.Minute, OnLimit: ratelimit.Reject, Shadow: true}}
		},
	})
	for range 4 {
		f.invokeOK(t, "quota.listItems")
	}
	up := onlyUpstream(t, f.callOK(t, "rate_limit_status", map[string]any{}))
	sh, ok := up["shadow"].(map[string]any)
	if !ok {
		t.Fatalf("no shadow in %v", up)
	}
	if sh["calls"] != float64(4) || sh["wouldRefuse"] != float64(2) || sh["byKind"].(map[string]any)["requests"] != float64(2) {
		t.Errorf("shadow = %v, want 4 calls, 2 it would refuse for requests", sh)
	}
	if lim := sh["limits"].(map[string]any); lim["requestsPerWindow"] != float64(2) {
		t.Errorf("shadow limits = %v", lim)
	}
	if up["admitted"] != float64(4) {
		t.Errorf("admitted %v, want 4", up["admitted"])
	}
	m := telemetry.NewMetrics()
	m.SetLimiter(f.limiter)
	var b strings.Builder
	got, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range got {
		if mf.GetName() == "specgate_shadow_would_refuse_total" {
			for _, x := range mf.GetMetric() {
				for _, lp := range x.GetLabel() {
					b.WriteString(lp.GetName() + "=" + lp.GetValue() + " ")
				}
				fmt.Fprintf(&b, "%v\n", x.GetCounter().GetValue())
			}
		}
	}
	if want := "kind=requests upstream=" + f.key + " 2\n"; !strings.Contains(b.String(), want) {
		t.Errorf("metrics:\n%s\nwant %q", b.String(), want)
	}
}
