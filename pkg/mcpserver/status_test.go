package mcpserver

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/ratelimit"
)

// The code below is rate_limit_status's upstream rendering as it was with
// maps, kept to show the typed structs marshal to the same bytes.

type legacyUpstreamStatus struct {
	Key                string           `json:"upstream"`
	Limits             map[string]any   `json:"limits,omitempty"`
	RequestsUsed       int              `json:"requestsUsed"`
	RequestsRemaining  *int             `json:"requestsRemaining,omitempty"`
	TokensUsed         int64            `json:"tokensUsed,omitempty"`
	TokensRemaining    *int64           `json:"tokensRemaining,omitempty"`
	InFlight           int              `json:"inFlight"`
	NextAllowedSeconds float64          `json:"nextAllowedInSeconds,omitempty"`
	Learned            []map[string]any `json:"learned,omitempty"`
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
}

func legacyRender(u ratelimit.UpstreamStatus, now time.Time, lat *latency) legacyUpstreamStatus {
	us := legacyUpstreamStatus{Key: u.Key, RequestsUsed: u.RequestsUsed, TokensUsed: u.TokensUsed, InFlight: u.InFlight,
		QueueDepth: u.QueueDepth, Admitted: u.Admitted, Upstream429s: u.RateLimitedAnswers, Fallback: u.Fallback}
	if u.Configured {
		us.Limits = legacyBudgetMap(u.Budget)
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
		m := map[string]any{}
		if l.Resource != "" {
			m["resource"] = l.Resource
		}
		if d := l.BlockedUntil.Sub(now); d > 0 {
			m["blockedForSeconds"] = ratelimit.WaitSeconds(d)
			m["blockSource"] = l.BlockSource
		}
		for name, q := range map[string]ratelimit.LearnedQuota{"requests": l.Requests, "tokens": l.Tokens} {
			if q.Limit == 0 && !q.HasRemaining {
				continue
			}
			qm := map[string]any{"limit": q.Limit, "source": q.Source}
			if q.HasRemaining {
				qm["remaining"] = q.Remaining
			}
			if q.Window > 0 {
				qm["window"] = q.Window.String()
			}
			if d := q.Reset.Sub(now); d > 0 {
				qm["resetInSeconds"] = ratelimit.WaitSeconds(d)
			}
			m[name] = qm
		}
		us.Learned = append(us.Learned, m)
	}
	if len(u.RefusedByScope) > 0 {
		us.RefusedByScope = map[string]int64{}
		for k, v := range u.RefusedByScope {
			us.RefusedByScope[string(k)] = v
		}
	}
	// the codes were counted in ratelimit then; they are named here now
	for scope, n := range u.RefusedByScope {
		if us.RefusedByCode == nil {
			us.RefusedByCode = map[string]int64{}
		}
		if scope == ratelimit.ScopeUpstream {
			us.RefusedByCode["upstream_rate_limit"] += n
		} else {
			us.RefusedByCode["rate_limit"] += n
		}
	}
	for reason, n := range u.QueueRefused {
		if us.RefusedByCode == nil {
			us.RefusedByCode = map[string]int64{}
		}
		us.RefusedByCode["queue_"+string(reason)] += n
	}
	if l := lat; l != nil && l.n > 0 {
		us.AvgLatencyMs = float64(l.total.Microseconds()) / float64(l.n) / 1000
		us.P95LatencyMs = float64(l.p95().Microseconds()) / 1000
		us.UpstreamTimeMs = l.total.Milliseconds()
	}
	return us
}

func legacyBudgetMap(b ratelimit.Budget) map[string]any {
	m := map[string]any{}
	if b.Requests > 0 {
		m["requestsPerWindow"] = b.Requests
		m["window"] = b.Window.String()
	}
	if b.Tokens > 0 {
		m["tokensPerWindow"] = b.Tokens
		m["window"] = b.Window.String()
	}
	if b.MinInterval > 0 {
		m["minInterval"] = b.MinInterval.String()
	}
	if b.MaxConcurrent > 0 {
		m["maxConcurrent"] = b.MaxConcurrent
	}
	return m
}

