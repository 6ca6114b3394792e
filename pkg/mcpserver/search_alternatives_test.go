package mcpserver

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
)

func TestSearchAlternatives(t *testing.T) {
	f := newFixture(t, time.Hour)
	t.Run("an alternative finds what the query misses", func(t *testing.T) {
		res, isErr := f.call(t, "search", map[string]any{"query": "bin the critter", "alternatives": []any{"delete a pet", "remove an animal"}, "limit": 3})
		if isErr {
			t.Fatalf("search failed: %v", res)
		}
		hits := res["endpoints"].([]any)
		if len(hits) == 0 || hits[0].(map[string]any)["id"] != "petstore.deletePet" {
			t.Errorf("endpoints = %v, want petstore.deletePet first", hits)
		}
	})
	for _, c := range []struct {
		name string
		alts any
		want string
	}{
		{"four alternatives", []any{"a pet", "pets", "an animal", "a dog"}, "at most 3"},
		{"an empty one", []any{"delete a pet", "  "}, "alternatives[1] is empty"},
		{"a long one", []any{strings.Repeat("pet ", 100)}, "alternatives[0] is 400 bytes, at most 300"},
		{"not strings", []any{7}, "alternatives"},
		{"not an array", "delete a pet", "alternatives"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, isErr := f.call(t, "search", map[string]any{"query": "pets", "alternatives": c.alts})
			if !isErr {
				t.Fatalf("search succeeded: %v", res)
			}
			e := errorOf(t, res)
			if e["code"] != codes.ValidationFailed || !strings.Contains(e["message"].(string), c.want) {
				t.Errorf("error = %v, want validation_failed naming %q", e, c.want)
			}
		})
	}
}

// TestSearchAlternativesAnswerFits: 20 hits fused from four phrasings on
// GitHub (long ids and paths) stay within 4 KB, as one phrasing's do.
func TestSearchAlternativesAnswerFits(t *testing.T) {
	if testing.Short() {
		t.Skip("loads github-full")
	}
	const file = "../../../shared/specs/github-full.json"
	if _, err := os.Stat(file); err != nil {
		t.Skipf("shared specs absent: %v", err)
	}
	s, err := spec.Load(t.Context(), file, spec.Options{Name: "github-full"})
	if err != nil {
		t.Fatal(err)
	}
	cat, ix, eps := servedCatalog(t, 0, s)
	l, err := ratelimit.New(ratelimit.Options{Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	srv := New(Options{SpecNames: []string{"github-full"}, Caller: invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}}})
	srv.Publish(cat, ix, nil)
	c := connectTB(t, srv, nil)
	for _, args := range []map[string]any{
		{"query": "people who starred a repository", "limit": 20},
		{"query": "people who starred a repository", "limit": 20,
			"alternatives": []any{"stargazers of a repo", "who bookmarked the project", "list users that like the repository"}},
		{"query": "set the secret for a workflow", "limit": 20,
			"alternatives": []any{"create or update an actions secret for an environment", "store a credential for ci", "organization secret"}},
	} {
		req := mcp.CallToolRequest{}
		req.Params.Name = "search"
		req.Params.Arguments = args
		res, err := c.CallTool(t.Context(), req)
		if err != nil || res.IsError {
			t.Fatalf("search %v: %v %v", args, err, res)
		}
		text := res.Content[0].(mcp.TextContent).Text
		if n := strings.Count(text, `"id":`); n != 20 {
			t.Errorf("search %v: %d hits, want 20", args["query"], n)
		}
		if len(text) > 4096 {
			t.Errorf("search %v: answer is %d bytes, want ≤ 4096", args, len(text))
		}
		t.Logf("%d bytes for %v", len(text), args)
	}
}
