package mcpserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/serve"
)

// TestRunScriptPerPrincipal: scripts.per_principal (2) bounds the runs at
// once of one principal, over streamable HTTP with a token per principal.
// ada's two runs and bob's one hold their calls at the upstream; a third
// run of ada's is refused with rate_limit naming scripts.per_principal and
// sends nothing, while bob's still runs; once hers end, ada runs again.
// The upstream's arrivals and a gate it waits on synchronise the test.
func TestRunScriptPerPrincipal(t *testing.T) {
	arrived := make(chan string, 8)
	gate := make(chan struct{})
	var requests atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		arrived <- r.URL.Path
		<-gate
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":1,"name":"rex","photoUrls":[]}`))
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() {
		select {
		case <-gate:
		default:
			close(gate) // a failed test must not leave the upstream holding
		}
	})
	cat, ix, eps := servedCatalog(t, 0, petstoreAt(t, up.URL))
	l, err := ratelimit.New(ratelimit.Options{Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	srv := New(Options{SpecNames: []string{"petstore"}, Scripts: ScriptOptions{PerPrincipal: 2}, Caller: invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}}})
	srv.Publish(cat, ix, nil)
	ts := httptest.NewServer(serve.NewHandler(srv, serve.Options{Tokens: map[string]Principal{
		"mcp-token-ada": {Subject: "ada", Org: "acme"},
		"mcp-token-bob": {Subject: "bob", Org: "acme"},
	}}))
	t.Cleanup(ts.Close)
	connect := func(token string) *client.Client {
		c, err := client.NewStreamableHttpClient(ts.URL+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		initClient(t, c)
		return c
	}
	ada, bob := connect("mcp-token-ada"), connect("mcp-token-bob")

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	run := func(c *client.Client, petID string) <-chan outcome {
		out := make(chan outcome, 1)
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "run_script"
			req.Params.Arguments = map[string]any{"code": `return (await api.invoke("petstore.getPetById", {parameters: {petId: ` + petID + `}})).body.name;`}
			res, err := c.CallTool(t.Context(), req)
			out <- outcome{res, err}
		}()
		return out
	}
	text := func(r *mcp.CallToolResult) string { return r.Content[0].(mcp.TextContent).Text }
	// waitArrival waits for run's call at the upstream; a run that answers
	// instead (refused) fails the test.
	waitArrival := func(want string, run <-chan outcome) {
		t.Helper()
		select {
		case got := <-arrived:
			if got != want {
				t.Fatalf("upstream got %s, want %s", got, want)
			}
		case o := <-run:
			if o.err != nil {
				t.Fatal(o.err)
			}
			t.Fatalf("the run answered before its call reached the upstream: %s", text(o.res))
		}
	}

	// Each run is inside its call, at the upstream, before the next starts.
	a1 := run(ada, "1")
	waitArrival("/api/v3/pet/1", a1)
	a2 := run(ada, "2")
	waitArrival("/api/v3/pet/2", a2)
	b1 := run(bob, "3")
	waitArrival("/api/v3/pet/3", b1)

	var third outcome
	select {
	case third = <-run(ada, "4"):
	case got := <-arrived:
		t.Fatalf("ada's third run was not refused: its call reached the upstream (%s)", got)
	}
	if third.err != nil {
		t.Fatal(third.err)
	}
	var refused struct {
		Error ErrorObject `json:"error"`
	}
	if err := json.Unmarshal([]byte(text(third.res)), &refused); err != nil || !third.res.IsError {
		t.Fatalf("ada's third run: %s, want an error", text(third.res))
	}
	e := refused.Error
	if e.Code != codes.RateLimit || e.Scope != "proxy" || !e.Retryable || e.Limit == nil || e.Limit.Key != "scripts.per_principal" || e.Limit.Limit != 2 ||
		!strings.Contains(e.Message, "scripts.per_principal") {
		t.Errorf("ada's third run: %s, want rate_limit naming scripts.per_principal (2)", text(third.res))
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("upstream saw %d requests, want 3: the refused run sent nothing", n)
	}

	close(gate)
	for name, ch := range map[string]<-chan outcome{"ada's first": a1, "ada's second": a2, "bob's": b1} {
		o := <-ch
		if o.err != nil || o.res.IsError || !strings.Contains(text(o.res), `"result":"rex"`) {
			t.Errorf("%s run: %v %v", name, o.err, o.res)
		}
	}
	// Her runs ended (their slots are given back before they answer): she
	// runs again.
	again := <-run(ada, "5")
	if again.err != nil || again.res.IsError || !strings.Contains(text(again.res), `"result":"rex"`) {
		t.Fatalf("ada's run after hers ended: %v %v", again.err, again.res)
	}
	if got := <-arrived; got != "/api/v3/pet/5" {
		t.Errorf("upstream got %s, want /api/v3/pet/5", got)
	}
}
