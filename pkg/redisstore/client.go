package redisstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultSocketTimeout bounds each read and write of a Client from Dial when its caller's
// context names no sooner deadline: the limiter's Store bounds its own calls by its
// Timeout, an answer of some megabytes takes longer.
const DefaultSocketTimeout = 3 * time.Second

// Client is the one connection to Redis (or a Redis Cluster) that the state specgate's
// replicas share lives on: the limiter's Store, the answer store (Answers) and the
// approvals. Every key it writes is named by the one scheme of key: the prefix, a hash
// tag, a part. A Client is safe for concurrent use.
type Client struct {
	rdb    redis.UniversalClient
	prefix string
}

// Dial returns a client on url (with cluster, go-redis's cluster form: redis://host1:port
// ?addr=host2:port, any number of seed nodes), every key under prefix (empty:
// DefaultKeyPrefix; it must not hold '{'). Its calls are never retried, since a retried
// admission could be charged twice, and end at their context's deadline. It connects on
// first use; the error is for a URL that does not parse, and never echoes it (it may
// hold a password). Close it after the last use of what was built on it.
func Dial(url string, cluster bool, prefix string) (*Client, error) {
	rdb, err := dial(url, cluster, DefaultSocketTimeout)
	if err != nil {
		return nil, err
	}
	return NewClient(rdb, prefix), nil
}

// NewClient returns a client on rdb (a *redis.Client or a *redis.ClusterClient), every
// key under prefix (empty: DefaultKeyPrefix). Close closes rdb.
func NewClient(rdb redis.UniversalClient, prefix string) *Client {
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	return &Client{rdb: rdb, prefix: prefix}
}

// Close closes the connection.
func (c *Client) Close() error { return c.rdb.Close() }

// key is the one key scheme of everything in the store: prefix, the hash tag {tag}, ":",
// part. Keys of one tag share a Redis Cluster slot, so one script may touch them all.
func key(prefix, tag, part string) string { return prefix + "{" + tag + "}:" + part }

// approvalsTag is the hash tag of the approvals' keys: the shared signing key and the
// record of request states spent.
const approvalsTag = "approvals"

// SpendOnce records that the request state id was spent, for ttl: true the first time,
// false when any replica spent it before.
func (c *Client) SpendOnce(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	return c.rdb.SetNX(ctx, key(c.prefix, approvalsTag, "spent:"+id), 1, ttl).Result()
}

// SharedKey returns the approvals' signing key the replicas share: fresh when this
// replica is the first to write one, else the one already written.
func (c *Client) SharedKey(ctx context.Context, fresh string) (string, error) {
	k := key(c.prefix, approvalsTag, "key")
	if err := c.rdb.SetNX(ctx, k, fresh, 0).Err(); err != nil {
		return "", err
	}
	return c.rdb.Get(ctx, k).Result()
}

// dial makes the client for url, with every read, write and dial bounded by timeout.
func dial(url string, cluster bool, timeout time.Duration) (redis.UniversalClient, error) {
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	if cluster {
		o, err := redis.ParseClusterURL(url)
		if err != nil {
			// not wrapped: the message could echo the URL and its password
			return nil, errors.New("redis store: the cluster URL does not parse (want redis://host1:port?addr=host2:port)")
		}
		for _, a := range o.Addrs {
			if h, _, _ := strings.Cut(a, ":"); h == "" {
				return nil, errors.New("redis store: the cluster URL names no seed node (want redis://host1:port?addr=host2:port)")
			}
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
		o.ContextTimeoutEnabled = true
		// MOVED and ASK are followed (MaxRedirects); a dead node must fail within the
		// timeout, since admissions wait on it
		o.DialerRetries = 1
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, errors.New("redis store: the URL does not parse")
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1   // a retried admission could be charged twice; the fallback covers
	o.DialerRetries = 1 // a dead Redis must fail within Timeout: admissions wait on it
	return redis.NewClient(o), nil
}
