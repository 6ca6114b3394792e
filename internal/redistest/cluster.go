package redistest

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of masters, with or without replicas, each a Server on free loopback
// ports (its own and its cluster bus port). A node that is stopped and restarted rejoins
// with its slots, empty. cluster-require-full-coverage is off, so while a node is down
// the others keep answering for their slots, as a production cluster should be set up
// for specgate.
type Cluster struct {
	tb    testing.TB
	nodes []*Server
}

// StartCluster starts n masters (at least 3, as redis-cli requires) and joins them with
// redis-cli --cluster create; it returns once every node reports the cluster ok. The
// nodes are stopped at tb's cleanup.
func StartCluster(tb testing.TB, n int) *Cluster { return StartClusterReplicas(tb, n, 0) }

// StartClusterReplicas starts n masters with replicas replicas each (n*(1+replicas) nodes;
// redis-cli picks which node is which), so that killing a master makes its replica take
// its slots, as a failover does in production.
func StartClusterReplicas(tb testing.TB, n, replicas int) *Cluster {
	tb.Helper()
	need(tb, "redis-server")
	need(tb, "redis-cli")
	c := &Cluster{tb: tb}
	for range n * (1 + replicas) {
		dir := tb.TempDir()
		s := &Server{tb: tb, port: freePort(tb), args: []string{
			"--cluster-enabled", "yes",
			"--cluster-port", strconv.Itoa(freePort(tb)),
			"--cluster-config-file", dir + "/nodes.conf",
			"--dir", dir,
			"--cluster-node-timeout", "1000",
			"--cluster-require-full-coverage", "no",
		}}
		tb.Cleanup(s.Stop)
		s.Restart()
		c.nodes = append(c.nodes, s)
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitOK()
	return c
}

// Addrs are the nodes' host:port.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, s := range c.nodes {
		out = append(out, s.Addr())
	}
	return out
}

// URL is the cluster's URL in go-redis's cluster form: redis://node1?addr=node2&addr=node3.
func (c *Cluster) URL() string {
	a := c.Addrs()
	return "redis://" + a[0] + "?addr=" + strings.Join(a[1:], "&addr=")
}

// Node is the i-th node.
func (c *Cluster) Node(i int) *Server { return c.nodes[i] }

// WaitOK returns once every running node reports cluster_state:ok and knows every slot's
// owner, and every running replica has synced with its master; it fails the test after
// 10s.
func (c *Cluster) WaitOK() {
	c.tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok := true
		for _, s := range c.nodes {
			if !Ping(s.Addr()) {
				continue
			}
			info, err := c.do(s, "CLUSTER", "INFO")
			if err != nil || !strings.Contains(info.(string), "cluster_state:ok") ||
				!strings.Contains(info.(string), "cluster_slots_assigned:16384") {
				ok = false
			}
			// a replica must have synced with its master, or it could not take over
			if repl, err := c.do(s, "INFO", "replication"); err != nil ||
				strings.Contains(repl.(string), "role:slave") && !strings.Contains(repl.(string), "master_link_status:up") {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatal("the cluster did not report ok within 10s")
		}
		time.Sleep(pollEvery) // waiting for other processes to agree, not for limiter time
	}
}

// OwnerOf is the index of the node that serves slot.
func (c *Cluster) OwnerOf(slot int) int {
	c.tb.Helper()
	for _, s := range c.nodes {
		if !Ping(s.Addr()) {
			continue
		}
		v, err := c.do(s, "CLUSTER", "SLOTS")
		if err != nil {
			continue
		}
		for _, r := range v.([]any) {
			rng := r.([]any)
			lo, hi := rng[0].(int64), rng[1].(int64)
			if int64(slot) < lo || int64(slot) > hi {
				continue
			}
			port := rng[2].([]any)[1].(int64)
			for j, n := range c.nodes {
				if int64(n.port) == port {
					return j
				}
			}
		}
	}
	c.tb.Fatalf("no node serves slot %d", slot)
	return -1
}

// SlotOf is the slot the cluster puts key in (CLUSTER KEYSLOT), as asked of a node that
// answers.
func (c *Cluster) SlotOf(key string) int {
	c.tb.Helper()
	for _, s := range c.nodes {
		if !Ping(s.Addr()) {
			continue
		}
		if v, err := c.do(s, "CLUSTER", "KEYSLOT", key); err == nil {
			return int(v.(int64))
		}
	}
	c.tb.Fatalf("no node answers CLUSTER KEYSLOT %s", key)
	return -1
}

// MoveSlot migrates slot, with its keys, to node to, as redis-cli --cluster reshard
// does: IMPORTING and MIGRATING, MIGRATE of every key, then SETSLOT NODE on every node.
func (c *Cluster) MoveSlot(slot, to int) {
	c.tb.Helper()
	from := c.OwnerOf(slot)
	if from == to {
		return
	}
	src, dst := c.nodes[from], c.nodes[to]
	srcID, dstID := c.id(src), c.id(dst)
	must := func(s *Server, args ...any) any {
		c.tb.Helper()
		v, err := c.do(s, args...)
		if err != nil {
			c.tb.Fatalf("%v on %s: %v", args, s.Addr(), err)
		}
		return v
	}
	must(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	must(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
	for {
		keys := must(src, "CLUSTER", "GETKEYSINSLOT", slot, 100).([]any)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", "127.0.0.1", dst.port, "", 0, 5000, "KEYS"}
		must(src, append(args, keys...)...)
	}
	for _, s := range c.nodes {
		if Ping(s.Addr()) {
			must(s, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
		}
	}
}

func (c *Cluster) id(s *Server) string {
	c.tb.Helper()
	v, err := c.do(s, "CLUSTER", "MYID")
	if err != nil {
		c.tb.Fatal(err)
	}
	return v.(string)
}

// do sends one command to one node.
func (c *Cluster) do(s *Server, args ...any) (any, error) {
	cl := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cl.Do(ctx, args...).Result()
}
