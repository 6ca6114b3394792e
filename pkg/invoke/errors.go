package invoke

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/specgate/specgate/pkg/ratelimit"
)

// maxProblems bounds the problems an ArgError lists; the rest are counted.
const maxProblems = 20

// problemNameLen bounds a name a problem repeats: the model may send a
// 100 KB parameter or header name, and cutting the whole problem instead
// would cut off what is wrong with it.
const problemNameLen = 64

// quoteName quotes a name for a problem, cut to problemNameLen bytes.
func quoteName(name string) string { return strconv.Quote(problemName(name)) }

// problemName is name cut to problemNameLen bytes on a rune boundary,
// marked "…".
func problemName(name string) string {
	if len(name) <= problemNameLen {
		return name
	}
	return name[:runeCut(name, problemNameLen)] + "…"
}

// ArgError reports arguments that do not fit the operation: undeclared or
// missing parameters, schema violations, an undeclared content type, a
// header the model may not set. It is returned by Prepare before anything is
// sent. The MCP layer maps it to validation_failed.
type ArgError struct {
	// Endpoint is the endpoint id.
	Endpoint string
	// Problems lists every problem, one short sentence each.
	Problems []string
	// Declared names the parameters the operation declares, set when an
	// argument was not among them.
	Declared []string
	// Closest pairs an undeclared name that looks like a misspelling with
	// the declared name it is closest to: {"orderID", "orderId"}.
	Closest [][2]string
}

func (e *ArgError) Error() string {
	var b strings.Builder
	b.WriteString("invalid arguments for ")
	b.WriteString(e.Endpoint)
	b.WriteString(": ")
	n := len(e.Problems)
	shown := e.Problems
	if n > maxProblems {
		shown = shown[:maxProblems]
	}
	b.WriteString(strings.Join(shown, "; "))
	if n > maxProblems {
		fmt.Fprintf(&b, "; and %d more", n-maxProblems)
	}
	return b.String()
}

// Hint says what to do next.
func (e *ArgError) Hint() string {
	if len(e.Declared) > 0 {
		var b strings.Builder
		for i, c := range e.Closest {
			if i == 3 {
				break
			}
			fmt.Fprintf(&b, "%q is not declared: did you mean %q? ", c[0], c[1])
		}
		b.WriteString("Use only the declared parameters: " + strings.Join(e.Declared, ", ") + ". Call inspect for their schemas.")
		return b.String()
	}
	return "Fix the arguments (call inspect for the operation's schema) and call again."
}

// HTTPError is an upstream answer with status 4xx or 5xx that is neither a
// rate limit nor an authentication refusal. Do returns it together with the
// Result. The MCP layer maps it to http_error.
type HTTPError struct {
	StatusCode int
	// Body is a bounded excerpt of the response body as text.
	Body string
}

func (e *HTTPError) Error() string {
	s := "upstream answered " + strconv.Itoa(e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		s += " " + t
	}
	return s
}

// Retryable reports whether the same call may succeed later (5xx, 408).
func (e *HTTPError) Retryable() bool {
	return e.StatusCode >= 500 || e.StatusCode == http.StatusRequestTimeout
}

// Hint says what the status asks of the caller; "" when it asks nothing
// in particular.
func (e *HTTPError) Hint() string {
	switch s := e.StatusCode; {
	case s == http.StatusNotFound:
		return "The upstream found nothing there: check the path parameters."
	case s == http.StatusBadRequest || s == http.StatusUnprocessableEntity:
		return "The upstream rejected the arguments: read its message, fix them, then call again."
	case s >= 500:
		return "The upstream failed; it may succeed if tried again later."
	}
	return ""
}

// UpstreamRateLimitError is a 429, or a 403 the upstream marks as a rate
// limit (GitHub style). Do returns it together with the Result, whose
// RawHeaders the rate limiter should read. The MCP layer maps it to
// upstream_rate_limit.
type UpstreamRateLimitError struct {
	StatusCode int
	// RetryAfter is how long the upstream asked to wait, from Retry-After
	// (seconds or an HTTP date) or a rate-limit reset header; zero when it
	// said nothing usable.
	RetryAfter time.Duration
	// RetryAt is the moment RetryAfter ends; zero when unknown.
	RetryAt time.Time
	// Unreadable is set when the upstream sent a Retry-After that is no
	// wait at all (negative, or not a number or a date): it asked for a
	// wait it could not state, so the call is not retried.
	Unreadable bool
	// Body is a bounded excerpt of the response body as text.
	Body string
}

func (e *UpstreamRateLimitError) Error() string {
	s := "upstream refused the call with " + strconv.Itoa(e.StatusCode) + ": rate limited"
	switch {
	case e.RetryAfter > 0:
		s += "; retry in " + strconv.FormatFloat(ratelimit.WaitSeconds(e.RetryAfter), 'f', -1, 64) + " seconds"
	case e.Unreadable:
		s += "; its Retry-After states no usable wait, so the call was not retried"
	}
	return s
}

