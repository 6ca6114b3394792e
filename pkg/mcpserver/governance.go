package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
)

func serverFromContext(ctx context.Context) *server.MCPServer { return server.ServerFromContext(ctx) }

// HostKey returns the host:port of a base URL, the default upstream key.
func HostKey(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return ""
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(strings.ToLower(host), port)
}

// readyIn returns how long a call to the endpoint would wait now; zero when
// it could go.
func (s *Server) readyIn(id string, now time.Time) time.Duration {
	if s.opts.Limiter == nil {
		return 0
	}
	return s.opts.Limiter.ReadyAt(id, now)
}

// EndpointNow is an endpoint's rate-limit state for inspect.
type EndpointNow struct {
	Cooldown          string  `json:"cooldown,omitempty"`
	Upstream          string  `json:"upstream,omitempty"`
	Ready             bool    `json:"ready"`
	RetryAfterSeconds float64 `json:"retryAfterSeconds,omitempty"`
}

func (s *Server) limitsOf(e *spec.Endpoint) *EndpointNow {
	out := &EndpointNow{Ready: true, Upstream: s.upstreamOf(e)}
	if s.opts.Limiter == nil {
		return out
	}
	now := s.now()
	if w := s.opts.Limiter.ReadyAt(e.ID, now); w > 0 {
		out.Ready = false
		out.RetryAfterSeconds = retrySeconds(w)
	}
	st := s.opts.Limiter.StatusAt(now, func(id string) bool { return id == e.ID })
	if len(st.Endpoints) == 1 && st.Endpoints[0].Interval > 0 {
		out.Cooldown = st.Endpoints[0].Interval.String()
	}
	return out
}

// stats keeps per-upstream latency and per-task counters.
type stats struct {
	mu    sync.Mutex
	ups   map[string]*latency
	tasks map[string]*task
	seq   int
}

type latency struct {
	n       int64
	total   time.Duration
	samples []time.Duration // the last 256, for p95
	next    int
}

type task struct {
	name     string
	start    time.Time
	calls    int64
	upstream time.Duration
	refusals map[string]int64 // by scope/code
	wait     time.Duration
	tokens   int64
	eps      map[string]bool
}

func newStats() *stats {
	return &stats{ups: map[string]*latency{}, tasks: map[string]*task{}}
}

func (st *stats) observe(e *spec.Endpoint, up string, d, queueWait time.Duration, tokens int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	l := st.ups[up]
	if l == nil {
		l = &latency{}
		st.ups[up] = l
	}
	l.n++
	l.total += d
	if len(l.samples) < 256 {
		l.samples = append(l.samples, d)
	} else {
		l.samples[l.next] = d
		l.next = (l.next + 1) % len(l.samples)
	}
	for _, t := range st.tasks {
		t.calls++
		t.upstream += d
		t.wait += queueWait
		t.tokens += tokens
		t.eps[e.ID] = true
	}
}

