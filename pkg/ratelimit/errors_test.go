package ratelimit

import (
	"strings"
	"testing"
	"time"
)

// TestLimitErrorSaysWhoRefused: the scope, and the hint that follows from
// it: raising specgate's limits helps only with specgate's own.
func TestLimitErrorSaysWhoRefused(t *testing.T) {
	own := &LimitError{Scope: ScopeProxy, Kind: KindCooldown, Key: "petstore.getPetById", RetryAfter: time.Second}
	theirs := &LimitError{Scope: ScopeUpstream, Kind: KindLearned, Key: "api.example.com:443", RetryAfter: time.Second}
	if own.RefusedBy() != ScopeProxy || own.Hint() != "Wait for the cooldown limit, then call it again." {
		t.Errorf("own limit: refused by %s, hint %q", own.RefusedBy(), own.Hint())
	}
	if theirs.RefusedBy() != ScopeUpstream || !strings.Contains(theirs.Hint(), "raising specgate's limits will not help") {
		t.Errorf("upstream's limit: refused by %s, hint %q", theirs.RefusedBy(), theirs.Hint())
	}
	if !own.Retryable() || !theirs.Retryable() {
		t.Error("a limit's refusal is retryable after its wait")
	}
}

// TestQueueErrorHintOnShutdown: a call dropped by a shutdown is told to go
// again now (another replica serves it), not to wait for a queue.
func TestQueueErrorHintOnShutdown(t *testing.T) {
	for reason, want := range map[QueueReason]string{QueueShutdown: "shutting down", QueueFull: "Too many calls", QueueTimeout: "Too many calls"} {
		e := &QueueError{Reason: reason, Upstream: "api.example.com:443", RetryAfter: time.Second}
		if !strings.Contains(e.Hint(), want) || e.RefusedBy() != ScopeProxy || !e.Retryable() {
			t.Errorf("%s: hint %q (want %q), refused by %s, retryable %v", reason, e.Hint(), want, e.RefusedBy(), e.Retryable())
		}
	}
}

// TestErrorWordingReadsRight: "try again in about 1 seconds", and a call refused at once
// because its wait would run past the queue timeout read "call waited 0s ..., past the
// queue timeout of 20s", which contradicts itself.
func TestErrorWordingReadsRight(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"one second", &LimitError{Kind: KindConcurrency, Key: "u", Limit: 2, RetryAfter: time.Second},
			"upstream u has 2 calls in flight: try again in about 1 second"},
		{"seconds", &LimitError{Kind: KindCooldown, Key: "e", RetryAfter: 1500 * time.Millisecond},
			"endpoint e is cooling down: try again in 1.5 seconds"},
		{"shutdown in one second", &QueueError{Reason: QueueShutdown, Upstream: "u", RetryAfter: time.Second},
			"specgate is shutting down: the call waiting for upstream u was not sent; try again in about 1 second"},
		{"timeout ahead of time", &QueueError{Reason: QueueTimeout, Upstream: "u", Timeout: 20 * time.Second, RetryAfter: 25 * time.Second},
			"call to upstream u would wait past the queue timeout of 20s (it waited 0s): try again in about 25 seconds"},
		{"timeout reached", &QueueError{Reason: QueueTimeout, Upstream: "u", Timeout: 20 * time.Second, Waited: 20 * time.Second, RetryAfter: 2 * time.Second},
			"call waited 20s for upstream u, past the queue timeout of 20s: try again in about 2 seconds"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
