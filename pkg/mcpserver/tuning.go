package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/ratelimit"
)

// handleSetRateLimit answers set_rate_limit: runtime tuning of a cooldown
// or an upstream's budget, until restart.
func (s *Server) handleSetRateLimit(ctx context.Context, req mcp.CallToolRequest, a *SetRateLimitArgs) (*mcp.CallToolResult, error) {
	st, err := s.wait(ctx)
	if err != nil {
		return s.notReady(err), nil
	}
	switch {
	case a.EndpointID != "" && a.Upstream != "":
		return argError("give endpointId or upstream, not both: change one limit per call"), nil
	case a.EndpointID != "":
		return s.setCooldown(st, a), nil
	case a.Upstream == "":
		return argError("give endpointId (with rateLimitInterval) or upstream (with budget values)"), nil
	}
	return s.setBudget(st, a), nil
}

// setCooldown sets the cooldown of a.EndpointID.
func (s *Server) setCooldown(st *state, a *SetRateLimitArgs) *mcp.CallToolResult {
	id := a.EndpointID
	if _, ok := st.cat.Lookup(id); !ok {
		return s.notFound(st, id)
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"requestsPerWindow", a.RequestsPerWindow != nil},
		{"window", a.Window != nil},
		{"minInterval", a.MinInterval != nil},
		{"maxConcurrent", a.MaxConcurrent != nil},
	} {
		if f.set {
			return argError("%s applies to an upstream, not to endpointId", f.name)
		}
	}
	d, ok, bad := tuningDuration("rateLimitInterval", a.RateLimitInterval)
	if bad != nil {
		return bad
	}
	if !ok {
		return argError("rateLimitInterval is required with endpointId")
	}
	if err := s.call.Limiter.SetCooldown(id, d); err != nil {
		return argError("%s", err.Error())
	}
	return jsonResult(SetRateLimitResult{EndpointID: id, Cooldown: d.String()})
}

// setBudget changes the budget of a.Upstream by the values a gives, the
// others kept; an upstream of the catalog without a budget gets one.
func (s *Server) setBudget(st *state, a *SetRateLimitArgs) *mcp.CallToolResult {
	up := a.Upstream
	if a.RateLimitInterval != nil {
		return argError("rateLimitInterval applies to an endpoint: give endpointId")
	}
	b, ok := s.call.Limiter.Budget(up)
	if !ok {
		known := false
		for _, e := range st.cat.Endpoints() {
			if s.upstreamOf(e) == up {
				known = true
				break
			}
		}
		if !known {
			return errorResult(&ErrorObject{Code: codes.NotFound, Message: fmt.Sprintf("no upstream %q", up),
				Hint: "rate_limit_status lists the upstreams (host:port or group names)."})
		}
		b = ratelimit.Budget{Match: up}
	}
	changed := false
	if n, ok, bad := tuningCount("requestsPerWindow", a.RequestsPerWindow); bad != nil {
		return bad
	} else if ok {
		b.Requests, changed = n, true
	}
	if n, ok, bad := tuningCount("maxConcurrent", a.MaxConcurrent); bad != nil {
		return bad
	} else if ok {
		b.MaxConcurrent, changed = n, true
	}
	if d, ok, bad := tuningDuration("window", a.Window); bad != nil {
		return bad
	} else if ok {
		b.Window, changed = d, true
	}
	if d, ok, bad := tuningDuration("minInterval", a.MinInterval); bad != nil {
		return bad
	} else if ok {
		b.MinInterval, changed = d, true
	}
	if !changed {
		return argError("give at least one of requestsPerWindow, window, minInterval, maxConcurrent with upstream")
	}
	if err := s.call.Limiter.SetBudget(b); err != nil {
		return argError("%s", err.Error())
	}
	limits := budgetLimits(b)
	out := SetRateLimitResult{Upstream: up, Limits: &limits}
	if b.Shadow {
		out.Shadow = true
		out.Note = "this budget is a shadow (enforce: false): the new limits count what they would refuse (rate_limit_status shadow) and hold no call; enforce it in the config"
	}
	return jsonResult(out)
}

// tuningDuration reads the optional duration argument name (nil: not
// given); a result is set when it is not a duration of zero or more.
func tuningDuration(name string, v *string) (time.Duration, bool, *mcp.CallToolResult) {
	if v == nil {
		return 0, false, nil
	}
	d, err := time.ParseDuration(*v)
	if err != nil || d < 0 {
		return 0, false, argError("%s must be a duration like \"5s\"", name)
	}
	return d, true, nil
}

// tuningCount reads the optional count argument name (nil: not given); a
// result is set when it is not a whole number from 0 to 1e9.
func tuningCount(name string, v *float64) (int, bool, *mcp.CallToolResult) {
	if v == nil {
		return 0, false, nil
	}
	n, ok := intArg(*v, 0, 1e9)
	if !ok {
		return 0, false, argError("%s must be a whole number, 0 or more (0 turns the limit off)", name)
	}
	return n, true, nil
}