func (st *stats) refused(id string, err error) {
	code := "error"
	scope := "proxy"
	var le *ratelimit.LimitError
	var qe *ratelimit.QueueError
	var ue *invoke.UpstreamRateLimitError
	switch {
	case errors.As(err, &le):
		code, scope = le.Code(), string(le.Scope)
	case errors.As(err, &qe):
		code = qe.Code
	case errors.As(err, &ue):
		code, scope = CodeUpstreamRateLimit, "upstream"
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, t := range st.tasks {
		t.refusals[scope+"/"+code]++
	}
}

func (l *latency) p95() time.Duration {
	if len(l.samples) == 0 {
		return 0
	}
	s := slices.Clone(l.samples)
	slices.Sort(s)
	return s[(len(s)*95+99)/100-1]
}

func (s *Server) registerGovernanceTools() {
	s.mcp.AddTool(mcp.NewTool("rate_limit_status",
		mcp.WithDescription("Show rate governance now: per upstream and endpoint, configured limits, used and remaining in the window, "+
			"next allowed time, limits learned from the upstream (and the header that set them), queue depth, admitted calls, "+
			"refusals by code and scope (proxy: specgate's limits; upstream: the API's), upstream 429s, latency. "+
			errorCodesNote+"not_found."),
		mcp.WithString("endpointId", mcp.Description("Only this endpoint and its upstream")),
		mcp.WithString("spec", mcp.Description("Only this spec's endpoints and upstreams")),
		hints(true, false, true, false),
	), s.handleStatus)
	if s.opts.AllowRuntimeTuning && s.opts.Limiter != nil {
		s.mcp.AddTool(mcp.NewTool("set_rate_limit",
			mcp.WithDescription("Change a limit now, until restart: an endpoint's cooldown (endpointId + rateLimitInterval, e.g. \"5s\", \"0s\" for none) "+
				"or an upstream's budget (upstream + any of requestsPerWindow, window, minInterval, maxConcurrent). "+
				errorCodesNote+"validation_failed, not_found."),
			mcp.WithString("endpointId", mcp.Description("The endpoint whose cooldown to set")),
			mcp.WithString("rateLimitInterval", mcp.Description("The new cooldown, a duration like 5s")),
			mcp.WithString("upstream", mcp.Description("The upstream (host:port or group) whose budget to set")),
			mcp.WithNumber("requestsPerWindow", mcp.Description("Requests allowed per window")),
			mcp.WithString("window", mcp.Description("The window, a duration like 1m")),
			mcp.WithString("minInterval", mcp.Description("Minimum time between requests, like 200ms")),
			mcp.WithNumber("maxConcurrent", mcp.Description("Requests in flight at most")),
			hints(false, false, true, false),
		), s.handleSetRateLimit)
	}
	s.mcp.AddTool(mcp.NewTool("begin_task",
		mcp.WithDescription("Start measuring a long task; returns a taskId for end_task."),
		mcp.WithString("name", mcp.Required(), mcp.Description("A name for the task")),
		hints(false, false, false, false),
	), s.handleBeginTask)
	s.mcp.AddTool(mcp.NewTool("end_task",
		mcp.WithDescription("End a task and review it: wall time, upstream time, calls, refusals by scope and code, queue wait, "+
			"the serial estimate, and the round at which the given concurrency would hit each configured limit. "+
			errorCodesNote+"not_found, validation_failed."),
		mcp.WithString("taskId", mcp.Required(), mcp.Description("The id begin_task returned")),
		mcp.WithNumber("concurrency", mcp.Description("Parallel calls to plan for (default 1)")),
		hints(false, false, false, false),
	), s.handleEndTask)
}

// StatusResult is the rate_limit_status answer.
type StatusResult struct {
	At        string           `json:"at"`
	Store     *StoreStatus     `json:"store,omitempty"`
	Endpoints []EndpointStatus `json:"endpoints,omitempty"`
	Upstreams []UpstreamStatus `json:"upstreams"`
	Note      string           `json:"note"`
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

func (s *Server) handleStatus(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if s.opts.Limiter == nil {
		return jsonResult(StatusResult{At: s.now().UTC().Format(time.RFC3339Nano), Upstreams: []UpstreamStatus{}, Note: "rate governance is off"}), nil
	}
	args := req.GetArguments()
	endpointID, _ := args["endpointId"].(string)
	specName, _ := args["spec"].(string)
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
			return errorResult(&ErrorObject{Code: CodeNotFound, Message: fmt.Sprintf("no spec %q", specName),
				Hint: "Loaded specs: " + strings.Join(st.cat.SpecNames(), ", ")}), nil
		}
		match = func(id string) bool { return strings.HasPrefix(id, specName+".") }
	}
	now := s.now()
	ls := s.opts.Limiter.StatusAt(now, match)
	out := StatusResult{At: now.UTC().Format(time.RFC3339Nano), Store: &StoreStatus{Backend: ls.Store},
		Note: "proxy refusals are specgate's own limits (raising them helps); upstream refusals are the API's (raising specgate's limits does not help)."}
	if ls.Degraded {
		out.Store.Degraded, out.Store.Reason = true, ls.DegradedReason
		out.Store.Since = ls.DegradedSince.UTC().Format(time.RFC3339Nano)
		out.Store.FallbackShare = s.opts.Limiter.FallbackShare()
	}
	if match != nil {
		for _, e := range ls.Endpoints {
			es := EndpointStatus{ID: e.ID, Upstream: e.Upstream, Ready: e.Wait <= 0, Admitted: e.Admitted, Refused: e.Refused}
			if e.Interval > 0 {
				es.Cooldown = e.Interval.String()
			}
			if e.Wait > 0 {
				es.RetryAfterSeconds = retrySeconds(e.Wait)
			}
			out.Endpoints = append(out.Endpoints, es)
		}
	}
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	for _, u := range ls.Upstreams {
		us := UpstreamStatus{Key: u.Key, RequestsUsed: u.RequestsUsed, TokensUsed: u.TokensUsed, InFlight: u.InFlight,
			QueueDepth: u.QueueDepth, Admitted: u.Admitted, Upstream429s: u.RateLimitedAnswers, Fallback: u.Fallback}
		if u.Configured {
			us.Limits = budgetMap(u.Budget)
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
			us.NextAllowedSeconds = retrySeconds(d)
		}
		for _, l := range u.Learned {
			m := map[string]any{}
			if l.Resource != "" {
				m["resource"] = l.Resource
			}
			if d := l.BlockedUntil.Sub(now); d > 0 {
				m["blockedForSeconds"] = retrySeconds(d)
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
					qm["resetInSeconds"] = retrySeconds(d)
				}
				m[name] = qm
			}
			out := m
			us.Learned = append(us.Learned, out)
		}
		if len(u.RefusedByScope) > 0 {
			us.RefusedByScope = map[string]int64{}
			for k, v := range u.RefusedByScope {
				us.RefusedByScope[string(k)] = v
			}
		}
		if len(u.RefusedByCode) > 0 {
			us.RefusedByCode = u.RefusedByCode
		}
		if l := s.stats.ups[u.Key]; l != nil && l.n > 0 {
			us.AvgLatencyMs = float64(l.total.Microseconds()) / float64(l.n) / 1000
			us.P95LatencyMs = float64(l.p95().Microseconds()) / 1000
			us.UpstreamTimeMs = l.total.Milliseconds()
		}
		out.Upstreams = append(out.Upstreams, us)
	}
	if out.Upstreams == nil {
		out.Upstreams = []UpstreamStatus{}
	}
	return jsonResult(out), nil
}

