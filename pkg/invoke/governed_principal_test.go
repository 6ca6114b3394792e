package invoke

import (
	"errors"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
)

// TestGovernedPerPrincipalKeysOnOrgNotSubject: the limiter keyed principals
// on the subject alone, so ada of acme spent ada of other's per_principal
// budget. Each principal (subject and org) has its own share.
func TestGovernedPerPrincipalKeysOnOrgNotSubject(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "cache", cacheDoc, up.URL)
	e := endpoint(t, s, "getItem")
	l, err := ratelimit.New(ratelimit.Options{Budgets: []ratelimit.Budget{{Match: "u", Requests: 100, Window: time.Minute,
		WindowPad: -1, PerPrincipal: 1, OnLimit: ratelimit.Reject}}})
	if err != nil {
		t.Fatal(err)
	}
	cl := New(Options{})
	t.Cleanup(cl.Close)
	g := &Governed{Client: cl, Limiter: l, Upstream: func(*spec.Endpoint) string { return "u" }}
	call := func(p Principal) error {
		t.Helper()
		_, err := g.Do(WithPrincipal(t.Context(), p), e, Args{Parameters: map[string]any{"id": "1"}}, CallOptions{})
		return err
	}
	tests := []struct {
		name    string
		p       Principal
		refused bool
	}{
		{"ada of acme", Principal{Subject: "ada", Org: "acme"}, false},
		{"ada of other", Principal{Subject: "ada", Org: "other"}, false},
		{"ada without an org", Principal{Subject: "ada"}, false},
		{"subject ada@acme without an org", Principal{Subject: "ada@acme"}, false},
		{"ada of acme again", Principal{Subject: "ada", Org: "acme"}, true},
		{"ada of other again", Principal{Subject: "ada", Org: "other"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := call(tt.p)
			var le *ratelimit.LimitError
			if got := errors.As(err, &le); got != tt.refused {
				t.Errorf("refused %v (%v), want %v", got, err, tt.refused)
			}
			if err != nil && !tt.refused {
				t.Errorf("unexpected error %v", err)
			}
		})
	}
	if got, want := up.count(), 4; got != want {
		t.Errorf("upstream received %d calls, want %d", got, want)
	}
}

// TestGovernedShutdownRefusalCountsTheWait: a call that waited for its principal's share
// and was then refused by the shutdown said queueWaitMs: 0; it waited, and says so.
func TestGovernedShutdownRefusalCountsTheWait(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "cache", cacheDoc, up.URL)
	e := endpoint(t, s, "getItem")
	l, err := ratelimit.New(ratelimit.Options{Budgets: []ratelimit.Budget{{Match: "u", Requests: 100, Window: 10 * time.Second,
		WindowPad: -1, PerPrincipal: 1, QueueTimeout: time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	cl := New(Options{})
	t.Cleanup(cl.Close)
	g := &Governed{Client: cl, Limiter: l, Upstream: func(*spec.Endpoint) string { return "u" }}
	ctx := WithPrincipal(t.Context(), Principal{Subject: "ada"})
	args := Args{Parameters: map[string]any{"id": "1"}}
	if _, err := g.Do(ctx, e, args, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{}, 1)
	type result struct {
		out *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := g.Do(ctx, e, args, CallOptions{Progress: func(ratelimit.Progress) {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}})
		done <- result{out, err}
	}()
	select {
	case <-waiting:
	case r := <-done:
		t.Fatalf("the second call did not wait for its share: %v", r.err)
	}
	l.Drain()
	r := <-done
	var qe *ratelimit.QueueError
	if !errors.As(r.err, &qe) || qe.Reason != ratelimit.QueueShutdown {
		t.Fatalf("the waiting call: %v, want a shutdown QueueError", r.err)
	}
	if r.out == nil || r.out.Trace.QueueWait <= 0 || r.out.Trace.QueueWait != qe.Waited {
		t.Errorf("queue wait in the trace %v, the refusal's %v: want the time it waited", r.out.Trace.QueueWait, qe.Waited)
	}
}
