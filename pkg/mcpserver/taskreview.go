package mcpserver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/ratelimit"
)

// Open tasks are bounded per principal, so one cannot take them all from
// the others, and in all.
const (
	maxTasksPerPrincipal = 64
	maxTasks             = 4096
)

func (s *Server) handleBeginTask(ctx context.Context, req mcp.CallToolRequest, a *BeginTaskArgs) (*mcp.CallToolResult, error) {
	if bad := requireString("name", a.Name); bad != nil {
		return bad, nil
	}
	name := a.Name
	owner := principalOf(ctx)
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	open := 0
	for _, t := range s.stats.tasks {
		if t.owner == owner {
			open++
		}
	}
	if open >= maxTasksPerPrincipal || len(s.stats.tasks) >= maxTasks {
		return argError("too many open tasks: end one first"), nil
	}
	s.stats.seq++
	id := "task-" + strconv.Itoa(s.stats.seq)
	s.stats.tasks[id] = &task{owner: owner, name: name, start: s.now(), refusals: map[string]int64{}, eps: map[string]bool{}}
	return jsonResult(TaskStarted{TaskID: id, Name: name}), nil
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

func (s *Server) handleEndTask(ctx context.Context, req mcp.CallToolRequest, a *EndTaskArgs) (*mcp.CallToolResult, error) {
	if bad := requireString("taskId", a.TaskID); bad != nil {
		return bad, nil
	}
	id := a.TaskID
	conc := 1
	if a.Concurrency != nil {
		n, ok := intArg(*a.Concurrency, 1, 1000)
		if !ok {
			return argError("concurrency must be a whole number from 1 to 1000"), nil
		}
		conc = n
	}
	s.stats.mu.Lock()
	t, ok := s.stats.tasks[id]
	ok = ok && t.owner == principalOf(ctx) // another's task is answered as no task
	if ok {
		delete(s.stats.tasks, id)
	}
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
	if s.call.Limiter != nil {
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
	ls := s.call.Limiter.StatusAt(s.now(), func(id string) bool { return t.eps[id] })
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
