package mcpserver

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/internal/redistest"
	"github.com/specgate/specgate/internal/upstreamtest"
	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/redisstore"
)

// syncBuffer is an audit log the test reads while the server writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const pageAndLoop = `
let args = {parameters: {owner: "rails", repo: "rails", per_page: 25}}, prs = [];
for (let p = 0; p < 3 && args; p++) {
  const r = await api.invoke("paging.listPulls", args);
  prs.push(...r.body);
  args = r.nextPage;
}
// Distinct arguments: paced by the budgets, not refused by the cooldown.
const picked = await Promise.all([1, 2, 3, 4].map(async n =>
  (await api.invoke("paging.listPulls", {parameters: {owner: "rails", repo: "rails", per_page: 1, page: n}})).body[0].number));
// An identical repeat within the interval is refused, and can be caught.
let repeat;
try { await api.invoke("paging.listPulls", {parameters: {owner: "rails", repo: "rails", per_page: 1, page: 1}}); }
catch (e) { repeat = {code: e.code, scope: e.scope, retry: e.retryAfterSeconds > 0}; }
console.log("read", prs.length);
return {listed: prs.length, first: prs[0].number, picked, repeat};`

// TestRunScriptPagesAListAndLoopsGoverned: a script's calls go through
// invoke's governed call, with the cooldown keyed on the arguments, the
// run id in every audit line, and only the result in the answer.
func TestRunScriptPagesAListAndLoopsGoverned(t *testing.T) {
	audit := &syncBuffer{}
	f := newPagingFixture(t, pagingOptions{cooldown: 10 * time.Second, server: Options{Audit: audit}})
	a := callText(t, f.client, "run_script", map[string]any{"code": pageAndLoop}).ok(t)
	if got, want := string(mustJSON(a.m["result"])), `{"first":1,"listed":75,"picked":[1,2,3,4],"repeat":{"code":"rate_limit","retry":true,"scope":"proxy"}}`; got != want {
		t.Errorf("result %s, want %s", got, want)
	}
	calls := a.m["calls"].(map[string]any)
	if calls["total"] != float64(8) || calls["byStatus"].(map[string]any)["200"] != float64(7) || calls["byStatus"].(map[string]any)["rate_limit"] != float64(1) {
		t.Errorf("calls %v, want 8: 7 answered 200, 1 refused", calls)
	}
	if n := f.pages.Count(upstreamtest.GitHubStyle); n != 7 {
		t.Errorf("upstream saw %d requests, want 7 (the refused repeat sent nothing)", n)
	}
	if logs := a.m["logs"].([]any); len(logs) != 1 || logs[0] != "read 75" {
		t.Errorf("logs %v", logs)
	}
	runID, _ := a.m["runId"].(string)
	lines := strings.Split(strings.TrimSpace(audit.String()), "\n")
	if runID == "" || len(lines) != 8 {
		t.Fatalf("run %q, %d audit lines, want 8", runID, len(lines))
	}
	for _, l := range lines {
		if !strings.Contains(l, `"runId":"`+runID+`"`) {
			t.Errorf("audit line without the run id: %s", l)
		}
	}
	if len(a.text) > 2048 {
		t.Errorf("the answer is %d bytes: the 75 pull requests stayed out of it, so it should be small", len(a.text))
	}
	// A direct invoke keeps the endpoint's own cooldown, which the
	// script's calls did not charge.
	callText(t, f.client, "invoke", listPulls).ok(t)
	callText(t, f.client, "invoke", listPulls).code(t, codes.RateLimit)
}

// TestRunScriptCooldownByArgumentsOnRedis is the script of
// TestRunScriptPagesAListAndLoopsGoverned with the limiter's state in a
// real Redis and a budget of 3 requests per 300ms that waits: the loop
// over distinct arguments is paced by the budget in Redis (it waits, none
// is refused), the identical repeat is refused by its cooldown kept in
// Redis, and nothing of it reaches the upstream.
func TestRunScriptCooldownByArgumentsOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	prefix := fmt.Sprintf("test:%s:%x:", t.Name(), rand.Uint32())
	store, err := redisstore.New(t.Context(), redisstore.Options{URL: srv.URL(), KeyPrefix: prefix, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := newPagingFixture(t, pagingOptions{cooldown: 10 * time.Second, store: store, budgets: []ratelimit.Budget{{
		Requests: 3, Window: 300 * time.Millisecond, OnLimit: ratelimit.Wait, QueueDepth: 16, QueueTimeout: 10 * time.Second}}})
	a := callText(t, f.client, "run_script", map[string]any{"code": pageAndLoop}).ok(t)
	if got, want := string(mustJSON(a.m["result"])), `{"first":1,"listed":75,"picked":[1,2,3,4],"repeat":{"code":"rate_limit","retry":true,"scope":"proxy"}}`; got != want {
		t.Errorf("result %s, want %s", got, want)
	}
	calls := a.m["calls"].(map[string]any)
	if calls["total"] != float64(8) || calls["byStatus"].(map[string]any)["200"] != float64(7) || calls["byStatus"].(map[string]any)["rate_limit"] != float64(1) {
		t.Errorf("calls %v, want 8: 7 answered 200, 1 refused", calls)
	}
	if wait, _ := a.m["rateLimit"].(map[string]any)["queueWaitMs"].(float64); wait <= 0 {
		t.Errorf("queueWaitMs %v: 7 calls at 3 per 300ms must have waited", a.m["rateLimit"])
	}
	if n := f.pages.Count(upstreamtest.GitHubStyle); n != 7 {
		t.Errorf("upstream saw %d requests, want 7 (the refused repeat sent nothing)", n)
	}
	// The cooldowns are Redis's: one key per distinct arguments (3 pages, 4
	// picks), the repeat's being the first pick's.
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opt)
	defer rc.Close()
	keys, err := rc.Keys(t.Context(), prefix+"*cd:paging.listPulls\x00*").Result()
	if err != nil || len(keys) != 7 {
		t.Errorf("argument-keyed cooldowns in Redis: %d (%v), want 7: %q", len(keys), err, keys)
	}
	if d, _, why := f.srv.opts.Caller.Limiter.Degraded(); d || !store.Available("") {
		t.Errorf("the Redis store was degraded (%s): the run was governed by the fallback", why)
	}
}

// TestRunScriptWritesNeedAllowWrites: a write throws validation_failed
// naming scripts.allow_writes, and nothing is sent.
func TestRunScriptWritesNeedAllowWrites(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	a := callText(t, f.client, "run_script", map[string]any{"code": `
try { await api.invoke("petstore.addPet", {requestBody: {name: "doggie", photoUrls: []}}); }
catch (e) { return {code: e.code, message: e.message}; }`}).ok(t)
	res := a.m["result"].(map[string]any)
	if res["code"] != codes.ValidationFailed || !strings.Contains(res["message"].(string), "scripts.allow_writes") {
		t.Errorf("result %v, want validation_failed naming scripts.allow_writes", res)
	}
	if n := len(f.pages.Requests()); n != 0 {
		t.Errorf("upstream saw %d requests, want none", n)
	}
}

// TestRunScriptFailures: each failure is a bounded error object with the
// calls already made and the logs.
func TestRunScriptFailures(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	tests := []struct {
		name, code, want, msg string
		line                  float64
		calls                 float64
		args                  map[string]any
	}{
		{"syntax error", "const a = 1;\nconst = 2;", codes.ScriptError, "line 2", 2, 0, nil},
		{"uncaught throw after a call", `await api.invoke("paging.listPulls", {parameters: {owner: "a", repo: "b"}});
