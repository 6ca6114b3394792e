package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// maxPromptArg bounds the bytes of an argument a prompt repeats: a 1 MB
// task made a 3 MB prompt, and a 1 MB unknown spec name came back whole in
// the error.
const maxPromptArg = 300

// clipArg cuts s to maxPromptArg bytes at a rune boundary, with a marker
// saying how much was left out.
func clipArg(s string) string { return clipTo(s, maxPromptArg) }

// clipTo is clipArg to n bytes; an error names what it refuses in fewer.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…[%d more bytes clipped]", s[:cut], len(s)-cut)
}

// promptArg is the named argument of req, trimmed and clipped.
func promptArg(req mcp.GetPromptRequest, name string) string {
	return clipArg(strings.TrimSpace(req.Params.Arguments[name]))
}

// promptHooks refuses a prompt request whose arguments name nothing
// specgate serves as JSON-RPC invalid params (-32602), which is what it is.
// mcp-go answers every error a prompt handler returns as an internal error
// (-32603), and answers invalid params only for a prompt it does not know;
// so the hook, which runs before mcp-go looks the prompt up, renames the
// request to a name no prompt has, carrying the short reason:
// "prompt 'setup_limits (no spec "x"; loaded: petstore)' not found".
func (s *Server) promptHooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddBeforeGetPrompt(func(ctx context.Context, _ any, req *mcp.GetPromptRequest) {
		if why := s.promptProblem(ctx, *req); why != "" {
			req.Params.Name = fmt.Sprintf("%.40s (%s)", req.Params.Name, why)
		}
	})
	return h
}

// promptProblem is why req's arguments cannot make its prompt, or "".
func (s *Server) promptProblem(ctx context.Context, req mcp.GetPromptRequest) string {
	switch req.Params.Name {
	case "setup_limits":
		name := promptArg(req, "spec")
		if name == "" {
			return "the argument spec is required"
		}
		st, err := s.wait(ctx)
		if err != nil {
			return "" // the handler answers the load error
		}
		if _, ok := st.cat.Spec(name); !ok {
			return fmt.Sprintf("no spec %q; loaded: %s", clipTo(name, 64), clipArg(strings.Join(st.cat.SpecNames(), ", ")))
		}
	case "diagnose_429":
		id := promptArg(req, "endpointId")
		if id == "" {
			return ""
		}
		st, err := s.wait(ctx)
		if err != nil {
			return ""
		}
		if _, ok := st.cat.Lookup(id); !ok {
			if _, excl := st.cat.Excluded(id); excl {
				return fmt.Sprintf("endpoint %q is excluded by the config", clipTo(id, 64))
			}
			return fmt.Sprintf("no endpoint %q: use search to find endpoint ids", clipTo(id, 64))
		}
	}
	return ""
}

// The prompts carry the operator's flows in plain language. Each embeds
// what specgate knows right now (counts, stated limits, the very JSON
// rate_limit_status would answer) so the model starts from facts, and tells
// it which tools to call next. A prompt never states a quota that neither
// the spec, the config nor the upstream's headers gave.
func (s *Server) registerPrompts() {
	s.mcp.AddPrompt(mcp.NewPrompt("setup_limits",
		mcp.WithPromptDescription("Propose rate-limit config for one API: reads the limits its spec states and what rate_limit_status shows, then suggests upstreams/cooldown settings."),
		mcp.WithArgument("spec", mcp.RequiredArgument(), mcp.ArgumentDescription("The spec (API) name, as in endpoint ids before the dot")),
	), s.promptSetupLimits)
	s.mcp.AddPrompt(mcp.NewPrompt("diagnose_429",
		mcp.WithPromptDescription("Explain why calls are still refused with rate limits: tells specgate's own limits (scope proxy) from the API's (scope upstream), from rate_limit_status."),
		mcp.WithArgument("endpointId", mcp.ArgumentDescription("The endpoint that was refused (optional: all endpoints otherwise)")),
	), s.promptDiagnose429)
	s.mcp.AddPrompt(mcp.NewPrompt("review_task",
		mcp.WithPromptDescription("Plan or review a long task of many calls with begin_task/end_task: how long it took, what refused it, and how much concurrency it can take."),
		mcp.WithArgument("task", mcp.ArgumentDescription("What the task does, in a few words (optional)")),
		mcp.WithArgument("taskId", mcp.ArgumentDescription("A taskId from begin_task to review now (optional: plan a new task otherwise)")),
	), s.promptReviewTask)
}

// promptResult is one user message holding text.
func promptResult(description, text string) *mcp.GetPromptResult {
	return mcp.NewGetPromptResult(description, []mcp.PromptMessage{
		mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(text)),
	})
}

