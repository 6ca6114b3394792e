package mcpserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/serve"
)

// walkForSecrets is a script that gathers every string it can reach: the
// names and values of everything under globalThis (own properties, hidden
// ones too, prototypes, functions' source), an answer and its headers, and
// a failed call's Error with its stack; it returns them all.
const walkForSecrets = `
const seen = new Set(), texts = [];
function walk(v, depth) {
  if (v === null || v === undefined || depth > 8) return;
  if (typeof v !== "object" && typeof v !== "function") { texts.push(String(v)); return; }
  if (seen.has(v)) return;
  seen.add(v);
  if (typeof v === "function") { try { texts.push(Function.prototype.toString.call(v)); } catch (e) {} }
  let names = [];
  try { names = Object.getOwnPropertyNames(v); } catch (e) {}
  for (const k of names) {
    texts.push(k);
    let x;
    try { x = v[k]; } catch (e) { continue; }
    walk(x, depth + 1);
  }
  try { walk(Object.getPrototypeOf(v), depth + 1); } catch (e) {}
}
walk(globalThis, 0);
walk(await api.invoke("petstore.getPetById", {parameters: {petId: 1}}), 0);
try { await api.invoke("petstore.getPetById", {parameters: {petId: 2}}); }
catch (e) { walk(e, 0); texts.push(String(e), e.stack, JSON.stringify(e)); }
console.log(texts.slice(0, 50).join(" "));
return {strings: texts.length, texts};`

// TestRunScriptWalksNoCredential: a script that walks globalThis, an
// answer whose upstream echoes the key in its body and headers, and an
// Error of a call the upstream refused with the key in its body, finds no
// credential: not in what it returns, its logs, or the answer stored for
// read_response.
func TestRunScriptWalksNoCredential(t *testing.T) {
	const secret = "SECRET-script-key-9c1d2e"
	var sent atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		key := r.Header.Get("api_key")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo-Key", key)
		if strings.HasSuffix(r.URL.Path, "/2") {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"message": "key " + key + " is not allowed"})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": 1, "name": "the key was " + key, "photoUrls": []any{key}})
	}))
	t.Cleanup(up.Close)
	c, store := petstoreWithKey(t, up.URL, secret)

	a := callText(t, c, "run_script", map[string]any{"code": walkForSecrets}).ok(t)
	if sent.Load() != 2 {
		t.Fatalf("upstream saw %d requests, want 2: %.300s", sent.Load(), a.text)
	}
	texts := []string{a.text}
	if id, _ := a.m["responseId"].(string); id != "" {
		stored, err := store.Get(t.Context(), localPrincipal, id)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(stored.Body))
		var walked struct {
			Strings int `json:"strings"`
		}
		_ = json.Unmarshal(stored.Body, &walked)
		t.Logf("the walk gathered %d strings", walked.Strings)
		if walked.Strings < 1000 {
			t.Errorf("the walk gathered %d strings: it did not walk the globals", walked.Strings)
		}
		if !strings.Contains(string(stored.Body), "[redacted]") || !strings.Contains(string(stored.Body), "invoke") {
			t.Errorf("the walk did not reach the echoed key or the api: %.300s", stored.Body)
		}
	} else {
		t.Errorf("the walk's result fit the answer whole (%d bytes): it gathered too little", len(a.text))
	}
	for i, text := range texts {
		if strings.Contains(text, secret) {
			t.Errorf("text %d holds the credential", i)
		}
	}
}

// TestRunScriptBadArgumentsSendNothing: api.invoke with arguments the
// endpoint refuses (a missing required parameter, a wrong type, an unknown
// parameter) throws validation_failed, as invoke answers them, and sends
// nothing.
func TestRunScriptBadArgumentsSendNothing(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	a := callText(t, f.client, "run_script", map[string]any{"code": `
const codes = [];
for (const args of [{}, {parameters: {petId: "abc"}}, {parameters: {petId: 1, nope: 2}}, {pages: 99}]) {
  try { await api.invoke("petstore.getPetById", args); codes.push("sent"); }
  catch (e) { codes.push(e.code); }
}
return codes;`}).ok(t)
	if got, want := string(mustJSON(a.m["result"])), `["validation_failed","validation_failed","validation_failed","validation_failed"]`; got != want {
		t.Errorf("result %s, want %s", got, want)
	}
	if n := len(f.pages.Requests()); n != 0 {
		t.Errorf("upstream saw %d requests, want none", n)
	}
}

