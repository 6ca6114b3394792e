package mcpserver

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/invoke"
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
	s, err := spec.Parse(t.Context(), "limited.yaml", []byte(`openapi: 3.0.3
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
	srv := New(Options{Caller: invoke.Caller{Governed: invoke.Governed{Limiter: l}}})
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

// A 1 MB task made a 3 MB prompt, and a 1 MB unknown spec name came back
// whole in a -32603. Arguments are now clipped, and an unknown name is
// invalid params with a short message.
func TestPromptArgumentsBounded(t *testing.T) {
	f := newFixture(t, time.Second)
	huge := strings.Repeat("é", 1<<19) // 1 MiB, two bytes a rune

	for _, args := range []map[string]string{{"task": huge}, {"task": huge, "taskId": huge}} {
		text, err := getPrompt(t, f.client, "review_task", args)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("review_task with %d argument bytes: a %d-byte prompt", len(args["task"])+len(args["taskId"]), len(text))
		if len(text) > 8<<10 {
			t.Errorf("review_task with a 1 MiB argument is %d bytes", len(text))
		}
		if !strings.Contains(text, "more bytes clipped]") || !strings.Contains(text, strings.Repeat("é", 100)) {
			t.Errorf("review_task does not show the clipped argument with its marker:\n%.600s", text)
		}
		if !utf8.ValidString(text) {
			t.Error("clipping split a rune")
		}
	}

	for _, tt := range []struct {
		prompt string
		args   map[string]string
		want   string
	}{
		{"setup_limits", map[string]string{"spec": huge}, "loaded: petstore"},
		{"setup_limits", map[string]string{"spec": "nosuch"}, `no spec "nosuch"`},
		{"setup_limits", nil, "the argument spec is required"},
		{"diagnose_429", map[string]string{"endpointId": huge}, "no endpoint"},
	} {
		_, err := getPrompt(t, f.client, tt.prompt, tt.args)
		if err == nil {
			t.Fatalf("%s %.40v: no error", tt.prompt, tt.args)
		}
		if !errors.Is(err, mcp.ErrInvalidParams) {
			t.Errorf("%s: %v, want invalid params (-32602)", tt.prompt, err)
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %.300v, want %q", tt.prompt, err, tt.want)
		}
		t.Logf("%s: a %d-byte error", tt.prompt, len(err.Error()))
		if len(err.Error()) > 300 {
			t.Errorf("%s: a %d-byte error echoes the argument", tt.prompt, len(err.Error()))
		}
	}
}

// The setup_limits prompt was 170 KB on GitHub: it embedded each of 1,223
// endpoints' status (issue 33 item 6). Prompts carry the upstream summary
// and the few endpoints cooling down: each is under 4 KB.
func TestPromptsFitOnGitHub(t *testing.T) {
	if testing.Short() {
		t.Skip("loads github-full")
	}
	const file = "../../../shared/specs/github-full.json"
	if _, err := os.Stat(file); err != nil {
		t.Skipf("shared specs absent: %v", err)
	}
	s, err := spec.Load(t.Context(), file, spec.Options{Name: "github"})
	if err != nil {
		t.Fatal(err)
	}
	cat, ix, eps := servedCatalog(t, 10*time.Second, s)
	l, err := ratelimit.New(ratelimit.Options{Endpoints: eps, Budgets: []ratelimit.Budget{{Match: "api.github.com", Requests: 30, Window: time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	// a few endpoints cooling down, as after some calls
	for _, e := range cat.Endpoints()[:8] {
		tk, err := l.AdmitAt(ratelimit.Request{Endpoint: e.ID}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		tk.Release()
	}
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	srv := New(Options{SpecNames: []string{"github"}, Caller: invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}}})
	srv.Publish(cat, ix, nil)
	c := connectTB(t, srv, nil)
	for _, tt := range []struct {
		name string
		args map[string]string
		want string
	}{
		{"setup_limits", map[string]string{"spec": "github"}, `"coolingDown"`},
		{"diagnose_429", nil, `"upstreams"`},
		{"diagnose_429", map[string]string{"endpointId": cat.Endpoints()[0].ID}, cat.Endpoints()[0].ID},
		{"review_task", map[string]string{"task": "star repos"}, "begin_task"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text, err := getPrompt(t, c, tt.name, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if len(text) >= 4096 || !strings.Contains(text, tt.want) {
				t.Errorf("%d bytes, want under 4096 with %q:\n%.3000s", len(text), tt.want, text)
			}
		})
	}
}
