package serve

import (
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func TestWindowsBoundedTable(t *testing.T) {
	m := NewWindows(nil, 2)
	ctx := t.Context()
	take := func(key string, at time.Time) (bool, int, time.Time, error) {
		return m.Take(ctx, keyRequests+key, 2, time.Minute, at)
	}
	for _, k := range []string{"a", "b"} {
		if ok, rem, reset, err := take(k, t0); !ok || rem != 1 || !reset.Equal(t0) || err != nil {
			t.Fatalf("%s: %v %d %v %v", k, ok, rem, reset, err)
		}
	}
	// Full of active keys: a new key is refused, not an active one evicted.
	if ok, _, _, err := take("c", t0.Add(30*time.Second)); ok || err != ErrTooManyKeys {
		t.Fatalf("c admitted into a full table: %v %v", ok, err)
	}
	// The window is exact: a's first event frees its slot at t0+60s.
	if ok, rem, reset, err := take("a", t0.Add(30*time.Second)); !ok || rem != 0 || !reset.Equal(t0.Add(60*time.Second)) || err != nil {
		t.Fatalf("a: %v %d %v %v", ok, rem, reset, err)
	}
	if ok, _, reset, _ := take("a", t0.Add(31*time.Second)); ok || !reset.Equal(t0.Add(60*time.Second)) {
		t.Fatalf("a over its limit: %v %v", ok, reset)
	}
	// b goes idle and is swept; c gets its place; a is still counted.
	if ok, _, _, err := take("c", t0.Add(61*time.Second)); !ok || err != nil {
		t.Fatalf("c after b went idle: %v %v", ok, err)
	}
	if ok, rem, _, _ := take("a", t0.Add(61*time.Second)); !ok || rem != 0 {
		t.Errorf("a at t0+61s: %v %d (its t0+30s call still counts)", ok, rem)
	}
}

func TestWindowsNeverExceedsLimit(t *testing.T) {
	m := NewWindows(nil, 10)
	const limit, window = 5, 10 * time.Second
	var admitted []time.Time
	for i := range 400 {
		now := t0.Add(time.Duration(i) * 137 * time.Millisecond)
		ok, _, reset, err := m.Take(t.Context(), keyRequests+"k", limit, window, now)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			admitted = append(admitted, now)
		} else if !reset.After(now) {
			t.Fatalf("refused at %v with reset %v", now, reset)
		}
	}
	for i := range admitted {
		n := 0
		for j := i; j < len(admitted) && admitted[j].Sub(admitted[i]) < window; j++ {
			n++
		}
		if n > limit {
			t.Fatalf("%d admitted within %v from %v", n, window, admitted[i])
		}
	}
	if len(admitted) < 400*137/10000*limit*9/10 {
		t.Errorf("only %d admitted", len(admitted))
	}
}
