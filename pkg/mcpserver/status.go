package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/search"
)

// StatusResult is the rate_limit_status answer.
type StatusResult struct {
	At        string           `json:"at"`
	Store     *StoreStatus     `json:"store,omitempty"`
	Endpoints []EndpointStatus `json:"endpoints,omitempty"`
	Upstreams []UpstreamStatus `json:"upstreams"`
	// SemanticSearch says whether search ranks by meaning too (when
	// search.embeddings is configured), and why not.
	SemanticSearch *search.SemanticStatus `json:"semanticSearch,omitempty"`
	// Runs are the caller's run_script runs in flight on this replica,
	// with their progress.
	Runs []RunState `json:"runs,omitempty"`
	Note string     `json:"note"`
}

// StoreStatus says where limits live and whether the shared store answers.
type StoreStatus struct {
	Backend string `json:"backend"` // memory or shared
	// Degraded is true while the shared store is unreachable: this replica
	// runs on its fallback share of each budget.
	Degraded      bool    `json:"degraded,omitempty"`
	Since         string  `json:"since,omitempty"`
	Reason        string  `json:"reason,omitempty"`
	FallbackShare float64 `json:"fallbackShare,omitempty"`
}

// EndpointStatus is one endpoint in rate_limit_status.
type EndpointStatus struct {
	ID                string  `json:"id"`
	Upstream          string  `json:"upstream,omitempty"`
	Cooldown          string  `json:"cooldown,omitempty"`
	Ready             bool    `json:"ready"`
	RetryAfterSeconds float64 `json:"retryAfterSeconds,omitempty"`
	Admitted          int64   `json:"admitted"`
	Refused           int64   `json:"refused"`
}

// UpstreamStatus is one upstream in rate_limit_status.
type UpstreamStatus struct {
	Key                string           `json:"upstream"`
	Limits             UpstreamLimits   `json:"limits,omitzero"`
	RequestsUsed       int              `json:"requestsUsed"`
	RequestsRemaining  *int             `json:"requestsRemaining,omitempty"`
	TokensUsed         int64            `json:"tokensUsed,omitempty"`
	TokensRemaining    *int64           `json:"tokensRemaining,omitempty"`
	InFlight           int              `json:"inFlight"`
	NextAllowedSeconds float64          `json:"nextAllowedInSeconds,omitempty"`
	Learned            []LearnedLimit   `json:"learned,omitempty"`
	QueueDepth         int              `json:"queueDepth"`
	Admitted           int64            `json:"admitted"`
	RefusedByScope     map[string]int64 `json:"refusedByScope,omitempty"`
	RefusedByCode      map[string]int64 `json:"refusedByCode,omitempty"`
	Upstream429s       int64            `json:"upstream429s"`
	// Fallback is true while the shared store does not answer for this upstream
	// (with Redis Cluster, only those on an unreachable slot): this replica runs
	// it on its fallback share.
	Fallback       bool    `json:"fallback,omitempty"`
	AvgLatencyMs   float64 `json:"avgLatencyMs,omitempty"`
	P95LatencyMs   float64 `json:"p95LatencyMs,omitempty"`
	UpstreamTimeMs int64   `json:"upstreamTimeMs,omitempty"`
	// Shadow is what a budget with enforce: false counted, refusing nothing.
	Shadow *ShadowBudget `json:"shadow,omitempty"`
}

// ShadowBudget is a shadow budget's count: the calls it saw, and how many
// it would have refused or queued, by the limit that would have held them.
type ShadowBudget struct {
	Limits       UpstreamLimits   `json:"limits"`
	Calls        int64            `json:"calls"`
	WouldRefuse  int64            `json:"wouldRefuse"`
	ByKind       map[string]int64 `json:"byKind,omitempty"`
	RequestsUsed int              `json:"requestsUsed"`
	// OverPerPrincipal counts the calls that went over their principal's
	// per_principal share, which a shadow budget only counts.
	OverPerPrincipal int64 `json:"overPerPrincipal,omitempty"`
}

