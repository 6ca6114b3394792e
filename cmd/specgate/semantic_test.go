package main

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/specgate/specgate/internal/embedtest"
)

// TestSemanticSearchEndToEnd serves with search.embeddings pointed at the
// stand-in embeddings server, through the built binary and mcp-go's
// client: search ranks by meaning, rate_limit_status says so, only spec
// text and queries reach the embeddings endpoint (never an API
// credential), and with the endpoint gone search still answers,
// lexically, and says why.
func TestSemanticSearchEndToEnd(t *testing.T) {
	bin := specgateBinary(t)
	emb, err := embedtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	const apiKey, embKey = "PETSTORE-KEY-a1b2c3", "EMBED-KEY-z9y8x7"
	cfg := writeConfig(t, `search:
  embeddings:
    url: `+emb.URL+`
    model: stand-in
    api_key: ${EMB_KEY}
specs:
  - name: petstore
    location: `+petstorePath(t)+`
    base_url: http://127.0.0.1:9/api/v3
    auth:
      api_key: {value: "${PET_KEY}"}
`)
	c, _ := stdioClient(t, bin, []string{"XDG_CACHE_HOME=" + t.TempDir(), "PET_KEY=" + apiKey, "EMB_KEY=" + embKey},
		"serve", "--config", cfg)
	call := func(name string, args map[string]any) map[string]any { return mustCall(t, c, name, args) }
	first := func(res map[string]any) string {
		eps := res["endpoints"].([]any)
		if len(eps) == 0 {
			return ""
		}
		return eps[0].(map[string]any)["id"].(string)
	}
	// Lexically getUserByName comes first; the stand-in relates purchase
	// to order.
	if got := first(call("search", map[string]any{"query": "look at a purchase record"})); got != "petstore.getOrderById" {
		t.Errorf("hybrid search: first %s; status %v", got, call("rate_limit_status", map[string]any{})["semanticSearch"])
	}
	st := call("rate_limit_status", map[string]any{})["semanticSearch"].(map[string]any)
	if st["on"] != true || st["model"] != "stand-in" || st["endpoints"] != float64(19) {
		t.Errorf("semanticSearch = %v", st)
	}
	for _, in := range emb.Texts() {
		if strings.Contains(in, apiKey) || strings.Contains(in, embKey) {
			t.Fatalf("a credential went to the embeddings endpoint: %q", in)
		}
	}
	for _, a := range emb.Authorizations() {
		if a != "Bearer "+embKey {
			t.Fatalf("embeddings Authorization %q", a)
		}
	}
	emb.Close()
	if got := first(call("search", map[string]any{"query": "find pets by status"})); got != "petstore.findPetsByStatus" {
		t.Errorf("lexical search with the endpoint gone: first %s", got)
	}
	st = call("rate_limit_status", map[string]any{})["semanticSearch"].(map[string]any)
	if st["on"] != false || !strings.Contains(st["reason"].(string), "failed a query") {
		t.Errorf("semanticSearch after the endpoint went = %v", st)
	}
	if strings.Contains(mustString(st), embKey) {
		t.Fatal("the status shows the key")
	}
}

func mustString(v any) string { return string(mustJSON(v)) }

// mustCall is callJSON for a call that must succeed.
func mustCall(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	out, isErr := callJSON(t, c, name, args)
	if isErr {
		t.Fatalf("%s: %v", name, out)
	}
	return out
}

// The embeddings endpoint is an upstream like any other: a budget written
// for its host holds for its requests.
func TestEmbeddingsEndpointIsGoverned(t *testing.T) {
	bin := specgateBinary(t)
	emb, err := embedtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	host := strings.TrimSuffix(strings.TrimPrefix(emb.URL, "http://"), "/v1/embeddings")
	cfg := writeConfig(t, `search:
  embeddings: {url: `+emb.URL+`, model: stand-in}
upstreams:
  - match: "`+host+`"
    requests_per_window: 1
    window: 1h
    on_limit: reject
specs:
  - name: petstore
    location: `+petstorePath(t)+`
    base_url: http://127.0.0.1:9/api/v3
`)
	c, _ := stdioClient(t, bin, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "serve", "--config", cfg)
	call := func(name string, args map[string]any) map[string]any { return mustCall(t, c, name, args) }
	// The 19 endpoints take the one request of the budget; the query's
	// embedding is refused by specgate and search answers lexically.
	res := call("search", map[string]any{"query": "find pets by status"})
	if eps := res["endpoints"].([]any); len(eps) == 0 || eps[0].(map[string]any)["id"] != "petstore.findPetsByStatus" {
		t.Fatalf("search = %v", res)
	}
	if n := emb.Requests.Load(); n != 1 {
		t.Fatalf("the embeddings endpoint got %d requests, budget 1", n)
	}
	st := call("rate_limit_status", map[string]any{})
	sem := st["semanticSearch"].(map[string]any)
	if sem["on"] != false || !strings.Contains(sem["reason"].(string), "rate limited") {
		t.Fatalf("semanticSearch = %v", sem)
	}
}

func TestCheckReportsSemanticSearch(t *testing.T) {
	emb, err := embedtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	cfg := writeConfig(t, `search:
  embeddings: {url: `+emb.URL+`, model: stand-in}
specs:
  - name: petstore
    location: `+petstorePath(t)+`
`)
	code, out, errs := runCmd(t, "check", "--config", cfg, "--no-cache", "--validate=false")
	if code != 0 || !strings.Contains(out, "ok   semantic search: model stand-in, 19 endpoint vectors of 384 dimensions (0 from the cache)") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	emb.SetMode(embedtest.Fail)
	code, out, errs = runCmd(t, "check", "--config", cfg, "--no-cache", "--validate=false")
	if code != 0 || !strings.Contains(out, "warning: semantic search is off (search answers lexically): the embeddings endpoint answered HTTP 500") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}
