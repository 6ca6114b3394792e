package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/script"
)

// Error codes the model reads: a closed set, named in the tool descriptions.
// They are defined here only: the packages below return typed errors (a
// limit's scope, a queue's reason), and this file turns them into codes.
const (
	CodeRateLimit         = "rate_limit"
	CodeUpstreamRateLimit = "upstream_rate_limit"
	CodeQueueFull         = "queue_full"
	CodeQueueTimeout      = "queue_timeout"
	CodeTimeout           = "timeout"
	CodeCancelled         = "cancelled"
	CodeValidationFailed  = "validation_failed"
	CodeNotFound          = "not_found"
	CodeHTTPError         = "http_error"
	CodeUnreachable       = "upstream_unreachable"
	CodeAuthError         = "auth_error"
	// CodeScriptError is a run_script program that did not finish: a
	// syntax error, an uncaught throw, memory past its bound.
	CodeScriptError = script.CodeScriptError
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
	RunID string        `json:"runId,omitempty"`
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
		return errorResult(&ErrorObject{Code: CodeHTTPError, Message: "result cannot be encoded as JSON"})
	}
	return mcp.NewToolResultStructured(json.RawMessage(text), string(text))
}

// retrySeconds turns a wait into the seconds the model reads: waiting
// exactly that long must succeed (ratelimit.WaitSeconds, the one rounding).
func retrySeconds(d time.Duration) float64 { return ratelimit.WaitSeconds(d) }

// limitCode is the code of a refusal by a limit of scope: rate_limit for
// specgate's own limits, upstream_rate_limit for what the upstream said.
func limitCode(s ratelimit.Scope) string {
	if s == ratelimit.ScopeUpstream {
		return CodeUpstreamRateLimit
	}
	return CodeRateLimit
}

// queueCode is the code of a call the wait queue could not hold: one the
// queue dropped as the server shut down is queue_full too (retryable, sent
// nowhere), its message and hint saying why.
func queueCode(r ratelimit.QueueReason) string {
	if r == ratelimit.QueueFull || r == ratelimit.QueueShutdown {
		return CodeQueueFull
	}
	return CodeQueueTimeout
}

