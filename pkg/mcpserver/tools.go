package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/search"
	"github.com/specgate/specgate/pkg/spec"
)

func hints(readOnly, destructive, idempotent, openWorld bool) mcp.ToolOption {
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		ReadOnlyHint:    mcp.ToBoolPtr(readOnly),
		DestructiveHint: mcp.ToBoolPtr(destructive),
		IdempotentHint:  mcp.ToBoolPtr(idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(openWorld),
	})
}

// argError is a validation_failed error about the tool's own arguments.
func argError(format string, a ...any) *mcp.CallToolResult {
	msg := fmt.Sprintf(format, a...)
	return errorResult(&ErrorObject{Code: codes.ValidationFailed, Message: msg, Problems: []string{msg}, Hint: "Fix the arguments, then call again."})
}

// notReady answers a tool call made while the catalog is unavailable.
func (s *Server) notReady(err error) *mcp.CallToolResult {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errorResult(s.mapError(err))
	}
	return errorResult(&ErrorObject{Code: codes.NotFound, Message: err.Error(), // Fail's error says what failed
		Hint: "The operator must fix the specs in specgate's config."})
}

// SearchHit is one endpoint in a search answer.
type SearchHit struct {
	ID                string   `json:"id"`
	Method            string   `json:"method"`
	Path              string   `json:"path"`
	Summary           string   `json:"summary,omitempty"`
	Spec              string   `json:"spec"`
	Tags              []string `json:"tags,omitempty"`
	Ready             bool     `json:"ready"`
	RetryAfterSeconds float64  `json:"retryAfterSeconds,omitempty"`
}

// SearchResult is the search tool's answer.
type SearchResult struct {
	Endpoints []SearchHit `json:"endpoints"`
	Failed    []string    `json:"failedSpecs,omitempty"`
}

func (s *Server) handleSearch(ctx context.Context, req mcp.CallToolRequest, a *SearchArgs) (*mcp.CallToolResult, error) {
	if bad := requireString("query", a.Query); bad != nil {
		return bad, nil
	}
	query := a.Query
	limit := 10
	if a.Limit != nil {
		n, ok := intArg(*a.Limit, 1, 50)
		if !ok {
			return argError("limit must be a whole number from 1 to 50"), nil
		}
		limit = n
	}
	if len(a.Alternatives) > search.MaxAlternatives {
		return argError("alternatives takes at most %d more phrasings, got %d: keep the %d that differ most", search.MaxAlternatives, len(a.Alternatives), search.MaxAlternatives), nil
	}
	for i, alt := range a.Alternatives {
		if strings.TrimSpace(alt) == "" {
			return argError("alternatives[%d] is empty: give another phrasing of the query or leave it out", i), nil
		}
		if len(alt) > maxAlternativeBytes {
			return argError("alternatives[%d] is %d bytes, at most %d: one short phrasing each", i, len(alt), maxAlternativeBytes), nil
		}
	}
	st, err := s.wait(ctx)
	if err != nil {
		return s.notReady(err), nil
	}
	out, err := s.searchEndpoints(ctx, st, query, a.Alternatives, limit)
	if err != nil {
		return argError("query not understood: %s", err.Error()), nil
	}
	return jsonResult(out), nil
}

// maxAlternativeBytes bounds each of search's alternatives.
const maxAlternativeBytes = 300

// searchEndpoints is what search answers, for the search tool and
// run_script's api.search: the query and its alternative phrasings.
func (s *Server) searchEndpoints(ctx context.Context, st *state, query string, alternatives []string, limit int) (SearchResult, error) {
	hits, err := st.ix.SearchPhrasings(ctx, search.ParseQuery(query), alternatives, limit)
	if err != nil {
		return SearchResult{}, err
	}
	out := SearchResult{Endpoints: make([]SearchHit, 0, len(hits))}
	now := s.now()
	for _, h := range hits {
		sh := SearchHit{ID: h.ID, Method: h.Method, Path: h.Path, Summary: h.Summary, Spec: h.Spec, Tags: h.Tags, Ready: true}
		if wait := s.readyIn(h.ID, now); wait > 0 {
			sh.Ready = false
			sh.RetryAfterSeconds = ratelimit.WaitSeconds(wait)
		}
		out.Endpoints = append(out.Endpoints, sh)
	}
	for _, f := range st.failures {
		out.Failed = append(out.Failed, f.Spec)
	}
	return out, nil
}

func (s *Server) handleInspect(ctx context.Context, req mcp.CallToolRequest, a *InspectArgs) (*mcp.CallToolResult, error) {
	if bad := requireString("endpointId", a.EndpointID); bad != nil {
		return bad, nil
	}
	id := a.EndpointID
	st, err := s.wait(ctx)
	if err != nil {
		return s.notReady(err), nil
	}
	e, ok := st.cat.Lookup(id)
	if !ok {
		return s.notFound(st, id), nil
	}
	c := e.Describe(spec.DescribeOptions{})
	if s.call.Client != nil {
		// a parameter the config's credentials fill is not the model's to
		// give (Slack's required token header): showing it invites a guess
		if filled := s.call.Client.ConfigFilled(ctx, e); len(filled) > 0 {
			c.Parameters = slices.DeleteFunc(c.Parameters, func(p spec.ContractParam) bool {
				return filled[p.In+"\x00"+p.Name]
			})
		}
	}
	out := inspectResult{Contract: c}
	out.Limits = s.limitsOf(e)
	if s.opts.Credentials != nil {
		for i := range c.Security {
			ok := true
			for _, name := range c.Security[i].Schemes {
				ok = ok && s.opts.Credentials(ctx, e.Spec, name.Name)
			}
			out.AuthConfigured = append(out.AuthConfigured, ok)
		}
	}
	return jsonResult(out), nil
}