// TestRunScriptOthersServedMeanwhile: while one run spins in an endless
// loop, the server answers other calls; the loop then ends at its deadline
// with timeout and the call it made.
func TestRunScriptOthersServedMeanwhile(t *testing.T) {
	arrived := make(chan struct{}, 8)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":1,"name":"rex","photoUrls":[]}`))
	}))
	t.Cleanup(up.Close)
	cat, ix, _ := servedCatalog(t, 0, petstoreAt(t, up.URL))
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	srv := New(Options{SpecNames: []string{"petstore"}, Caller: invoke.Caller{Governed: invoke.Governed{Client: cl}}})
	srv.Publish(cat, ix, nil)
	c := connectTB(t, srv, nil)

	looped := make(chan toolAnswer, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "run_script"
		req.Params.Arguments = map[string]any{"timeoutSeconds": 5, "code": `await api.invoke("petstore.getPetById", {parameters: {petId: 1}});
while (true) {}`}
		res, err := c.CallTool(t.Context(), req)
		if err != nil || len(res.Content) == 0 {
			looped <- toolAnswer{text: "no answer"}
			return
		}
		text := res.Content[0].(mcp.TextContent).Text
		var m map[string]any
		_ = json.Unmarshal([]byte(text), &m)
		looped <- toolAnswer{text: text, m: m, isErr: res.IsError}
	}()
	<-arrived // the run made its call; it spins now
	callText(t, c, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 2}}).ok(t)
	<-arrived
	callText(t, c, "search", map[string]any{"query": "find pets by status"}).ok(t)
	select {
	case a := <-looped:
		t.Fatalf("the loop ended before the other calls were answered: %.300s", a.text)
	default:
	}
	a := <-looped
	e := a.code(t, codes.Timeout)
	if calls, _ := e["calls"].(map[string]any); calls["total"] != float64(1) {
		t.Errorf("calls %v, want the one call the run made", e["calls"])
	}
}

// TestRunScriptScopesPerCall: with scripts.allow_writes on and HTTP scopes,
// a reader's script may GET but its POST throws auth_error naming the
// invoke scope and is not sent; an invoker's script sends both.
func TestRunScriptScopesPerCall(t *testing.T) {
	f := newHTTPFixtureOn(t, serve.Options{
		Tokens: map[string]Principal{
			"reader":  {Subject: "rita", Scopes: []string{"specgate:read"}},
			"invoker": {Subject: "ivan", Scopes: []string{"specgate:invoke"}},
		},
		Resource: "https://mcp.example.com/mcp",
		Scopes:   testScopes,
	}, 0, nil, func(o *Options) { o.Scripts.AllowWrites = true })
	code := `const out = [];
for (const [id, args] of [["petstore.getPetById", {parameters: {petId: 1}}], ["petstore.addPet", {requestBody: {name: "rex", photoUrls: []}}]]) {
  try { out.push((await api.invoke(id, args)).statusCode); } catch (e) { out.push(e.code + ": " + e.message); }
}
return out;`
	for _, tt := range []struct {
		token, want string
		sent        int
	}{
		{"reader", `[200,"auth_error: this call needs the scope specgate:invoke"]`, 1},
		{"invoker", `[200,200]`, 2},
	} {
		t.Run(tt.token, func(t *testing.T) {
			before := f.upstream.count()
			resp, body := f.post(t, tt.token, toolsCall(1, "run_script", map[string]any{"code": code}))
			expectStatus(t, resp, body, http.StatusOK)
			res, _ := rpcResult(t, body)["result"].(map[string]any)
			sc, _ := res["structuredContent"].(map[string]any)
			if got := string(mustJSON(sc["result"])); got != tt.want {
				t.Errorf("result %s, want %s", got, tt.want)
			}
			if got := f.upstream.count() - before; got != tt.sent {
				t.Errorf("upstream saw %d requests, want %d", got, tt.sent)
			}
		})
	}
}

// TestRunScriptBoundsItsInputAndLogs: 10 MB of code is refused with
// validation_failed naming the bound, before any of it runs; a script
// logging 1 MB lines gets back at most 4 KiB of logs, marked cut.
func TestRunScriptBoundsItsInputAndLogs(t *testing.T) {
	f := newPagingFixture(t, pagingOptions{})
	e := callText(t, f.client, "run_script", map[string]any{"code": strings.Repeat("1;\n", 10<<20/3)}).code(t, codes.ValidationFailed)
	if msg, _ := e["message"].(string); !strings.Contains(msg, "a script may be at most 1048576") {
		t.Errorf("message %q, want the code's bound", msg)
	}
	a := callText(t, f.client, "run_script", map[string]any{"code": `const line = "z".repeat(1 << 20);
for (let i = 0; i < 20; i++) console.log(line, i);
return "done";`}).ok(t)
	logs, _ := a.m["logs"].([]any)
	total := 0
	for _, l := range logs {
		total += len(l.(string))
	}
	if total == 0 || total > 4<<10 || a.m["logsCut"] != true || a.m["result"] != "done" {
		t.Errorf("%d bytes of logs in %d lines, logsCut %v, result %v: want at most 4 KiB, cut, and the result", total, len(logs), a.m["logsCut"], a.m["result"])
	}
	if len(a.text) > 8<<10 {
		t.Errorf("the answer is %d bytes", len(a.text))
	}
}
