package answer

import (
	"strconv"
	"testing"
	"time"
)

func TestResultCache(t *testing.T) {
	var c ResultCache
	now := time.Unix(1_800_000_000, 0)
	c.Put("k", Cached{ResponseID: "r_1", Size: 3}, now)
	if got, age, ok := c.Get("k", time.Minute, now.Add(time.Second)); !ok || got.ResponseID != "r_1" || got.Size != 3 || age != time.Second {
		t.Errorf("get = %v %v %v", got, age, ok)
	}
	for name, at := range map[string]time.Time{"at the TTL": now.Add(time.Minute), "before it was put": now.Add(-time.Second)} {
		if _, _, ok := c.Get("k", time.Minute, at); ok {
			t.Errorf("%s: hit", name)
		}
	}
	for i := range maxCached {
		c.Put(strconv.Itoa(i), Cached{}, now)
	}
	if _, _, ok := c.Get("k", time.Minute, now); ok {
		t.Error("the oldest entry outlived the bound")
	}
	if _, _, ok := c.Get(strconv.Itoa(maxCached-1), time.Minute, now); !ok {
		t.Error("the newest entry is gone")
	}
}