// statusJSON answers rate_limit_status with args through its own handler, so
// a prompt shows exactly what the tool would.
func (s *Server) statusJSON(ctx context.Context, args map[string]any) (string, bool) {
	req := mcp.CallToolRequest{}
	req.Params.Name = "rate_limit_status"
	req.Params.Arguments = args
	var a StatusArgs
	if bad := decodeArgs(req.Params.Name, rawArguments(req), &a); bad != nil {
		return "", false
	}
	res, err := s.handleStatus(ctx, req, &a)
	if err != nil || res == nil {
		return "", false
	}
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			return tc.Text, !res.IsError
		}
	}
	return "", false
}

// promptEndpoints bounds the endpoints a prompt's status shows.
const promptEndpoints = 5

// statusSummary cuts a rate_limit_status answer to what a prompt needs: the
// upstreams and the store, and the few endpoints cooling down or refused. A prompt
// embedded every endpoint's line: 170 KB for GitHub's 1,223 endpoints,
// more than a model should read to propose one budget.
func statusSummary(status string) string {
	var st StatusResult
	if json.Unmarshal([]byte(status), &st) != nil {
		return "(unreadable: call rate_limit_status)"
	}
	var cooling []EndpointStatus
	for _, e := range st.Endpoints {
		if !e.Ready || e.Refused > 0 {
			cooling = append(cooling, e)
		}
	}
	more := len(cooling) - promptEndpoints
	if more > 0 {
		cooling = cooling[:promptEndpoints]
	}
	out := struct {
		At        string           `json:"at"`
		Store     *StoreStatus     `json:"store,omitempty"`
		Upstreams []UpstreamStatus `json:"upstreams"`
		Cooling   []EndpointStatus `json:"coolingDown,omitempty"`
		More      int              `json:"moreCoolingDown,omitempty"`
	}{st.At, st.Store, st.Upstreams, cooling, max(more, 0)}
	data, err := json.Marshal(out)
	if err != nil {
		return "(unreadable: call rate_limit_status)"
	}
	return string(data)
}