func (s *Server) handleStatus(ctx context.Context, req mcp.CallToolRequest, a *StatusArgs) (*mcp.CallToolResult, error) {
	if s.call.Limiter == nil {
		return jsonResult(StatusResult{At: s.now().UTC().Format(time.RFC3339Nano), Upstreams: []UpstreamStatus{}, Runs: s.runStatuses(ctx), Note: "rate governance is off"}), nil
	}
	endpointID, specName := a.EndpointID, a.Spec
	st, err := s.wait(ctx)
	if err != nil {
		return s.notReady(err), nil
	}
	var match func(string) bool
	switch {
	case endpointID != "":
		if _, ok := st.cat.Lookup(endpointID); !ok {
			return s.notFound(st, endpointID), nil
		}
		match = func(id string) bool { return id == endpointID }
	case specName != "":
		if _, ok := st.cat.Spec(specName); !ok {
			return errorResult(&ErrorObject{Code: codes.NotFound, Message: fmt.Sprintf("no spec %q", specName),
				Hint: "Loaded specs: " + strings.Join(st.cat.SpecNames(), ", ")}), nil
		}
		match = func(id string) bool { return strings.HasPrefix(id, specName+".") }
	}
	now := s.now()
	ls := s.call.Limiter.StatusAt(now, match)
	out := StatusResult{At: now.UTC().Format(time.RFC3339Nano), Store: &StoreStatus{Backend: ls.Store},
		Note: "proxy refusals are specgate's own limits (raising them helps); upstream refusals are the API's (raising specgate's limits does not help)."}
	out.SemanticSearch = st.ix.Semantic()
	out.Runs = s.runStatuses(ctx)
	if ls.Degraded {
		out.Store.Degraded, out.Store.Reason = true, ls.DegradedReason
		out.Store.Since = ls.DegradedSince.UTC().Format(time.RFC3339Nano)
		out.Store.FallbackShare = s.call.Limiter.FallbackShare()
	}
	if match != nil {
		for _, e := range ls.Endpoints {
			es := EndpointStatus{ID: e.ID, Upstream: e.Upstream, Ready: e.Wait <= 0, Admitted: e.Admitted, Refused: e.Refused}
			if e.Interval > 0 {
				es.Cooldown = e.Interval.String()
			}
			if e.Wait > 0 {
				es.RetryAfterSeconds = ratelimit.WaitSeconds(e.Wait)
			}
			out.Endpoints = append(out.Endpoints, es)
		}
	}
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	for _, u := range ls.Upstreams {
		out.Upstreams = append(out.Upstreams, newUpstreamStatus(u, now, s.stats.ups[u.Key]))
	}
	if out.Upstreams == nil {
		out.Upstreams = []UpstreamStatus{}
	}
	return jsonResult(out), nil
}

// UpstreamLimits are an upstream's configured limits; a limit that is off
// is left out. The fields keep the alphabetical order of their JSON names,
// the order the map they replace was marshalled in.
type UpstreamLimits struct {
	// Adaptive is true when maxConcurrent is found by AIMD (max_concurrent:
	// auto): maxConcurrent is then its value now.
	Adaptive          bool   `json:"adaptive,omitempty"`
	MaxConcurrent     int    `json:"maxConcurrent,omitempty"`
	MinInterval       string `json:"minInterval,omitempty"`
	RequestsPerWindow int    `json:"requestsPerWindow,omitempty"`
	TokensPerWindow   int64  `json:"tokensPerWindow,omitempty"`
	Window            string `json:"window,omitempty"`
}

// LearnedLimit is what an upstream said about one of its quotas ("" for
// the whole upstream). The fields keep the alphabetical order of their
// JSON names, as UpstreamLimits does.
type LearnedLimit struct {
	// BlockSource is the header that set a block. It is set exactly while
	// the block lasts, empty or not, so it is a pointer.
	BlockSource       *string `json:"blockSource,omitempty"`
	BlockedForSeconds float64 `json:"blockedForSeconds,omitempty"`
	// InFlight is a limit on calls in flight inferred from rate-limited
	// answers that advertised no quota.
	InFlight *InferredLimit `json:"inFlight,omitempty"`
	// Inferred is a requests budget inferred the same way.
	Inferred *InferredLimit `json:"inferred,omitempty"`
	// Probing is true while one call probes after a block and the others wait.
	Probing  bool          `json:"probing,omitempty"`
	Requests *LearnedQuota `json:"requests,omitempty"`
	Resource string        `json:"resource,omitempty"`
	Tokens   *LearnedQuota `json:"tokens,omitempty"`
}

// InferredLimit is a limit specgate inferred from an upstream's bare 429s:
// at most Limit calls (in any rolling Window when there is one) for
// ForSeconds more.
type InferredLimit struct {
	ForSeconds float64 `json:"forSeconds"`
	Limit      int64   `json:"limit"`
	Source     string  `json:"source,omitempty"`
	Window     string  `json:"window,omitempty"`
}

// LearnedQuota is one quota an upstream advertised. Remaining is nil when
// the upstream did not say; zero is a real answer.
type LearnedQuota struct {
	Limit          int64   `json:"limit"`
	Remaining      *int64  `json:"remaining,omitempty"`
	ResetInSeconds float64 `json:"resetInSeconds,omitempty"`
	Source         string  `json:"source"`
	Window         string  `json:"window,omitempty"`
}

