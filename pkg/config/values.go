package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written in the file as a Go duration string
// ("10s", "250ms", "1m30s"). A bare number other than 0 is refused: "10"
// could mean seconds or nanoseconds, and guessing wrong would silently turn a
// cooldown into nothing. Convert with time.Duration(d).
type Duration time.Duration

// String formats d like time.Duration ("10s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes d as a duration string, so JSON and YAML output read
// the way the file is written.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalYAML accepts a duration string; the only bare number allowed is 0.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return nodeError(n, `a duration such as "10s"`)
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && f == 0 {
			*d = 0
			return nil
		}
		return nodeError(n, fmt.Sprintf("%s is a bare number: write a duration with a unit, such as \"%ss\" or \"%sms\"", n.Value, n.Value, n.Value))
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return nodeError(n, fmt.Sprintf(`%q is not a duration: write it like "10s", "250ms" or "1m"`, n.Value))
	}
	*d = Duration(v)
	return nil
}

// ByteSize is a size in bytes, written either as an integer (262144) or with
// a unit: KiB, MiB, GiB (powers of 1024) or KB, MB, GB (powers of 1000), as
// in "256KiB". B is accepted too.
type ByteSize int64

var byteUnits = []struct {
	suffix string
	size   int64
}{
	// Longest suffixes first so "KiB" is not read as "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"B", 1},
}

// String writes b with the largest binary unit that divides it exactly
// ("256KiB"), else as plain bytes.
func (b ByteSize) String() string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.size == 0 {
			return strconv.FormatInt(int64(b)/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

// MarshalText writes b as String does.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalYAML accepts an integer number of bytes or a number with a unit.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return nodeError(n, `a size such as 262144 or "256KiB"`)
	}
	v, err := parseByteSize(n.Value)
	if err != nil {
		return nodeError(n, err.Error())
	}
	*b = v
	return nil
}

func parseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf(`%q is not a size: write bytes (262144) or a size with a unit ("256KiB", "4MiB", "1MB")`, s)
	mult := int64(1)
	num := s
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			mult = u.size
			num = strings.TrimSpace(strings.TrimSuffix(s, u.suffix))
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, bad
	}
	if n > math.MaxInt64/mult || n < math.MinInt64/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return ByteSize(n * mult), nil
}

// OnLimit says what a budget does with a call that cannot go now.
type OnLimit string

const (
	// OnLimitWait queues the call (FIFO, bounded by queue_depth and
	// queue_timeout) until the budget lets it go.
	OnLimitWait OnLimit = "wait"
	// OnLimitReject answers rate_limit at once with the exact wait.
	OnLimitReject OnLimit = "reject"
)

// UnmarshalYAML accepts only wait or reject.
func (o *OnLimit) UnmarshalYAML(n *yaml.Node) error {
	v, err := enum(n, "wait", "reject")
	*o = OnLimit(v)
	return err
}

// Backend names where limiter state lives.
type Backend string

const (
	// BackendMemory keeps state in this process.
	BackendMemory Backend = "memory"
	// BackendRedis shares state among replicas through Redis.
	BackendRedis Backend = "redis"
	// BackendRedisCluster shares state among replicas through a Redis Cluster.
	BackendRedisCluster Backend = "redis_cluster"
)

// UnmarshalYAML accepts only memory, redis or redis_cluster.
func (b *Backend) UnmarshalYAML(n *yaml.Node) error {
	v, err := enum(n, "memory", "redis", "redis_cluster")
	*b = Backend(v)
	return err
}

func enum(n *yaml.Node, allowed ...string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", nodeError(n, "one of "+strings.Join(allowed, ", "))
	}
	for _, a := range allowed {
		if n.Value == a {
			return a, nil
		}
	}
	return "", nodeError(n, fmt.Sprintf("%q is not one of %s", n.Value, strings.Join(allowed, ", ")))
}

// nodeError is a decode error the yaml decoder collects (it keeps going and
// reports every problem) rather than one that stops it.
func nodeError(n *yaml.Node, msg string) error {
	if n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode {
		msg = kindName(n) + " is not " + msg
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s", n.Line, msg)}}
}

func kindName(n *yaml.Node) string {
	if n.Kind == yaml.SequenceNode {
		return "a list"
	}
	return "a mapping"
}

// Concurrency is an upstream's max_concurrent: a number of calls in flight
// (0: no limit), "auto" for an adaptive limit that finds the upstream's own
// (AIMD: from 1, up by one after a run of clean answers, halved on a 429 or
// a timeout), or {min: 1, max: 8} for an adaptive one within bounds.
type Concurrency struct {
	Limit int // the fixed limit; with Auto, the most (0: 64)
	Auto  bool
	Min   int // with Auto, the least and the start (0: 1)
}

// UnmarshalYAML reads a number, "auto" or {min, max}.
func (c *Concurrency) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if strings.EqualFold(strings.TrimSpace(n.Value), "auto") {
			*c = Concurrency{Auto: true}
			return nil
		}
		v, err := strconv.Atoi(strings.TrimSpace(n.Value))
		if err != nil || n.ShortTag() != "!!int" {
			return nodeError(n, `a number of calls in flight, "auto", or {min: 1, max: 8}`)
		}
		*c = Concurrency{Limit: v}
		return nil
	case yaml.MappingNode:
		var m struct {
			Min int `yaml:"min"`
			Max int `yaml:"max"`
		}
		dec := n.Decode(&m)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; k != "min" && k != "max" {
				return nodeError(n.Content[i], fmt.Sprintf("%q is not a key of an adaptive max_concurrent: write {min: 1, max: 8}", k))
			}
		}
		if dec != nil {
			return nodeError(n, `{min: 1, max: 8} with whole numbers`)
		}
		*c = Concurrency{Auto: true, Min: m.Min, Limit: m.Max}
		return nil
	}
	return nodeError(n, `a number of calls in flight, "auto", or {min: 1, max: 8}`)
}

// MarshalJSON writes c the way the file does.
func (c Concurrency) MarshalJSON() ([]byte, error) {
	switch {
	case !c.Auto:
		return []byte(strconv.Itoa(c.Limit)), nil
	case c.Min == 0 && c.Limit == 0:
		return []byte(`"auto"`), nil
	}
	return []byte(fmt.Sprintf(`{"min":%d,"max":%d}`, c.Min, c.Limit)), nil
}
