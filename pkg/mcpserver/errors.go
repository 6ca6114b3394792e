package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/script"
)

// ErrorObject is the error a tool result carries, as DESIGN.md lays it out.
type ErrorObject struct {
	Code              string       `json:"code"`
	Message           string       `json:"message"`
	Hint              string       `json:"hint,omitempty"`
	Retryable         bool         `json:"retryable"`
	RetryAfterSeconds float64      `json:"retryAfterSeconds,omitempty"`
	RetryAt           string       `json:"retryAt,omitempty"`
	Scope             string       `json:"scope,omitempty"`
	Limit             *LimitInfo   `json:"limit,omitempty"`
	Status            int          `json:"status,omitempty"`
	Body              any          `json:"body,omitempty"`
	Problems          []string     `json:"problems,omitempty"`
	Suggestions       []Suggestion `json:"suggestions,omitempty"`
	// Line is the script's line a run_script failure points at.
	Line int `json:"line,omitempty"`
	// Calls and Logs say what a run_script run that did not finish had
	// already done; RunID names it in the audit log.
	Calls *script.Calls `json:"calls,omitempty"`
	Logs  []string      `json:"logs,omitempty"`
	// LogsDropped counts the last lines of Logs left out to fit maxBytes.
	LogsDropped int    `json:"logsDropped,omitempty"`
	RunID       string `json:"runId,omitempty"`
	// RequestID names an internal error in the server log.
	RequestID string `json:"requestId,omitempty"`
}

// LimitInfo names the limit that bound a refused call.
type LimitInfo struct {
	Kind     string `json:"kind"`
	Key      string `json:"key"`
	Interval string `json:"interval,omitempty"`
	Limit    int64  `json:"limit,omitempty"`
	Window   string `json:"window,omitempty"`
	Source   string `json:"source,omitempty"`
}

// Suggestion is an endpoint the model can call instead, now.
type Suggestion struct {
	ID     string `json:"id"`
	Method string `json:"method"`
	Path   string `json:"path"`
}

type errorEnvelope struct {
	Error *ErrorObject `json:"error"`
}

// errorResult wraps an error object as a tool result with isError set, the
// object both as structuredContent and as JSON text.
func errorResult(obj *ErrorObject) *mcp.CallToolResult {
	env := errorEnvelope{Error: obj}
	text, _ := json.Marshal(env)
	res := mcp.NewToolResultStructured(env, string(text))
	res.IsError = true
	return res
}

// jsonResult returns v as structuredContent and as JSON text.
func jsonResult(v any) *mcp.CallToolResult {
	text, err := json.Marshal(v)
	if err != nil {
		// specgate's own failure: the upstream answered, its answer is stored
		return errorResult(&ErrorObject{Code: codes.Internal, Message: "the result cannot be encoded as JSON"})
	}
	return mcp.NewToolResultStructured(json.RawMessage(text), string(text))
}

// limitCode is the code of a refusal by a limit of scope: rate_limit for
// specgate's own limits, upstream_rate_limit for what the upstream said.
func limitCode(s ratelimit.Scope) string {
	if s == ratelimit.ScopeUpstream {
		return codes.UpstreamRateLimit
	}
	return codes.RateLimit
}

// queueCode is the code of a call the wait queue could not hold: one the
// queue dropped as the server shut down is queue_full too (retryable, sent
// nowhere), its message and hint saying why.
func queueCode(r ratelimit.QueueReason) string {
	if r == ratelimit.QueueFull || r == ratelimit.QueueShutdown {
		return codes.QueueFull
	}
	return codes.QueueTimeout
}

// jqCode is timeout for a filter that ran too long, else validation_failed:
// the filter is the model's to fix.
func jqCode(e *answer.JQError) string {
	if e.Kind == answer.JQTimeout {
		return codes.Timeout
	}
	return codes.ValidationFailed
}