// inspectResult is the contract plus what specgate knows right now.
type inspectResult struct {
	*spec.Contract
	// AuthConfigured says, per alternative of the contract's security, whether
	// specgate holds the credentials it needs.
	AuthConfigured []bool       `json:"authConfigured,omitempty"`
	Limits         *EndpointNow `json:"rateLimit,omitempty"`
}

// notFound answers an unknown endpoint id with the closest matches.
func (s *Server) notFound(st *state, id string) *mcp.CallToolResult {
	return errorResult(s.notFoundError(st, id, false))
}

// notFoundError is why id names no endpoint served: unknown (with the
// endpoints whose ids are closest), excluded by the config, or left out
// at load. A script reads no hint or suggestions: for it, an unknown id's
// message names the next step.
func (s *Server) notFoundError(st *state, id string, forScript bool) *ErrorObject {
	obj := &ErrorObject{Code: codes.NotFound, Message: fmt.Sprintf("no endpoint %q", clip(id, 200)),
		Hint: "Use search to find endpoint ids; ids look like <spec>.<operationId>."}
	if why, ok := st.cat.Excluded(id); ok {
		obj.Message, obj.Hint = excludedMessage(id, why)
	} else if why, ok := st.cat.Unusable(id); ok {
		obj.Message = fmt.Sprintf("endpoint %q is in the spec but is not served: %s", id, why)
		obj.Hint = "specgate left it out at load to stay safe; use search for another endpoint, or ask the operator to fix the spec."
	} else if forScript {
		obj.Message += ": use api.search to find endpoint ids"
	}
	if forScript {
		return obj
	}
	words := strings.NewReplacer(".", " ", "_", " ", "-", " ", "/", " ").Replace(id)
	if hits, err := st.ix.Lexical(words, 5); err == nil {
		for _, h := range hits {
			obj.Suggestions = append(obj.Suggestions, Suggestion{ID: h.ID, Method: h.Method, Path: h.Path})
		}
	}
	return obj
}

// suggestions lists up to five endpoints callable now: by default from the
// same spec, close to e by search; with otherUpstreams, only endpoints that
// call other upstreams (when e's whole upstream is blocked).
func (s *Server) suggestions(st *state, e *spec.Endpoint, otherUpstreams bool) []Suggestion {
	query := strings.Join(e.Tags, " ") + " " + e.Summary
	if strings.TrimSpace(query) == "" {
		query = strings.NewReplacer("/", " ", "{", " ", "}", " ").Replace(e.Path)
	}
	filter := " spec:" + e.Spec
	if otherUpstreams {
		filter = ""
	}
	now := s.now()
	up := s.upstreamOf(e)
	var out []Suggestion
	take := func(hits []search.Hit) {
		for _, h := range hits {
			if len(out) == 5 {
				return
			}
			if h.ID == e.ID || s.readyIn(h.ID, now) > 0 {
				continue
			}
			other, ok := st.cat.Lookup(h.ID)
			if !ok || (otherUpstreams && s.upstreamOf(other) == up) || containsSuggestion(out, h.ID) {
				continue
			}
			out = append(out, Suggestion{ID: h.ID, Method: h.Method, Path: h.Path})
		}
	}
	if !otherUpstreams {
		take(st.ix.Similar(e.ID, 40))
	}
	if len(out) < 5 {
		if hits, err := st.ix.Lexical(query+filter, 40); err == nil {
			take(hits)
		}
	}
	if len(out) < 5 {
		// Fall back to document order for specs whose words match little.
		for _, other := range st.cat.Endpoints() {
			if len(out) == 5 {
				break
			}
			if other.ID == e.ID || (!otherUpstreams && other.Spec != e.Spec) || (otherUpstreams && s.upstreamOf(other) == up) {
				continue
			}
			if s.readyIn(other.ID, now) > 0 || containsSuggestion(out, other.ID) {
				continue
			}
			out = append(out, Suggestion{ID: other.ID, Method: other.Method, Path: other.Path})
		}
	}
	return out
}

func containsSuggestion(list []Suggestion, id string) bool {
	for _, s := range list {
		if s.ID == id {
			return true
		}
	}
	return false
}

// excludedMessage is the not_found message and hint for an endpoint the
// spec has but the config leaves out: searching again would not find it,
// so the hint says so instead of sending the model back to search for it.
func excludedMessage(id, why string) (message, hint string) {
	return fmt.Sprintf("endpoint %q is excluded by the server's config: %s", id, why),
		"It exists in the spec but this server does not serve it, so it cannot be inspected or invoked; " +
			"use search to find an endpoint that is served, or ask the operator to change include/exclude/read_only."
}