// mapError turns an error from a package into the error object the model
// reads. It is the one place where Go errors become tool errors.
func mapError(err error, now time.Time) *ErrorObject {
	var (
		le  *ratelimit.LimitError
		qe  *ratelimit.QueueError
		ae  *invoke.ArgError
		he  *invoke.HTTPError
		ure *invoke.UpstreamRateLimitError
		ue  *invoke.UnreachableError
		te  *invoke.TimeoutError
		aue *invoke.AuthError
		jqe *answer.JQError
		anf *answer.AnswerNotFoundError
	)
	switch {
	case errors.As(err, &le):
		secs := retrySeconds(le.RetryAfter)
		obj := &ErrorObject{
			Code:              limitCode(le.Scope),
			Message:           le.Error(),
			Retryable:         true,
			RetryAfterSeconds: secs,
			RetryAt:           now.Add(time.Duration(secs * float64(time.Second))).UTC().Format(time.RFC3339Nano),
			Scope:             string(le.Scope),
			Limit:             &LimitInfo{Kind: string(le.Kind), Key: le.Key, Limit: le.Limit, Source: le.Source},
		}
		if le.Interval > 0 {
			obj.Limit.Interval = le.Interval.String()
		}
		if le.Window > 0 {
			obj.Limit.Window = le.Window.String()
		}
		if le.Scope == ratelimit.ScopeUpstream {
			obj.Hint = "The upstream API set this limit; raising specgate's limits will not help. Wait, then call again."
		} else {
			obj.Hint = "Wait for the " + string(le.Kind) + " limit, then call it again."
		}
		return obj
	case errors.As(err, &qe):
		secs := retrySeconds(qe.RetryAfter)
		hint := "Too many calls are waiting for this upstream. Wait, then call again, or call another API meanwhile."
		if qe.Reason == ratelimit.QueueShutdown {
			hint = "This server is shutting down and sent nothing for this call: call it again (another replica, or this one restarted, serves it)."
		}
		return &ErrorObject{
			Code:              queueCode(qe.Reason),
			Message:           qe.Error(),
			Retryable:         true,
			RetryAfterSeconds: secs,
			RetryAt:           now.Add(time.Duration(secs * float64(time.Second))).UTC().Format(time.RFC3339Nano),
			Scope:             "proxy",
			Hint:              hint,
		}
	case errors.As(err, &ae):
		return &ErrorObject{
			Code:      CodeValidationFailed,
			Message:   clip(ae.Error(), 2000),
			Problems:  boundProblems(ae.Problems),
			Retryable: false,
			Hint:      clip(ae.Hint(), 1000),
		}
	case errors.As(err, &jqe):
		switch jqe.Kind {
		case answer.JQTimeout:
			return &ErrorObject{Code: CodeTimeout, Message: clip(jqe.Error(), 500), Retryable: false,
				Hint: "The jq filter ran past its time limit: select fewer or simpler fields."}
		case answer.JQTooLarge:
			return &ErrorObject{Code: CodeValidationFailed, Message: clip(jqe.Error(), 500), Problems: []string{clip(jqe.Msg, 300)},
				Hint: "The jq result is too large: pick fewer fields or items."}
		}
		return &ErrorObject{Code: CodeValidationFailed, Message: clip(jqe.Error(), 500), Problems: []string{clip(jqe.Msg, 300)},
			Hint: "Fix the jq filter: a read-only subset is allowed (paths, pipes, map/select, object and array construction, common builtins)."}
	case errors.As(err, &anf):
		return &ErrorObject{Code: CodeNotFound, Message: clip(anf.Error(), 300), Retryable: false, Hint: anf.Hint()}
	case errors.As(err, &ure):
		obj := &ErrorObject{
			Code:      CodeUpstreamRateLimit,
			Message:   ure.Error(),
			Retryable: true,
			Scope:     "upstream",
			Status:    ure.StatusCode,
			Hint:      "The upstream API refused the call for its rate limit; raising specgate's limits will not help. Wait, then call again.",
			Limit:     &LimitInfo{Kind: "learned"},
		}
		wait := ure.RetryAfter
		if wait <= 0 {
			wait = time.Second
		}
		obj.RetryAfterSeconds = retrySeconds(wait)
		obj.RetryAt = now.Add(time.Duration(obj.RetryAfterSeconds * float64(time.Second))).UTC().Format(time.RFC3339Nano)
		return obj
	case errors.As(err, &aue):
		return &ErrorObject{Code: CodeAuthError, Message: aue.Error(), Retryable: false,
			Hint: "Credentials are missing or were refused: the operator must set them in specgate's config."}
	case errors.As(err, &he):
		return &ErrorObject{Code: CodeHTTPError, Message: he.Error(), Status: he.StatusCode, Body: he.Body,
			Retryable: he.StatusCode >= 500,
			Hint:      httpHint(he.StatusCode)}
	case errors.As(err, &ue):
		return &ErrorObject{Code: CodeUnreachable, Message: ue.Error(), Retryable: true,
			Hint: "The upstream could not be reached. Try again later."}
	case errors.As(err, &te):
		return &ErrorObject{Code: CodeTimeout, Message: te.Error(), Retryable: true,
			Hint: "The upstream did not answer in time. Try again, perhaps asking for less."}
	case errors.Is(err, context.DeadlineExceeded):
		return &ErrorObject{Code: CodeTimeout, Message: "the call ran past its deadline", Retryable: true}
	case errors.Is(err, context.Canceled):
		return &ErrorObject{Code: CodeCancelled, Message: "the call was cancelled", Retryable: false}
	}
	return &ErrorObject{Code: CodeHTTPError, Message: "the call failed: " + err.Error(), Retryable: false}
}

func httpHint(status int) string {
	switch {
	case status == 404:
		return "The upstream found nothing there: check the path parameters."
	case status == 400 || status == 422:
		return "The upstream rejected the arguments: read its message, fix them, then call again."
	case status >= 500:
		return "The upstream failed; it may succeed if tried again later."
	}
	return ""
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
