package main

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/mcpserver"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
)

// unmatchedBudgets says which upstreams entries hold for none of keys, the
// upstream keys the loaded specs' calls go to: such a budget limits
// nothing, silently, the worst failure a rate governor has. Each problem
// names the hosts the specs do call, and the nearest of them.
func unmatchedBudgets(cfg *config.Config, l *ratelimit.Limiter, keys []string) []string {
	used := map[string]bool{}
	for _, k := range keys {
		if m, ok := l.BudgetFor(k); ok {
			used[strings.ToLower(m)] = true
		}
	}
	var known []string
	for _, k := range keys {
		if k != "" && !slices.Contains(known, k) {
			known = append(known, k)
		}
	}
	slices.Sort(known)
	var out []string
	for _, u := range cfg.Upstreams {
		if used[strings.ToLower(u.Match)] {
			continue
		}
		msg := fmt.Sprintf("upstreams[%s].match matches no spec's upstream, so it limits nothing", u.Match)
		if len(known) > 0 {
			shown := known
			if len(shown) > 8 {
				shown = shown[:8]
			}
			msg += fmt.Sprintf("; the specs call %s", strings.Join(quoted(shown), ", "))
			if len(known) > len(shown) {
				msg += fmt.Sprintf(" and %d more", len(known)-len(shown))
			}
			if near := nearestKey(u.Match, known); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
		}
		out = append(out, msg)
	}
	return out
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// nearestKey returns the key (or its host, when m names no port) closest
// to m in edit distance, if close enough to be a typo.
func nearestKey(m string, keys []string) string {
	m = strings.ToLower(m)
	_, _, err := net.SplitHostPort(m)
	withPort := err == nil
	best, bestD := "", -1
	for _, k := range keys {
		cand := k
		if host, _, err := net.SplitHostPort(k); err == nil && !withPort {
			cand = host
		}
		d := editDistance(m, strings.ToLower(cand))
		if bestD < 0 || d < bestD {
			best, bestD = cand, d
		}
	}
	if bestD < 0 || bestD > max(2, len(m)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// upstreamKeys returns the upstream keys the endpoints' calls go to, and
// the embeddings endpoint's, which budgets govern too.
func upstreamKeys(cfg *config.Config, eps []*spec.Endpoint, upstream func(*spec.Endpoint) string) []string {
	var keys []string
	for _, e := range eps {
		keys = append(keys, upstream(e))
	}
	if e := cfg.Search.Embeddings; e != nil {
		keys = append(keys, mcpserver.HostKey(e.URL))
	}
	return keys
}
