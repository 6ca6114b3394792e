package ratelimit

import (
	"testing"
	"time"
)

func newWindow(t *testing.T, opts WindowOptions) *Window {
	t.Helper()
	w, err := NewWindow(opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWindowMemory(t *testing.T) {
	w := newWindow(t, WindowOptions{Limit: 3, Window: time.Second})
	t0 := time.Unix(1_700_000_000, 0)
	for i, at := range []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond} {
		r := w.AllowAt(t.Context(), "ada@acme", t0.Add(at))
		if !r.Allowed || r.Remaining != 2-i || r.Limit != 3 {
			t.Fatalf("event %d: %+v, want allowed with %d remaining", i, r, 2-i)
		}
		if want := t0.Add(at); i < 2 && !r.Reset.Equal(want) {
			t.Errorf("event %d: Reset %v, want now", i, r.Reset)
		}
		if i == 2 && !r.Reset.Equal(t0.Add(time.Second)) {
			t.Errorf("last event: Reset %v, want when the first leaves the window", r.Reset)
		}
	}
	r := w.AllowAt(t.Context(), "ada@acme", t0.Add(300*time.Millisecond))
	if r.Allowed || r.RetryAfter != 700*time.Millisecond {
		t.Fatalf("over the limit: %+v, want refused for exactly 700ms", r)
	}
	if r := w.AllowAt(t.Context(), "bob@acme", t0.Add(300*time.Millisecond)); !r.Allowed {
		t.Errorf("another key: %+v, want allowed", r)
	}
	if r := w.AllowAt(t.Context(), "ada@acme", t0.Add(time.Second)); !r.Allowed || r.Remaining != 0 {
		t.Errorf("after the wait: %+v, want allowed with 0 remaining", r)
	}
}

func TestWindowMemoryFullRefusesNewKeysNotActiveOnes(t *testing.T) {
	w := newWindow(t, WindowOptions{Limit: 5, Window: time.Second, MaxKeys: 2})
	t0 := time.Unix(1_700_000_000, 0)
	w.AllowAt(t.Context(), "a", t0)
	w.AllowAt(t.Context(), "b", t0)
	if r := w.AllowAt(t.Context(), "c", t0.Add(time.Millisecond)); r.Allowed || !r.Full {
		t.Fatalf("a third key while two are active: %+v, want refused as full", r)
	}
	if r := w.AllowAt(t.Context(), "a", t0.Add(time.Millisecond)); !r.Allowed {
		t.Fatalf("an active key while full: %+v, want allowed", r)
	}
	if r := w.AllowAt(t.Context(), "c", t0.Add(2*time.Second)); !r.Allowed {
		t.Fatalf("a new key once the others went idle: %+v, want allowed", r)
	}
}
