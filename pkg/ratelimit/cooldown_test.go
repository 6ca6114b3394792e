package ratelimit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestCooldownAllowAt(t *testing.T) {
	type step struct {
		at      time.Duration
		wantOK  bool
		wantRet time.Duration
	}
	tests := []struct {
		name     string
		interval time.Duration
		key      string
		steps    []step
	}{
		{"first call goes", 10 * time.Second, "a", []step{{0, true, 0}}},
		{"second within interval refused with exact wait", 10 * time.Second, "a", []step{
			{0, true, 0}, {1800 * time.Millisecond, false, 8200 * time.Millisecond},
		}},
		{"waiting exactly the wait succeeds", 10 * time.Second, "a", []step{
			{0, true, 0}, {3 * time.Second, false, 7 * time.Second}, {10 * time.Second, true, 0},
			{10*time.Second + time.Nanosecond, false, 10*time.Second - time.Nanosecond},
		}},
		{"one nanosecond early is refused", time.Second, "a", []step{
			{0, true, 0}, {time.Second - 1, false, 1},
		}},
		{"refusals do not charge", 10 * time.Second, "a", []step{
			{0, true, 0}, {5 * time.Second, false, 5 * time.Second}, {9 * time.Second, false, time.Second}, {10 * time.Second, true, 0},
		}},
		{"disabled always allows", 0, "a", []step{{0, true, 0}, {0, true, 0}, {time.Nanosecond, true, 0}}},
		{"unknown key always allows", 10 * time.Second, "other", []step{{0, true, 0}, {0, true, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Cooldown
			c.Set("a", tt.interval)
			for i, s := range tt.steps {
				ret, ok := c.AllowAt(tt.key, at(s.at))
				if ok != s.wantOK || ret != s.wantRet {
					t.Fatalf("step %d at %v: got (%v, %v), want (%v, %v)", i, s.at, ret, ok, s.wantRet, s.wantOK)
				}
			}
			if tt.key == "other" {
				if _, ok := c.Interval("other"); ok {
					t.Fatal("an unknown key was stored")
				}
			}
		})
	}
}

func TestCooldownIntervalChangeKeepsLastAdmission(t *testing.T) {
	var c Cooldown
	c.Set("a", 10*time.Second)
	if _, ok := c.AllowAt("a", at(0)); !ok {
		t.Fatal("first call refused")
	}
	c.Set("a", 30*time.Second)
	if ret, ok := c.AllowAt("a", at(20*time.Second)); ok || ret != 10*time.Second {
		t.Fatalf("after raising: got (%v, %v), want (10s, false)", ret, ok)
	}
	c.Set("a", 5*time.Second)
	if _, ok := c.AllowAt("a", at(6*time.Second)); !ok {
		t.Fatal("after lowering: refused past the new interval")
	}
	if got := c.NextAt("a", at(7*time.Second)); !got.Equal(at(11 * time.Second)) {
		t.Fatalf("NextAt = %v, want %v", got, at(11*time.Second))
	}
}

func TestCooldownConcurrentAdmitsExactlyOne(t *testing.T) {
	var c Cooldown
	c.Set("a", time.Minute)
	for round := range 20 {
		now := at(time.Duration(round) * time.Hour)
		var admitted atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 64 {
			wg.Go(func() {
				<-start
				if _, ok := c.AllowAt("a", now); ok {
					admitted.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if got := admitted.Load(); got != 1 {
			t.Fatalf("round %d: %d admitted, want 1", round, got)
		}
	}
}

func BenchmarkCooldownAllowAt(b *testing.B) {
	var c Cooldown
	for i := range 2000 {
		c.Set("petstore.op"+string(rune('a'+i%26))+time.Duration(i).String(), 10*time.Second)
	}
	c.Set("petstore.getPetById", 10*time.Second)
	b.ReportAllocs()
	now := t0
	for b.Loop() {
		now = now.Add(time.Second) // one in ten admitted
		c.AllowAt("petstore.getPetById", now)
	}
}