func budgetMap(b ratelimit.Budget) map[string]any {
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

func (s *Server) handleSetRateLimit(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	for k := range args {
		switch k {
		case "endpointId", "rateLimitInterval", "upstream", "requestsPerWindow", "window", "minInterval", "maxConcurrent":
		default:
			return argError("unknown argument %q: set_rate_limit takes endpointId with rateLimitInterval, or upstream with requestsPerWindow, window, minInterval, maxConcurrent", k), nil
		}
	}
	st, err := s.wait(ctx)
	if err != nil {
		return s.notReady(err), nil
	}
	durationArg := func(name string) (time.Duration, bool, *mcp.CallToolResult) {
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
	countArg := func(name string) (int, bool, *mcp.CallToolResult) {
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
	id, _ := args["endpointId"].(string)
	up, _ := args["upstream"].(string)
	switch {
	case id != "" && up != "":
		return argError("give endpointId or upstream, not both: change one limit per call"), nil
	case id != "":
		if _, ok := st.cat.Lookup(id); !ok {
			return s.notFound(st, id), nil
		}
		for _, k := range []string{"requestsPerWindow", "window", "minInterval", "maxConcurrent"} {
			if _, ok := args[k]; ok {
				return argError("%s applies to an upstream, not to endpointId", k), nil
			}
		}
		d, ok, bad := durationArg("rateLimitInterval")
		if bad != nil {
			return bad, nil
		}
		if !ok {
			return argError("rateLimitInterval is required with endpointId"), nil
		}
		if err := s.opts.Limiter.SetCooldown(id, d); err != nil {
			return argError("%s", err.Error()), nil
		}
		return jsonResult(map[string]any{"endpointId": id, "cooldown": d.String()}), nil
	case up == "":
		return argError("give endpointId (with rateLimitInterval) or upstream (with budget values)"), nil
	}
	if _, ok := args["rateLimitInterval"]; ok {
		return argError("rateLimitInterval applies to an endpoint: give endpointId"), nil
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
				Hint: "rate_limit_status lists the upstreams (host:port or group names)."}), nil
		}
		b = ratelimit.Budget{Match: up}
	}
	changed := false
	if n, ok, bad := countArg("requestsPerWindow"); bad != nil {
		return bad, nil
	} else if ok {
		b.Requests, changed = n, true
	}
	if n, ok, bad := countArg("maxConcurrent"); bad != nil {
		return bad, nil
	} else if ok {
		b.MaxConcurrent, changed = n, true
	}
	if d, ok, bad := durationArg("window"); bad != nil {
		return bad, nil
	} else if ok {
		b.Window, changed = d, true
	}
	if d, ok, bad := durationArg("minInterval"); bad != nil {
		return bad, nil
	} else if ok {
		b.MinInterval, changed = d, true
	}
	if !changed {
		return argError("give at least one of requestsPerWindow, window, minInterval, maxConcurrent with upstream"), nil
	}
	if err := s.opts.Limiter.SetBudget(b); err != nil {
		return argError("%s", err.Error()), nil
	}
	return jsonResult(map[string]any{"upstream": up, "limits": budgetMap(b)}), nil
}