// errorKinds are the errors the packages return for the model to read,
// each with its code, tried in order (the first match wins: a JQError
// wraps the context error of its timeout). What else the model reads, the
// error says itself through the methods errorObject asks for; a kind adds
// only the fields that are its own.
var errorKinds = []errorKind{
	typed(func(e *ratelimit.LimitError) string { return limitCode(e.Scope) }, func(e *ratelimit.LimitError, obj *ErrorObject) {
		obj.Limit = &LimitInfo{Kind: string(e.Kind), Key: e.Key, Limit: e.Limit, Source: e.Source}
		if e.Interval > 0 {
			obj.Limit.Interval = e.Interval.String()
		}
		if e.Window > 0 {
			obj.Limit.Window = e.Window.String()
		}
	}),
	typed(func(e *ratelimit.QueueError) string { return queueCode(e.Reason) }, nil),
	typed(func(*invoke.ArgError) string { return codes.ValidationFailed }, func(e *invoke.ArgError, obj *ErrorObject) {
		obj.Problems = boundProblems(e.Problems)
	}),
	typed(func(*answer.ArgError) string { return codes.ValidationFailed }, func(e *answer.ArgError, obj *ErrorObject) {
		obj.Problems = boundProblems(e.Problems)
	}),
	typed(jqCode, func(e *answer.JQError, obj *ErrorObject) {
		obj.Message = clip(obj.Message, 500)
		if e.Kind != answer.JQTimeout {
			obj.Problems = []string{clip(e.Msg, 300)}
		}
	}),
	typed(func(*answer.AnswerNotFoundError) string { return codes.NotFound }, nil),
	typed(func(*invoke.UpstreamRateLimitError) string { return codes.UpstreamRateLimit }, func(e *invoke.UpstreamRateLimitError, obj *ErrorObject) {
		obj.Status, obj.Limit = e.StatusCode, &LimitInfo{Kind: string(ratelimit.KindLearned)}
	}),
	typed(func(*invoke.AuthError) string { return codes.AuthError }, nil),
	typed(func(*invoke.HTTPError) string { return codes.HTTPError }, func(e *invoke.HTTPError, obj *ErrorObject) {
		obj.Status, obj.Body = e.StatusCode, e.Body
	}),
	typed(func(*invoke.UnreachableError) string { return codes.Unreachable }, nil),
	typed(func(*invoke.TimeoutError) string { return codes.Timeout }, nil),
	sentinel(context.DeadlineExceeded, &ErrorObject{Code: codes.Timeout, Message: "the call ran past its deadline", Retryable: true}),
	sentinel(context.Canceled, &ErrorObject{Code: codes.Cancelled, Message: "the call was cancelled"}),
}

// errorKind is the error object of err when err is of the kind, else nil.
type errorKind func(err error, now time.Time) *ErrorObject

// What a typed error may say of itself, a method for each field of the
// error object; an error without the method leaves the field empty.
type (
	hinter  interface{ Hint() string }               // what to do next
	retrier interface{ Retryable() bool }            // whether the same call may succeed later
	waiter  interface{ RetryAfterSeconds() float64 } // how long to wait first, never rounded down
	refuser interface{ RefusedBy() ratelimit.Scope } // who refused it: specgate or the upstream
)

// Each error answers for the fields the model reads of it: a method
// renamed away would drop a hint or a wait without a word.
type (
	refusal interface { // a refused call: who refused it, and the wait
		hinter
		retrier
		waiter
		refuser
	}
	failure interface { // a call that failed, perhaps only for now
		hinter
		retrier
	}
)

var (
	_ refusal = (*ratelimit.LimitError)(nil)
	_ refusal = (*ratelimit.QueueError)(nil)
	_ refusal = (*invoke.UpstreamRateLimitError)(nil)
	_ failure = (*invoke.HTTPError)(nil)
	_ failure = (*invoke.UnreachableError)(nil)
	_ failure = (*invoke.TimeoutError)(nil)
	_ hinter  = (*invoke.ArgError)(nil)
	_ hinter  = (*answer.ArgError)(nil)
	_ hinter  = (*answer.JQError)(nil)
	_ hinter  = (*answer.AnswerNotFoundError)(nil)
	_ hinter  = (*invoke.AuthError)(nil)
)