console.log("one call made");
throw new Error("boom");`, codes.ScriptError, "boom", 3, 1, nil},
		{"endless loop", `console.log("looping"); while (true) {}`, codes.Timeout, "deadline", 0, 0, map[string]any{"timeoutSeconds": 1}},
		{"bad endpoint id", "const a = 1;\nawait api.invoke(\"nope.nothing\", {});", codes.ScriptError, "uncaught: not_found: no endpoint \"nope.nothing\": use api.search", 2, 1, nil},
		{"unserialisable return", `const a = {}; a.a = a; return a;`, codes.ScriptError, "serialised", 0, 0, nil},
		{"thrown non-Error", `throw 42;`, codes.ScriptError, "42", 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"code": tt.code}
			for k, v := range tt.args {
				args[k] = v
			}
			e := callText(t, f.client, "run_script", args).code(t, tt.want)
			if !strings.Contains(e["message"].(string), tt.msg) {
				t.Fatalf("%v: %v, want %s naming %q", e["code"], e["message"], tt.want, tt.msg)
			}
			if tt.line > 0 && e["line"] != tt.line {
				t.Errorf("line %v, want %v", e["line"], tt.line)
			}
			calls, ok := e["calls"].(map[string]any)
			if !ok || calls["total"] != tt.calls {
				t.Errorf("calls %v, want total %v", e["calls"], tt.calls)
			}
			if strings.Contains(tt.code, "console.log") && e["logs"] == nil {
				t.Errorf("no logs in %v", e)
			}
			// the hint said "the calls counted already went out" when none
			// did (issue 33 item 7)
			hint, _ := e["hint"].(string)
			if want := "no call went out"; tt.calls > 0 {
				if !strings.Contains(hint, "already went out") {
					t.Errorf("hint %q after %v calls", hint, tt.calls)
				}
			} else if !strings.Contains(hint, want) {
				t.Errorf("hint %q, want %q", hint, want)
			}
		})
	}
	callText(t, f.client, "run_script", map[string]any{"code": "return 1", "timeoutSeconds": 3600}).code(t, codes.ValidationFailed)
}

// TestRunScriptLargeResultIsStored: a result over the budget comes back
// as a preview with a responseId that read_response reads.
func TestRunScriptLargeResultIsStored(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	a := callText(t, f.client, "run_script", map[string]any{"code": `
const r = await api.invoke("paging.listPulls", {parameters: {owner: "rails", repo: "rails", per_page: 30}});
return r.body;`}).ok(t)
	id, _ := a.m["responseId"].(string)
	if id == "" || a.m["shaped"] == nil || len(a.text) > 16<<10 {
		t.Fatalf("answer of %d bytes, shaped %v, responseId %q: want a preview in the budget", len(a.text), a.m["shaped"], id)
	}
	r := callText(t, f.client, "read_response", map[string]any{"responseId": id, "jq": "[.[] | .number]"}).ok(t)
	if nums, _ := r.m["body"].([]any); len(nums) != 30 || nums[29] != float64(30) {
		t.Errorf("read_response body %v", r.m["body"])
	}
}