func (s *Server) promptSetupLimits(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name := promptArg(req, "spec")
	if name == "" {
		return nil, fmt.Errorf("setup_limits needs the argument spec")
	}
	st, err := s.wait(ctx)
	if err != nil {
		return nil, err
	}
	sp, ok := st.cat.Spec(name)
	if !ok {
		return nil, fmt.Errorf("no spec %q; loaded: %s", name, clipArg(strings.Join(st.cat.SpecNames(), ", ")))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Help me set up rate limits for the API %q (%s) that specgate serves.\n\n", sp.Name, orUnknown(sp.Title))
	fmt.Fprintf(&b, "What specgate knows now:\n- %d endpoints served", len(sp.Endpoints))
	if n := len(sp.Excluded); n > 0 {
		fmt.Fprintf(&b, " (%d more excluded by the config)", n)
	}
	fmt.Fprintf(&b, "; base URL %s.\n", orUnknown(sp.BaseURL))
	ups := map[string]bool{}
	var upList []string
	for _, e := range sp.Endpoints {
		if u := s.upstreamOf(e); !ups[u] {
			ups[u] = true
			upList = append(upList, u)
		}
	}
	if len(upList) > 0 {
		fmt.Fprintf(&b, "- Its calls count against the upstream %s (the `match` of an `upstreams:` budget).\n", strings.Join(upList, ", "))
	}
	if l := sp.StatedLimit; l != nil {
		fmt.Fprintf(&b, "- The spec states a limit: %s (read from %s: %q).\n", l, l.Source, l.Text)
	} else {
		b.WriteString("- The spec states no rate limit (no x-ratelimit-* extension, no limit in its description).\n")
	}
	if status, ok := s.statusJSON(ctx, map[string]any{"spec": sp.Name}); ok {
		fmt.Fprintf(&b, "- rate_limit_status for this spec right now (its upstreams; endpoints only while cooling down or refused):\n%s\n", statusSummary(status))
	}
	b.WriteString(`
Please:
1. Read the facts above. In the status, "limits" are budgets configured in specgate, "learned" are limits the upstream advertised in its headers (X-RateLimit-*, RateLimit, Retry-After), and refusals are split by scope (proxy: specgate's own, upstream: the API's).
2. Propose a YAML snippet for specgate's config: an ` + "`upstreams:`" + ` entry (match, requests_per_window, window, on_limit: wait, max_concurrent if the API limits concurrency) and, if useful, the spec's rate_limit_interval (the per-endpoint cooldown, default 10s).
3. Use only numbers that come from the spec, the status above, or the API's documentation that I give you. Never invent a quota: if none is known, say so, propose a clearly labelled conservative starting point (for example 60 requests per 1m with on_limit: wait), and tell me where to confirm the real limit.
4. Say what each setting protects against, and how to check it later with rate_limit_status.
`)
	return promptResult("Rate-limit setup for "+sp.Name, b.String()), nil
}

func (s *Server) promptDiagnose429(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	id := promptArg(req, "endpointId")
	st, err := s.wait(ctx)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	args := map[string]any{}
	if id != "" {
		if _, ok := st.cat.Lookup(id); !ok {
			if why, excl := st.cat.Excluded(id); excl {
				return nil, fmt.Errorf("endpoint %q is excluded by the config (%s)", id, why)
			}
			return nil, fmt.Errorf("no endpoint %q: use search to find endpoint ids", id)
		}
		args["endpointId"] = id
		fmt.Fprintf(&b, "Calls to %s keep being refused with a rate limit. Find out why.\n\n", id)
	} else {
		b.WriteString("Calls keep being refused with rate limits. Find out why.\n\n")
	}
	if status, ok := s.statusJSON(ctx, args); ok {
		fmt.Fprintf(&b, "rate_limit_status right now (upstreams; endpoints only while cooling down or refused):\n%s\n", statusSummary(status))
	} else {
		b.WriteString("rate_limit_status is not available right now; call it yourself.\n")
	}
	b.WriteString(`
How to read it:
- A refusal with scope "proxy" (codes rate_limit, queue_full, queue_timeout) is specgate's own limit: the per-endpoint cooldown ("cooldown", retryAfterSeconds) or a configured budget ("limits"). Waiting retryAfterSeconds always works; raising the limit is an operator's config change.
- A refusal with scope "upstream" (code upstream_rate_limit, "upstream429s", "learned") is the API's own limit, as its 429s and rate headers said. Raising specgate's limits does not help: wait until the learned reset, spread the work, or ask the API's owner for more quota.
- "refusedByScope" and "refusedByCode" count both kinds; "learned" names the header each learned limit came from.

Please:
1. Say which scope is refusing the calls, quoting the fields above that show it.
2. Say how long to wait before the next call, from retryAfterSeconds or nextAllowedInSeconds.
3. Suggest what to change (pacing, concurrency, cache_ttl, an upstreams budget, or nothing).
4. Never invent a quota or a reset time: use only numbers shown here or in later rate_limit_status answers. If the data does not explain the 429s, say so and suggest calling rate_limit_status again right after the next refusal.
`)
	return promptResult("Diagnose rate-limit refusals", b.String()), nil
}

func (s *Server) promptReviewTask(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	task := promptArg(req, "task")
	taskID := promptArg(req, "taskId")
	var b strings.Builder
	if taskID != "" {
		fmt.Fprintf(&b, "Review the long task %s", taskID)
		if task != "" {
			fmt.Fprintf(&b, " (%s)", task)
		}
		b.WriteString(`.

Please:
1. Call end_task with this taskId and the concurrency you would like to use next time (concurrency: 1 if unsure).
2. From its review, report: wall time against upstream time, calls made, refusals by scope (proxy: specgate's limits; upstream: the API's) and by code, time spent queued, and the serial estimate.
3. Read the round at which the given concurrency would hit each configured limit, and recommend a concurrency that stays under all of them.
4. Use only the numbers end_task returns; do not invent limits the review does not show.
`)
		return promptResult("Review task "+taskID, b.String()), nil
	}
	b.WriteString("Plan a long task of many API calls through specgate")
	if task != "" {
		fmt.Fprintf(&b, ": %s", task)
	}
	b.WriteString(".\n\n")
	if st, err := s.wait(ctx); err == nil {
		fmt.Fprintf(&b, "specgate serves %d endpoints from %s.\n\n", st.cat.Len(), strings.Join(st.cat.SpecNames(), ", "))
	}
	b.WriteString(`Please:
1. Call begin_task with a short name before the first call; keep the taskId.
2. Find the endpoints with search and inspect, then make the calls. When a call is refused, wait the retryAfterSeconds it gives (or call one of its suggestions meanwhile) instead of retrying at once.
3. When done, call end_task with the taskId and the concurrency you would like to use (1 if unsure).
4. Review it: wall time against upstream time, calls, refusals by scope (proxy: specgate's limits; upstream: the API's), queue wait, and the round at which that concurrency would hit each limit. Recommend how to run the task next time. Use only the numbers end_task returns.
`)
	return promptResult("Plan a long task", b.String()), nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