// Bounds of the text an error object repeats from an error.
const (
	maxMessageBytes = 2000
	maxHintBytes    = 1000
)

// typed is the kind of the errors of type E: code gives the wire code of
// one, and fill, if not nil, adds what only E has.
func typed[E error](code func(E) string, fill func(E, *ErrorObject)) errorKind {
	return func(err error, now time.Time) *ErrorObject {
		e, ok := errors.AsType[E](err)
		if !ok {
			return nil
		}
		obj := errorObject(e, now)
		obj.Code = code(e)
		if fill != nil {
			fill(e, obj)
		}
		return obj
	}
}

// sentinel is the kind of the errors that are target, answered with obj.
func sentinel(target error, obj *ErrorObject) errorKind {
	return func(err error, _ time.Time) *ErrorObject {
		if !errors.Is(err, target) {
			return nil
		}
		dup := *obj
		return &dup
	}
}

// errorObject is what e says of itself: its message, and each field for
// which it has a method. RetryAt is now plus the wait.
func errorObject(e error, now time.Time) *ErrorObject {
	obj := &ErrorObject{Message: clip(e.Error(), maxMessageBytes)}
	if h, ok := e.(hinter); ok {
		obj.Hint = clip(h.Hint(), maxHintBytes)
	}
	if r, ok := e.(retrier); ok {
		obj.Retryable = r.Retryable()
	}
	if w, ok := e.(waiter); ok {
		obj.RetryAfterSeconds = w.RetryAfterSeconds()
		obj.RetryAt = now.Add(time.Duration(obj.RetryAfterSeconds * float64(time.Second))).UTC().Format(time.RFC3339Nano)
	}
	if r, ok := e.(refuser); ok {
		obj.Scope = string(r.RefusedBy())
	}
	return obj
}

// mapError turns an error from a package into the error object the model
// reads. It is the one place where Go errors become tool errors. An error
// of no kind in errorKinds is a fault of specgate's: its text, which may
// say anything, goes to log in full under a new request id, and the model
// reads only the id (code internal).
func mapError(log *slog.Logger, err error, now time.Time) *ErrorObject {
	if obj := knownError(err, now); obj != nil {
		return obj
	}
	id := newRequestID()
	log.Error("tool call failed inside specgate", "requestId", id, "err", err)
	return internalError(id)
}

// knownError is the error object of err's kind, or nil when err is of none.
func knownError(err error, now time.Time) *ErrorObject {
	for _, kind := range errorKinds {
		if obj := kind(err, now); obj != nil {
			return obj
		}
	}
	return nil
}

// codeOf is the code mapError gives err, without logging: for an
// attempt whose error the call's own answer reports.
func codeOf(err error) string {
	if obj := knownError(err, time.Time{}); obj != nil {
		return obj.Code
	}
	return codes.Internal
}

// internalError is the answer to a failure of specgate's own, logged under
// request id id.
func internalError(id string) *ErrorObject {
	return &ErrorObject{Code: codes.Internal, Message: "specgate failed on this call; the server log has request id " + id,
		Hint: "The fault is specgate's, not the call's: tell the user the requestId, which names it in the server log.", RequestID: id}
}

// mapError is mapError with the server's log and clock.
func (s *Server) mapError(err error) *ErrorObject { return mapError(s.log, err, s.now()) }

// newRequestID names one internal error in the log and in its answer.
func newRequestID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "req-" + hex.EncodeToString(b[:])
}

// maxProblemsShown bounds the problems one error repeats: the first few,
// then a count of the rest.
const maxProblemsShown = 10

func boundProblems(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	n := min(len(list), maxProblemsShown)
	out := make([]string, 0, n+1)
	for _, p := range list[:n] {
		out = append(out, clip(p, 300))
	}
	if len(list) > n {
		out = append(out, "and "+strconv.Itoa(len(list)-n)+" more")
	}
	return out
}
