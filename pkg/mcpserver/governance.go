package mcpserver

import (
	"context"
	"errors"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
)

// This file holds what the governance tools share: upstream keys, an
// endpoint's readiness, the latency and task counters, and the tools'
// registration. The tools live in status.go, tuning.go and taskreview.go.

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
	if s.call.Limiter == nil {
		return 0
	}
	return s.call.Limiter.ReadyAt(id, now)
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
	if s.call.Limiter == nil {
		return out
	}
	now := s.now()
	if w := s.call.Limiter.ReadyAt(e.ID, now); w > 0 {
		out.Ready = false
		out.RetryAfterSeconds = ratelimit.WaitSeconds(w)
	}
	st := s.call.Limiter.StatusAt(now, func(id string) bool { return id == e.ID })
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
	// who counts each principal's calls for the governance page, at most
	// maxPrincipalStats of them (the longest idle gives way).
	who map[string]*principalStats
}

// maxPrincipalStats bounds the principals the page counts.
const maxPrincipalStats = 1000

type principalStats struct {
	calls, queueTurns int64
	queueWait         time.Duration
	refused           map[string]int64 // by scope
	last              time.Time
}

// principal returns p's counts, making room for them. The caller holds mu.
func (st *stats) principal(p string) *principalStats {
	ps := st.who[p]
	if ps != nil {
		ps.last = time.Now()
		return ps
	}
	if len(st.who) >= maxPrincipalStats {
		var idle string
		var at time.Time
		for k, v := range st.who {
			if idle == "" || v.last.Before(at) {
				idle, at = k, v.last
			}
		}
		delete(st.who, idle)
	}
	ps = &principalStats{refused: map[string]int64{}, last: time.Now()}
	st.who[p] = ps
	return ps
}

type latency struct {
	n       int64
	total   time.Duration
	samples []time.Duration // the last 256, for p95
	next    int
}

type task struct {
	// owner is the principal that began the task: only its calls count,
	// and only it may end the task.
	owner    string
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
	return &stats{ups: map[string]*latency{}, tasks: map[string]*task{}, who: map[string]*principalStats{}}
}

func (st *stats) observe(principal string, e *spec.Endpoint, up string, d, queueWait time.Duration, tokens int64) {
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
	ps := st.principal(principal)
	ps.calls++
	if queueWait > 0 {
		ps.queueTurns++
		ps.queueWait += queueWait
	}
	for _, t := range st.tasks {
		if t.owner != principal {
			continue
		}
		t.calls++
		t.upstream += d
		t.wait += queueWait
		t.tokens += tokens
		t.eps[e.ID] = true
	}
}

func (st *stats) refused(principal string, err error) {
	code := "error"
	scope := "proxy"
	var le *ratelimit.LimitError
	var qe *ratelimit.QueueError
	var ue *invoke.UpstreamRateLimitError
	switch {
	case errors.As(err, &le):
		code, scope = limitCode(le.Scope), string(le.Scope)
	case errors.As(err, &qe):
		code = queueCode(qe.Reason)
	case errors.As(err, &ue):
		code, scope = codes.UpstreamRateLimit, "upstream"
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.principal(principal).refused[scope]++
	for _, t := range st.tasks {
		if t.owner == principal {
			t.refusals[scope+"/"+code]++
		}
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
