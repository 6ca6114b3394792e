package redistest_test

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/internal/redistest"
)

func TestStopAndRestartOnTheSamePortEmpty(t *testing.T) {
	s := redistest.Start(t)
	if !strings.HasPrefix(s.URL(), "redis://"+s.Addr()+"/") {
		t.Errorf("URL() = %q, want redis://%s/0", s.URL(), s.Addr())
	}
	opts, err := redis.ParseURL(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	opts.MaxRetries = -1
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	s.Stop()
	if redistest.Ping(s.Addr()) {
		t.Fatal("the server answers PING after Stop")
	}
	s.Stop() // stopping twice does nothing

	s.Restart()
	if !redistest.Ping(s.Addr()) {
		t.Fatal("the server does not answer PING after Restart")
	}
	c = redis.NewClient(opts) // the old connections died with the server
	defer c.Close()
	if n, err := c.Exists(t.Context(), "k").Result(); err != nil || n != 0 {
		t.Errorf("after Restart: EXISTS k = %d, %v; want 0 (empty, no persistence)", n, err)
	}
}

func TestClusterSpreadsSlotsAndMovesOne(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	opts, err := redis.ParseClusterURL(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.Addrs) != 3 {
		t.Fatalf("URL() = %q parses to %d seeds, want 3", c.URL(), len(opts.Addrs))
	}
	cc := redis.NewClusterClient(opts)
	defer cc.Close()
	owners := map[int]bool{}
	for _, k := range []string{"{a}", "{b}", "{c}", "{d}", "{e}", "{f}"} {
		if err := cc.Set(t.Context(), k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		owners[c.OwnerOf(int(redisSlot(t, cc, k)))] = true
	}
	if len(owners) < 2 {
		t.Errorf("six keys all on one node of three")
	}
	slot := int(redisSlot(t, cc, "{a}"))
	from := c.OwnerOf(slot)
	to := (from + 1) % 3
	c.MoveSlot(slot, to)
	if got := c.OwnerOf(slot); got != to {
		t.Errorf("after MoveSlot: owner %d, want %d", got, to)
	}
	if v, err := cc.Get(t.Context(), "{a}").Result(); err != nil || v != "v" {
		t.Errorf("after the move: GET = %q, %v; want the key moved with its slot", v, err)
	}
}

func redisSlot(t *testing.T, cc *redis.ClusterClient, key string) int64 {
	t.Helper()
	n, err := cc.ClusterKeySlot(t.Context(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