func (s *Server) handleBeginTask(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, bad := stringArg(req, "name")
	if bad != nil {
		return bad, nil
	}
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	if len(s.stats.tasks) >= 64 {
		return argError("too many open tasks: end one first"), nil
	}
	s.stats.seq++
	id := "task-" + strconv.Itoa(s.stats.seq)
	s.stats.tasks[id] = &task{name: name, start: s.now(), refusals: map[string]int64{}, eps: map[string]bool{}}
	return jsonResult(map[string]any{"taskId": id, "name": name}), nil
}

// TaskReview is end_task's answer.
type TaskReview struct {
	TaskID           string           `json:"taskId"`
	Name             string           `json:"name"`
	WallSeconds      float64          `json:"wallSeconds"`
	UpstreamSeconds  float64          `json:"upstreamSeconds"`
	Calls            int64            `json:"calls"`
	Refusals         map[string]int64 `json:"refusals,omitempty"`
	QueueWaitSeconds float64          `json:"queueWaitSeconds"`
	Tokens           int64            `json:"tokens,omitempty"`
	SerialEstimateS  float64          `json:"serialEstimateSeconds"`
	Concurrency      int              `json:"concurrency"`
	LimitHitAtRound  map[string]any   `json:"limitHitAtRound,omitempty"`
	EndpointsTouched int              `json:"endpointsTouched"`
}

func (s *Server) handleEndTask(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, bad := stringArg(req, "taskId")
	if bad != nil {
		return bad, nil
	}
	conc := 1
	if v, ok := req.GetArguments()["concurrency"]; ok && v != nil {
		n, ok := intArg(v, 1, 1000)
		if !ok {
			return argError("concurrency must be a whole number from 1 to 1000"), nil
		}
		conc = n
	}
	s.stats.mu.Lock()
	t, ok := s.stats.tasks[id]
	delete(s.stats.tasks, id)
	s.stats.mu.Unlock()
	if !ok {
		return errorResult(&ErrorObject{Code: CodeNotFound, Message: fmt.Sprintf("no open task %q", id), Hint: "Start one with begin_task."}), nil
	}
	wall := s.now().Sub(t.start)
	r := TaskReview{TaskID: id, Name: t.name, WallSeconds: wall.Seconds(), UpstreamSeconds: t.upstream.Seconds(),
		Calls: t.calls, Refusals: t.refusals, Concurrency: conc, EndpointsTouched: len(t.eps),
		QueueWaitSeconds: t.wait.Seconds(), Tokens: t.tokens}
	mean := time.Duration(0)
	if t.calls > 0 {
		mean = t.upstream / time.Duration(t.calls)
		r.SerialEstimateS = (time.Duration(t.calls) * mean).Seconds()
	}
	if s.opts.Limiter != nil {
		r.LimitHitAtRound = s.roundsToLimits(t, conc, mean)
	}
	return jsonResult(r), nil
}