// RetryAfterSeconds is the wait before the call may go again, as
// ratelimit.WaitSeconds: RetryAfter, or a second when the upstream stated
// no usable wait.
func (e *UpstreamRateLimitError) RetryAfterSeconds() float64 {
	if e.RetryAfter <= 0 {
		return ratelimit.WaitSeconds(time.Second)
	}
	return ratelimit.WaitSeconds(e.RetryAfter)
}

// Retryable reports that the call may go again after RetryAfterSeconds.
func (e *UpstreamRateLimitError) Retryable() bool { return true }

// RefusedBy is ratelimit.ScopeUpstream: the upstream refused the call.
func (e *UpstreamRateLimitError) RefusedBy() ratelimit.Scope { return ratelimit.ScopeUpstream }

// Hint says that only waiting helps: the limit is the upstream's.
func (e *UpstreamRateLimitError) Hint() string {
	return "The upstream API refused the call for its rate limit; raising specgate's limits will not help. Wait, then call again."
}

// UnreachableError is a failure to reach the upstream: DNS, connect, TLS,
// or a refused target (private network, host outside the allowed ones).
// The MCP layer maps it to upstream_unreachable.
type UnreachableError struct {
	Host   string
	Reason string
	// Fix, when set, is what the operator must change for the call to go
	// out (a key or flag): waiting would not help, so it is the hint and
	// the error is not retryable.
	Fix string
}

func (e *UnreachableError) Error() string {
	return "upstream " + e.Host + " unreachable: " + e.Reason
}

// Retryable reports that the upstream may be reached later: not when the
// config refused it.
func (e *UnreachableError) Retryable() bool { return e.Fix == "" }

// Hint says what to change when the config refused the call, else to try
// again later.
func (e *UnreachableError) Hint() string {
	if e.Fix != "" {
		return e.Fix
	}
	return "The upstream could not be reached. Try again later."
}

// privateFix is the hint of a call block_private_networks refused.
func privateFix(spec string) string {
	return "block_private_networks refused this address, which came from the spec or a redirect. " +
		"An address the operator writes is allowed: give it as --base-url, or as specs[" + spec + "].base_url in the config; " +
		"or set block_private_networks: false (globally or on the spec)."
}

// TimeoutError is a call that ran past its deadline before the response
// headers arrived. (A body cut by the deadline is a truncated Result, not
// an error.) The MCP layer maps it to timeout.
type TimeoutError struct {
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return "upstream did not answer within " + e.Timeout.String()
}

// Retryable reports that the same call may answer in time later.
func (e *TimeoutError) Retryable() bool { return true }

// Hint says to try again, perhaps asking for less.
func (e *TimeoutError) Hint() string {
	return "The upstream did not answer in time. Try again, perhaps asking for less."
}

// AuthError says credentials are missing or were refused. It names the
// config key or environment variable to set, never a value. Prepare returns
// it when a configured credential is empty; Do returns it (with the Result)
// when the upstream answers 401, or 403 that is not a rate limit, to a call
// that needs credentials. The MCP layer maps it to auth_error.
type AuthError struct {
	Spec   string
	Scheme string
	// Key is the config key to set, like "specs[petstore].auth.api_key.value".
	Key string
	// EnvVars are unset environment variables the credential refers to.
	EnvVars []string
	// StatusCode is the upstream's answer, or 0 when nothing was sent.
	StatusCode int
	// Refused is true when the upstream refused credentials that were sent,
	// or, with StatusCode 0, when the OAuth2 token endpoint gave no token.
	Refused bool
	// Reason is a short extra explanation (never a value).
	Reason string
}

func (e *AuthError) Error() string {
	var b strings.Builder
	switch {
	case e.Refused && e.StatusCode == 0:
		fmt.Fprintf(&b, "no access token could be fetched for %s scheme %q", e.Spec, e.Scheme)
	case e.Refused:
		fmt.Fprintf(&b, "upstream answered %d: it refused the credentials for %s scheme %q", e.StatusCode, e.Spec, e.Scheme)
	case e.StatusCode != 0:
		fmt.Fprintf(&b, "upstream answered %d: the call needs credentials", e.StatusCode)
	default:
		fmt.Fprintf(&b, "credentials for %s scheme %q are missing", e.Spec, e.Scheme)
	}
	if e.Reason != "" {
		b.WriteString(" (" + e.Reason + ")")
	}
	b.WriteString("; ")
	b.WriteString(e.remedy())
	return b.String()
}

// Hint says who can fix it: the model cannot, the operator must. The
// message (Error) names what to set.
func (e *AuthError) Hint() string {
	return "Credentials are missing or were refused: the operator must set them in specgate's config."
}

// remedy says which variable or config key to set.
func (e *AuthError) remedy() string {
	switch {
	case len(e.EnvVars) > 0:
		return "set the environment variable " + strings.Join(e.EnvVars, ", ") + " and restart"
	case e.Key != "" && e.Refused:
		return "check " + e.Key
	case e.Key != "":
		return "set " + e.Key + " in the config"
	}
	return "configure credentials for this spec"
}