// TestUpstreamStatusJSONUnchangedByTypedStructs: the typed limits and
// learned quotas marshal byte for byte as the maps they replaced did.
func TestUpstreamStatusJSONUnchangedByTypedStructs(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	lat := &latency{}
	for _, d := range []time.Duration{80 * time.Millisecond, 120 * time.Millisecond, 95 * time.Millisecond} {
		lat.n++
		lat.total += d
		lat.samples = append(lat.samples, d)
	}
	full := ratelimit.Budget{Requests: 100, Tokens: 50000, Window: time.Minute, MinInterval: 200 * time.Millisecond, MaxConcurrent: 4}
	samples := []struct {
		name string
		u    ratelimit.UpstreamStatus
		lat  *latency
	}{
		{"unconfigured", ratelimit.UpstreamStatus{Key: "api.example.com:443"}, nil},
		{"configured, no limit on", ratelimit.UpstreamStatus{Key: "a:443", Configured: true}, nil},
		{"every limit", ratelimit.UpstreamStatus{Key: "a:443", Configured: true, Budget: full,
			RequestsUsed: 40, RequestsRemaining: 60, TokensUsed: 1200, TokensRemaining: 48800, InFlight: 2,
			NextAllowed: now.Add(150 * time.Millisecond), QueueDepth: 3, Admitted: 41,
			RefusedByScope:     map[ratelimit.Scope]int64{ratelimit.ScopeProxy: 2, ratelimit.ScopeUpstream: 1},
			QueueRefused:       map[ratelimit.QueueReason]int64{ratelimit.QueueFull: 4, ratelimit.QueueTimeout: 5},
			RateLimitedAnswers: 1, Fallback: true}, lat},
		{"requests only, none left", ratelimit.UpstreamStatus{Key: "group", Configured: true,
			Budget: ratelimit.Budget{Requests: 5, Window: 0}, RequestsUsed: 5}, nil},
		{"tokens and interval", ratelimit.UpstreamStatus{Key: "b:80", Configured: true,
			Budget: ratelimit.Budget{Tokens: 10, Window: time.Hour, MinInterval: time.Second}}, nil},
		{"learned", ratelimit.UpstreamStatus{Key: "c:443", Learned: []ratelimit.LearnedStatus{
			{},
			{Resource: "core", Requests: ratelimit.LearnedQuota{Limit: 5000, Remaining: 0, HasRemaining: true,
				Reset: now.Add(30 * time.Minute), Window: time.Hour, Source: "x-ratelimit-limit"}},
			{Resource: "search", BlockedUntil: now.Add(1500 * time.Millisecond), BlockSource: "retry-after",
				Tokens: ratelimit.LearnedQuota{Limit: 90000, Source: "x-ratelimit-limit-tokens", Reset: now.Add(-time.Second)}},
			{BlockedUntil: now.Add(time.Millisecond / 2), BlockSource: ""},
			{BlockedUntil: now.Add(-time.Second), BlockSource: "retry-after",
				Requests: ratelimit.LearnedQuota{Remaining: 3, HasRemaining: true},
				Tokens:   ratelimit.LearnedQuota{Limit: 7, Remaining: 7, HasRemaining: true, Source: "h"}},
		}}, nil},
	}
	for _, tt := range samples {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(newUpstreamStatus(tt.u, now, tt.lat))
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(legacyRender(tt.u, now, tt.lat))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("typed status marshals as\n%s\nthe maps did\n%s", got, want)
			}
		})
	}
	for _, b := range []ratelimit.Budget{{}, full, {MaxConcurrent: 1}, {Requests: 1}} {
		got, _ := json.Marshal(map[string]any{"upstream": "u", "limits": budgetLimits(b)})
		want, _ := json.Marshal(map[string]any{"upstream": "u", "limits": legacyBudgetMap(b)})
		if string(got) != string(want) {
			t.Errorf("set_rate_limit limits for %+v = %s, want %s", b, got, want)
		}
	}
}

// TestStatusShowsInferredLimitsAndProbe: while a budget inferred from bare 429s, a limit
// on calls in flight or a probe held the calls, rate_limit_status showed learned: [{}].
func TestStatusShowsInferredLimitsAndProbe(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		l    ratelimit.LearnedStatus
		want string
	}{
		{"inferred budget", ratelimit.LearnedStatus{Inferred: ratelimit.InferredBudget{Limit: 2, Window: time.Second,
			Until: now.Add(30 * time.Second), Source: "status"}},
			`{"inferred":{"forSeconds":30,"limit":2,"source":"status","window":"1s"}}`},
		{"in-flight limit", ratelimit.LearnedStatus{InFlight: 2, InFlightUntil: now.Add(1500 * time.Millisecond)},
			`{"inFlight":{"forSeconds":1.5,"limit":2}}`},
		{"probing", ratelimit.LearnedStatus{Probing: true}, `{"probing":true}`},
		{"an inferred budget past its time", ratelimit.LearnedStatus{Inferred: ratelimit.InferredBudget{Limit: 2,
			Window: time.Second, Until: now.Add(-time.Second)}}, `{}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(learnedLimit(tt.l, now))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