// newUpstreamStatus renders one upstream of the limiter's status at now,
// with lat's latencies when there are any. The caller holds the stats lock.
func newUpstreamStatus(u ratelimit.UpstreamStatus, now time.Time, lat *latency) UpstreamStatus {
	us := UpstreamStatus{Key: u.Key, RequestsUsed: u.RequestsUsed, TokensUsed: u.TokensUsed, InFlight: u.InFlight,
		QueueDepth: u.QueueDepth, Admitted: u.Admitted, Upstream429s: u.RateLimitedAnswers, Fallback: u.Fallback}
	if u.Configured {
		us.Limits = budgetLimits(u.Budget)
		if u.Budget.Requests > 0 {
			r := u.RequestsRemaining
			us.RequestsRemaining = &r
		}
		if u.Budget.Tokens > 0 {
			r := u.TokensRemaining
			us.TokensRemaining = &r
		}
	}
	if d := u.NextAllowed.Sub(now); d > 0 {
		us.NextAllowedSeconds = ratelimit.WaitSeconds(d)
	}
	for _, l := range u.Learned {
		us.Learned = append(us.Learned, learnedLimit(l, now))
	}
	if len(u.RefusedByScope) > 0 {
		us.RefusedByScope = map[string]int64{}
		for k, v := range u.RefusedByScope {
			us.RefusedByScope[string(k)] = v
		}
	}
	us.RefusedByCode = refusedByCode(u)
	if sh := u.Shadow; sh != nil {
		us.Shadow = &ShadowBudget{Limits: budgetLimits(sh.Budget), Calls: sh.Calls, WouldRefuse: sh.WouldRefuse, RequestsUsed: sh.RequestsUsed,
			OverPerPrincipal: sh.PerPrincipal}
		for k, n := range sh.ByKind {
			if us.Shadow.ByKind == nil {
				us.Shadow.ByKind = map[string]int64{}
			}
			us.Shadow.ByKind[string(k)] = n
		}
	}
	if lat != nil && lat.n > 0 {
		us.AvgLatencyMs = float64(lat.total.Microseconds()) / float64(lat.n) / 1000
		us.P95LatencyMs = float64(lat.p95().Microseconds()) / 1000
		us.UpstreamTimeMs = lat.total.Milliseconds()
	}
	return us
}

func learnedLimit(l ratelimit.LearnedStatus, now time.Time) LearnedLimit {
	out := LearnedLimit{Resource: l.Resource}
	if d := l.BlockedUntil.Sub(now); d > 0 {
		out.BlockedForSeconds = ratelimit.WaitSeconds(d)
		out.BlockSource = &l.BlockSource
	}
	out.Requests = learnedQuota(l.Requests, now)
	out.Tokens = learnedQuota(l.Tokens, now)
	out.Probing = l.Probing
	if inf := l.Inferred; inf.Limit > 0 && inf.Until.After(now) {
		out.Inferred = &InferredLimit{Limit: inf.Limit, Window: inf.Window.String(), Source: inf.Source,
			ForSeconds: ratelimit.WaitSeconds(inf.Until.Sub(now))}
	}
	if l.InFlight > 0 && l.InFlightUntil.After(now) {
		out.InFlight = &InferredLimit{Limit: int64(l.InFlight), ForSeconds: ratelimit.WaitSeconds(l.InFlightUntil.Sub(now))}
	}
	return out
}

// learnedQuota is nil for a quota the upstream said nothing about.
func learnedQuota(q ratelimit.LearnedQuota, now time.Time) *LearnedQuota {
	if q.Limit == 0 && !q.HasRemaining {
		return nil
	}
	out := &LearnedQuota{Limit: q.Limit, Source: q.Source}
	if q.HasRemaining {
		r := q.Remaining
		out.Remaining = &r
	}
	if q.Window > 0 {
		out.Window = q.Window.String()
	}
	if d := q.Reset.Sub(now); d > 0 {
		out.ResetInSeconds = ratelimit.WaitSeconds(d)
	}
	return out
}

func budgetLimits(b ratelimit.Budget) UpstreamLimits {
	var out UpstreamLimits
	if b.Requests > 0 {
		out.RequestsPerWindow = b.Requests
		out.Window = b.Window.String()
	}
	if b.Tokens > 0 {
		out.TokensPerWindow = b.Tokens
		out.Window = b.Window.String()
	}
	if b.MinInterval > 0 {
		out.MinInterval = b.MinInterval.String()
	}
	if b.MaxConcurrent > 0 {
		out.MaxConcurrent = b.MaxConcurrent
	}
	out.Adaptive = b.Adaptive
	return out
}

// refusedByCode counts an upstream's refusals by the code the model read;
// nil when there were none.
func refusedByCode(u ratelimit.UpstreamStatus) map[string]int64 {
	var out map[string]int64
	add := func(code string, n int64) {
		if n <= 0 {
			return
		}
		if out == nil {
			out = map[string]int64{}
		}
		out[code] += n
	}
	for scope, n := range u.RefusedByScope {
		add(limitCode(scope), n)
	}
	for reason, n := range u.QueueRefused {
		add(queueCode(reason), n)
	}
	return out
}
