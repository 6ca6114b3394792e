package mcpserver

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
)

func getPrompt(t *testing.T, c *client.Client, name string, args map[string]string) (string, error) {
	t.Helper()
	req := mcp.GetPromptRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.GetPrompt(t.Context(), req)
	if err != nil {
		return "", err
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != mcp.RoleUser {
		t.Fatalf("%s: messages = %+v", name, res.Messages)
	}
	return res.Messages[0].Content.(mcp.TextContent).Text, nil
}

func TestPromptsListed(t *testing.T) {
	f := newFixture(t, time.Second)
	res, err := f.client.ListPrompts(t.Context(), mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	args := map[string][]string{}
	for _, p := range res.Prompts {
		if p.Description == "" {
			t.Errorf("%s has no description", p.Name)
		}
		for _, a := range p.Arguments {
			name := a.Name
			if a.Required {
				name += "!"
			}
			args[p.Name] = append(args[p.Name], name)
		}
	}
	want := map[string][]string{
		"setup_limits": {"spec!"},
		"diagnose_429": {"endpointId"},
		"review_task":  {"task", "taskId"},
	}
	for name, w := range want {
		if got := args[name]; !slices.Equal(got, w) {
			t.Errorf("%s arguments = %v, want %v", name, got, w)
		}
	}
	if len(res.Prompts) != len(want) {
		t.Errorf("%d prompts listed", len(res.Prompts))
	}
}

func TestPromptSetupLimits(t *testing.T) {
	f := newFixture(t, time.Second)
	text, err := getPrompt(t, f.client, "setup_limits", map[string]string{"spec": "petstore"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"petstore" (Swagger Petstore`, "19 endpoints served", "states no rate limit",
		`"upstreams"`, // the rate_limit_status JSON itself
		"Never invent a quota",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("setup_limits lacks %q:\n%s", want, text)
		}
	}
	if _, err := getPrompt(t, f.client, "setup_limits", map[string]string{"spec": "nosuch"}); err == nil || !strings.Contains(err.Error(), "petstore") {
		t.Errorf("unknown spec: err = %v, want one naming the loaded specs", err)
	}
	if _, err := getPrompt(t, f.client, "setup_limits", nil); err == nil {
		t.Error("setup_limits without spec succeeded")
	}
}

func TestPromptSetupLimitsQuotesTheSpec(t *testing.T) {
	s, err := spec.Parse(context.Background(), "limited.yaml", []byte(`openapi: 3.0.3
info: {title: Limited, version: "1", description: "A small API. Clients may send 100 requests per minute."}
servers: [{url: "https://api.limited.example"}]
paths:
  /things: {get: {operationId: listThings, responses: {"200": {description: ok}}}}
`), spec.Options{Name: "limited"})
	if err != nil {
		t.Fatal(err)
	}
	cat, ix, eps := servedCatalog(t, time.Second, s)
	l, err := ratelimit.New(ratelimit.Options{Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Limiter: l})
	srv.Publish(cat, ix, nil)
	text, err := getPrompt(t, connectTB(t, srv, nil), "setup_limits", map[string]string{"spec": "limited"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 endpoints served", "100 requests per 1m0s", `"100 requests per minute"`, "api.limited.example:443"} {
		if !strings.Contains(text, want) {
			t.Errorf("setup_limits lacks %q:\n%s", want, text)
		}
	}
}

func TestPromptDiagnose429(t *testing.T) {
	f := newFixture(t, time.Hour)
	args := map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}}
	if res, isErr := f.call(t, "invoke", args); isErr {
		t.Fatalf("first call: %v", res)
	}
	if res, isErr := f.call(t, "invoke", args); !isErr || errorOf(t, res)["scope"] != "proxy" {
		t.Fatalf("second call was not refused by the cooldown: %v", res)
	}
	text, err := getPrompt(t, f.client, "diagnose_429", map[string]string{"endpointId": "petstore.getPetById"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Calls to petstore.getPetById", `"id":"petstore.getPetById"`, `"cooldown":"1h0m0s"`, `"refusedByScope":{"proxy":1}`,
		`scope "proxy"`, `scope "upstream"`, "Never invent a quota",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("diagnose_429 lacks %q:\n%s", want, text)
		}
	}
	all, err := getPrompt(t, f.client, "diagnose_429", nil)
	if err != nil || !strings.Contains(all, `"upstreams"`) {
		t.Errorf("diagnose_429 without endpointId: %v\n%s", err, all)
	}
	if _, err := getPrompt(t, f.client, "diagnose_429", map[string]string{"endpointId": "petstore.nosuch"}); err == nil {
		t.Error("an unknown endpoint gave a prompt")
	}
}

func TestPromptReviewTask(t *testing.T) {
	f := newFixture(t, time.Second)
	plan, err := getPrompt(t, f.client, "review_task", map[string]string{"task": "sync every pet"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sync every pet", "19 endpoints from petstore", "begin_task", "end_task", "concurrency"} {
		if !strings.Contains(plan, want) {
			t.Errorf("review_task (plan) lacks %q:\n%s", want, plan)
		}
	}
	review, err := getPrompt(t, f.client, "review_task", map[string]string{"taskId": "t-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(review, "Review the long task t-1") || !strings.Contains(review, "Call end_task with this taskId") {
		t.Errorf("review_task (review):\n%s", review)
	}
}
