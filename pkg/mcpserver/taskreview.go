package mcpserver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/codes"
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
		return errorResult(&ErrorObject{Code: codes.NotFound, Message: fmt.Sprintf("no open task %q", id), Hint: "Start one with begin_task."}), nil
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
// mean latency, the round at which each limit of the endpoints and
// upstreams the task touched would refuse (ratelimit.Status.Rounds).
func (s *Server) roundsToLimits(t *task, conc int, mean time.Duration) map[string]any {
	perCall := int64(1)
	if t.calls > 0 {
		perCall = max(t.tokens/t.calls, 1)
	}
	return s.call.Limiter.StatusAt(s.now(), func(id string) bool { return t.eps[id] }).Rounds(conc, mean, perCall)
}