// roundsToLimits estimates, for calls made conc at a time in rounds of one
// mean latency, the round at which each configured limit of the upstreams
// the task touched would refuse.
func (s *Server) roundsToLimits(t *task, conc int, mean time.Duration) map[string]any {
	out := map[string]any{}
	if mean <= 0 {
		mean = 100 * time.Millisecond
	}
	ls := s.opts.Limiter.StatusAt(s.now(), func(id string) bool { return t.eps[id] })
	for _, e := range ls.Endpoints {
		if e.Interval > 0 {
			out["cooldown "+e.ID] = spacingRound(conc, e.Interval, mean)
		}
	}
	perCall := int64(1)
	if t.calls > 0 {
		perCall = max(t.tokens/t.calls, 1)
	}
	for _, u := range ls.Upstreams {
		learnedRounds(out, u, conc, mean, perCall, ls.At)
		if !u.Configured {
			continue
		}
		b := u.Budget
		if b.MaxConcurrent > 0 {
			if conc > b.MaxConcurrent {
				out["concurrency "+u.Key] = 1
			} else {
				out["concurrency "+u.Key] = "not reached"
			}
		}
		if b.Requests > 0 && b.Window > 0 {
			roundsPerWindow := int64(b.Window / mean)
			if roundsPerWindow < 1 {
				roundsPerWindow = 1
			}
			if int64(conc)*roundsPerWindow > int64(b.Requests) {
				out["requests "+u.Key] = b.Requests/conc + 1
			} else {
				out["requests "+u.Key] = "not reached"
			}
		}
		if b.MinInterval > 0 {
			out["interval "+u.Key] = spacingRound(conc, b.MinInterval, mean)
		}
	}
	return out
}

// learnedRounds adds to out, for each limit the upstream u advertised or specgate
// inferred from its 429s, the round at which calls made conc at a time, in rounds of one
// mean latency and perCall tokens each, would meet it: "learned requests KEY", "learned
// tokens KEY", "inferred requests KEY" (KEY with the quota's resource when it named one),
// and "learned block KEY" (round 1) while a rate-limited answer still blocks it.
func learnedRounds(out map[string]any, u ratelimit.UpstreamStatus, conc int, mean time.Duration, perCall int64, now time.Time) {
	for _, l := range u.Learned {
		key := u.Key
		if l.Resource != "" {
			key += " " + l.Resource
		}
		if q := l.Requests; q.Limit > 0 {
			out["learned requests "+key] = windowRound(q.Limit, 1, quotaWindow(q, now), conc, mean)
		}
		if q := l.Tokens; q.Limit > 0 {
			out["learned tokens "+key] = windowRound(q.Limit, perCall, quotaWindow(q, now), conc, mean)
		}
		if b := l.Inferred; b.Limit > 0 {
			out["inferred requests "+key] = windowRound(b.Limit, 1, b.Window, conc, mean)
		}
		if l.BlockedUntil.After(now) {
			out["learned block "+key] = 1
		}
	}
}

// quotaWindow is the window of an advertised quota: as stated or inferred, else the time
// until its reset; zero when neither is known.
func quotaWindow(q ratelimit.LearnedQuota, now time.Time) time.Duration {
	if q.Window > 0 {
		return q.Window
	}
	return max(q.Reset.Sub(now), 0)
}

// windowRound is the round at which calls of cost each, conc a round, spend limit within
// one window (a window of zero: never renewed), or "not reached".
func windowRound(limit, cost int64, window time.Duration, conc int, mean time.Duration) any {
	perRound := int64(conc) * cost
	if window > 0 && perRound*max(int64(window/mean), 1) <= limit {
		return "not reached"
	}
	return limit/perRound + 1
}

// spacingRound is the round at which a limit that spaces calls by gap (a
// cooldown, a minimum interval) refuses one: the first call always passes;
// the second meets the gap in the same round with concurrency, else in the
// next when a round is shorter than the gap.
func spacingRound(conc int, gap, mean time.Duration) any {
	switch {
	case conc > 1:
		return 1
	case gap > mean:
		return 2
	}
	return "not reached"
}
