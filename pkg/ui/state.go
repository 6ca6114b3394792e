package ui

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Source gives the page its figures. The page asks it once a second,
// whatever the number of viewers, and asks it to cancel a run only for a
// signed-in person with a valid CSRF token.
type Source interface {
	// State returns the figures as they stand at now.
	State(ctx context.Context, now time.Time) State
	// CancelRun stops the run id in this process, whoever started it, for
	// the person by (whom the audit log names); an unknown id is
	// ErrNotFound.
	CancelRun(ctx context.Context, id string, by Person) error
}

// ErrNotFound is CancelRun's error for an id no run in this process has.
var ErrNotFound = errors.New("not found")

// State is what the page shows, apart from what the page keeps itself
// (the samples of each upstream and the audit tail).
type State struct {
	Upstreams  []Upstream  `json:"upstreams"`
	Runs       []Run       `json:"runs"`
	Principals []Principal `json:"principals"`
}

// Principal is one caller's calls since the process started.
type Principal struct {
	Name  string `json:"principal"`
	Calls int64  `json:"calls"`
	// Refused counts refusals by scope (proxy: specgate's limits;
	// upstream: the API's).
	Refused map[string]int64 `json:"refusedByScope,omitempty"`
	// QueueTurns counts the calls that waited in a queue, QueueWaitMs how
	// long they waited in all.
	QueueTurns  int64 `json:"queueTurns"`
	QueueWaitMs int64 `json:"queueWaitMs"`
}

// Upstream is one upstream as rate_limit_status shows it.
type Upstream struct {
	// Key names the upstream as rate_limit_status does (host:port or group).
	Key string `json:"upstream"`
	// Used and Limit are the requests spent in the window and the budget
	// (0: no requests budget). Window is the budget's window ("1m").
	Used   int    `json:"used"`
	Limit  int    `json:"limit,omitempty"`
	Window string `json:"window,omitempty"`
	// WindowSeconds is Window in seconds, for the quota line.
	WindowSeconds float64 `json:"windowSeconds,omitempty"`
	InFlight      int     `json:"inFlight"`
	QueueDepth    int     `json:"queueDepth"`
	// Admitted and Upstream429s count since the process started; the page
	// charts their change per second.
	Admitted       int64            `json:"admitted"`
	Upstream429s   int64            `json:"upstream429s"`
	RefusedByCode  map[string]int64 `json:"refusedByCode,omitempty"`
	NextAllowedSec float64          `json:"nextAllowedInSeconds,omitempty"`
	Fallback       bool             `json:"fallback,omitempty"`
	Learned        []Learned        `json:"learned,omitempty"`
	Shadow         *Shadow          `json:"shadow,omitempty"`
}

// Learned is a quota the upstream advertised, and the header that said so.
type Learned struct {
	Resource  string `json:"resource,omitempty"`
	Kind      string `json:"kind"` // requests, tokens or block
	Limit     int64  `json:"limit,omitempty"`
	Remaining *int64 `json:"remaining,omitempty"`
	// ResetInSeconds is when the quota resets, or a block ends.
	ResetInSeconds float64 `json:"resetInSeconds,omitempty"`
	Source         string  `json:"source,omitempty"`
}

// Shadow is a shadow budget's count (enforce: false).
type Shadow struct {
	Calls        int64            `json:"calls"`
	WouldRefuse  int64            `json:"wouldRefuse"`
	ByKind       map[string]int64 `json:"byKind,omitempty"`
	RequestsUsed int              `json:"requestsUsed"`
	Limit        int              `json:"limit,omitempty"`
}

// Run is a run_script run in flight in this process.
type Run struct {
	ID         string         `json:"runId"`
	Principal  string         `json:"principal"`
	Status     string         `json:"status"`
	Done       int            `json:"done"`
	Total      int            `json:"total"`
	Note       string         `json:"note,omitempty"`
	ETASeconds *float64       `json:"etaSeconds,omitempty"`
	Calls      int            `json:"calls"`
	ByStatus   map[string]int `json:"byStatus,omitempty"`
	StartedAt  string         `json:"startedAt,omitempty"`
	// WaitingForApproval names the approvals on this page the run waits
	// for; Note says so too.
	WaitingForApproval []string `json:"waitingForApproval,omitempty"`
}

// Sample is one second of an upstream: admitted calls and upstream 429s in
// that second, the queue's depth and the budget as they stood.
type Sample struct {
	At       int64 // Unix seconds
	Admitted int64
	Queue    int
	Got429   int64
	Used     int
	Limit    int
}

// MarshalJSON writes a sample as [at, admitted, queue, 429s, used, limit]:
// 600 samples an upstream, each second, to each viewer.
func (s Sample) MarshalJSON() ([]byte, error) {
	return json.Marshal([6]int64{s.At, s.Admitted, int64(s.Queue), s.Got429, int64(s.Used), int64(s.Limit)})
}
