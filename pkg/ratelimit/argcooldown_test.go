package ratelimit

import (
	"strconv"
	"testing"
	"time"
)

func TestCooldownKeyPacesDistinctArgumentsAndRefusesARepeat(t *testing.T) {
	l := newLimiter(t, Options{
		Endpoints: []Endpoint{{ID: "gh.pulls/get", Upstream: "api.github.com:443", Interval: 10 * time.Second}},
		Budgets:   []Budget{{Match: "api.github.com:443", Requests: 3, Window: time.Second, WindowPad: -1}},
	})
	req := func(key string) Request { return Request{Endpoint: "gh.pulls/get", CooldownKey: key} }
	// Distinct arguments pass the cooldown; the budget then paces them.
	for i := range 3 {
		tk, err := l.AdmitAt(req("n="+strconv.Itoa(i)), at(time.Duration(i)*time.Millisecond))
		if err != nil {
			t.Fatalf("call %d with distinct arguments: %v", i, err)
		}
		tk.Release()
	}
	_, err := l.AdmitAt(req("n=3"), at(3*time.Millisecond))
	if le := limitErr(t, err); le.Kind != KindRequests {
		t.Fatalf("fourth distinct call refused by %s, want the request budget", le.Kind)
	}
	// An identical repeat within the interval is the cooldown's.
	_, err = l.AdmitAt(req("n=0"), at(5*time.Second))
	le := limitErr(t, err)
	if le.Kind != KindCooldown || le.Key != "gh.pulls/get" {
		t.Fatalf("repeat refused by %s on %q, want the cooldown of gh.pulls/get", le.Kind, le.Key)
	}
	if got, want := le.RetryAfter, 5*time.Second; got != want {
		t.Fatalf("repeat waits %v, want %v", got, want)
	}
	// The endpoint's own cooldown was neither checked nor charged.
	if w := l.ReadyAt("gh.pulls/get", at(20*time.Second)); w != 0 {
		t.Fatalf("a direct call waits %v after argument-keyed calls, want 0", w)
	}
	tk, err := l.AdmitAt(Request{Endpoint: "gh.pulls/get"}, at(20*time.Second))
	if err != nil {
		t.Fatalf("direct call: %v", err)
	}
	tk.Release()
	// And a direct call's cooldown does not refuse keyed calls.
	tk, err = l.AdmitAt(req("n=9"), at(20*time.Second+time.Millisecond))
	if err != nil {
		t.Fatalf("keyed call after a direct one: %v", err)
	}
	tk.Release()
}

func TestCooldownKeysAreBounded(t *testing.T) {
	l := newLimiter(t, Options{Endpoints: []Endpoint{{ID: "e", Interval: time.Second}}})
	for i := range maxArgCooldowns + 100 {
		tk, err := l.AdmitAt(Request{Endpoint: "e", CooldownKey: strconv.Itoa(i)}, at(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		tk.Release()
	}
	if n := len(l.argCooldowns.keys); n > maxArgCooldowns {
		t.Fatalf("%d argument keys kept, want at most %d", n, maxArgCooldowns)
	}
	// A key refused within its interval is still refused after sweeps.
	last := strconv.Itoa(maxArgCooldowns + 99)
	if _, err := l.AdmitAt(Request{Endpoint: "e", CooldownKey: last}, at(time.Duration(maxArgCooldowns+99)*time.Second+time.Millisecond)); err == nil {
		t.Fatal("the newest key's repeat was admitted")
	}
}
