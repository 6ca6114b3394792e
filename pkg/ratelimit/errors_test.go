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
