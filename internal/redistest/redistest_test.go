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
