package invoke

import (
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/ratelimit"
)

// TestUpstreamRateLimitErrorWaitIsNeverZero: a 429 that states no usable
// wait still tells the model a wait it can keep, a second, and one that
// states a wait is never rounded down.
func TestUpstreamRateLimitErrorWaitIsNeverZero(t *testing.T) {
	for _, c := range []struct {
		e    *UpstreamRateLimitError
		want float64
	}{
		{&UpstreamRateLimitError{StatusCode: 429}, 1},
		{&UpstreamRateLimitError{StatusCode: 429, Unreadable: true}, 1},
		{&UpstreamRateLimitError{StatusCode: 429, RetryAfter: 2500*time.Millisecond + time.Microsecond}, 2.501},
	} {
		if got := c.e.RetryAfterSeconds(); got != c.want {
			t.Errorf("%v: RetryAfterSeconds %v, want %v", c.e, got, c.want)
		}
		if !c.e.Retryable() || c.e.RefusedBy() != ratelimit.ScopeUpstream {
			t.Errorf("%v: retryable %v, refused by %s; want true, upstream", c.e, c.e.Retryable(), c.e.RefusedBy())
		}
	}
}

// TestAuthErrorHintIsForTheModel: the hint tells the model the operator
// must act; what to set stays in the message, with no value.
func TestAuthErrorHintIsForTheModel(t *testing.T) {
	e := &AuthError{Spec: "petstore", Scheme: "api_key", Key: "specs[petstore].auth.api_key.value", EnvVars: []string{"PETSTORE_KEY"}}
	if h := e.Hint(); !strings.Contains(h, "operator") || strings.Contains(h, "PETSTORE_KEY") {
		t.Errorf("hint %q: want the operator named, not the variable", h)
	}
	if msg := e.Error(); !strings.HasSuffix(msg, "; set the environment variable PETSTORE_KEY and restart") {
		t.Errorf("message %q does not say what to set", msg)
	}
}

// TestHTTPErrorHintByStatus: a status that asks something of the caller
// has a hint; one that asks nothing in particular has none.
func TestHTTPErrorHintByStatus(t *testing.T) {
	for status, want := range map[int]string{
		404: "check the path parameters", 400: "fix them", 422: "fix them", 502: "tried again later", 403: "",
	} {
		h := (&HTTPError{StatusCode: status}).Hint()
		if (want == "") != (h == "") || !strings.Contains(h, want) {
			t.Errorf("%d: hint %q, want one with %q", status, h, want)
		}
	}
}
