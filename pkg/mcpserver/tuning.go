package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/ratelimit"
)

// handleSetRateLimit answers set_rate_limit: runtime tuning of a cooldown
// or an upstream's budget, until restart.
func (s *Server) handleSetRateLimit(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	var a SetRateLimitArgs
	if bad := decodeArgs("set_rate_limit", args, &a); bad != nil {
		return bad, nil
	}
	st, err := s.wait(ctx)
	if err != nil {
		return s.notReady(err), nil
	}
	id, up := a.EndpointID, a.Upstream
	switch {
	case id != "" && up != "":
		return argError("give endpointId or upstream, not both: change one limit per call"), nil
	case id != "":
		return s.setCooldown(st, args, id), nil
	case up == "":
		return argError("give endpointId (with rateLimitInterval) or upstream (with budget values)"), nil
	}
	return s.setBudget(st, args, up), nil
}

// setCooldown sets endpoint id's cooldown from args.
func (s *Server) setCooldown(st *state, args map[string]any, id string) *mcp.CallToolResult {
	if _, ok := st.cat.Lookup(id); !ok {
		return s.notFound(st, id)
	}
	for _, k := range []string{"requestsPerWindow", "window", "minInterval", "maxConcurrent"} {
		if _, ok := args[k]; ok {
			return argError("%s applies to an upstream, not to endpointId", k)
		}
	}
	d, ok, bad := tuningDuration(args, "rateLimitInterval")
	if bad != nil {
		return bad
	}
	if !ok {
		return argError("rateLimitInterval is required with endpointId")
	}
	if err := s.opts.Limiter.SetCooldown(id, d); err != nil {
		return argError("%s", err.Error())
	}
	return jsonResult(SetRateLimitResult{EndpointID: id, Cooldown: d.String()})
}

// setBudget changes the budget of upstream up by the values in args, the
// others kept; an upstream of the catalog without a budget gets one.
func (s *Server) setBudget(st *state, args map[string]any, up string) *mcp.CallToolResult {
	if _, ok := args["rateLimitInterval"]; ok {
		return argError("rateLimitInterval applies to an endpoint: give endpointId")
	}
	b, ok := s.opts.Limiter.Budget(up)
	if !ok {
		known := false
		for _, e := range st.cat.Endpoints() {
			if s.upstreamOf(e) == up {
				known = true
				break
			}
		}
		if !known {
			return errorResult(&ErrorObject{Code: CodeNotFound, Message: fmt.Sprintf("no upstream %q", up),
				Hint: "rate_limit_status lists the upstreams (host:port or group names)."})
		}
		b = ratelimit.Budget{Match: up}
	}
	changed := false
	if n, ok, bad := tuningCount(args, "requestsPerWindow"); bad != nil {
		return bad
	} else if ok {
		b.Requests, changed = n, true
	}
	if n, ok, bad := tuningCount(args, "maxConcurrent"); bad != nil {
		return bad
	} else if ok {
		b.MaxConcurrent, changed = n, true
	}
	if d, ok, bad := tuningDuration(args, "window"); bad != nil {
		return bad
	} else if ok {
		b.Window, changed = d, true
	}
	if d, ok, bad := tuningDuration(args, "minInterval"); bad != nil {
		return bad
	} else if ok {
		b.MinInterval, changed = d, true
	}
	if !changed {
		return argError("give at least one of requestsPerWindow, window, minInterval, maxConcurrent with upstream")
	}
	if err := s.opts.Limiter.SetBudget(b); err != nil {
		return argError("%s", err.Error())
	}
	limits := budgetLimits(b)
	return jsonResult(SetRateLimitResult{Upstream: up, Limits: &limits})
}

// tuningDuration reads the optional duration args[name]; a result is set when
// it is not a duration of zero or more.
func tuningDuration(args map[string]any, name string) (time.Duration, bool, *mcp.CallToolResult) {
	v, ok := args[name]
	if !ok || v == nil {
		return 0, false, nil
	}
	str, ok := v.(string)
	d, err := time.ParseDuration(str)
	if !ok || err != nil || d < 0 {
		return 0, false, argError("%s must be a duration like \"5s\"", name)
	}
	return d, true, nil
}

// tuningCount reads the optional count args[name]; a result is set when it is
// not a whole number from 0 to 1e9.
func tuningCount(args map[string]any, name string) (int, bool, *mcp.CallToolResult) {
	v, ok := args[name]
	if !ok || v == nil {
		return 0, false, nil
	}
	n, ok := intArg(v, 0, 1e9)
	if !ok {
		return 0, false, argError("%s must be a whole number, 0 or more (0 turns the limit off)", name)
	}
	return n, true, nil
}
