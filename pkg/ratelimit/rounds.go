package ratelimit

import "time"

// Rounds estimates, for calls made conc at a time in rounds of one mean
// latency (if zero, 100ms) costing perCall tokens each, the round at which
// each limit in ls would refuse one, or "not reached": by "cooldown ID",
// "concurrency KEY", "requests KEY", "interval KEY" for configured limits,
// and the learned ones (learnedRounds). end_task answers it.
func (ls Status) Rounds(conc int, mean time.Duration, perCall int64) map[string]any {
	out := map[string]any{}
	if mean <= 0 {
		mean = 100 * time.Millisecond
	}
	for _, e := range ls.Endpoints {
		if e.Interval > 0 {
			out["cooldown "+e.ID] = spacingRound(conc, e.Interval, mean)
		}
	}
	for _, u := range ls.Upstreams {
		learnedRounds(out, u, conc, mean, perCall, ls.At)
		if !u.Configured {
			continue
		}
		b := u.Budget
		if b.MaxConcurrent > 0 {
			if conc > b.MaxConcurrent {
				out["concurrency "+u.Key] = 1
			} else {
				out["concurrency "+u.Key] = "not reached"
			}
		}
		if b.Requests > 0 && b.Window > 0 {
			roundsPerWindow := int64(b.Window / mean)
			if roundsPerWindow < 1 {
				roundsPerWindow = 1
			}
			if int64(conc)*roundsPerWindow > int64(b.Requests) {
				out["requests "+u.Key] = b.Requests/conc + 1
			} else {
				out["requests "+u.Key] = "not reached"
			}
		}
		if b.MinInterval > 0 {
			out["interval "+u.Key] = spacingRound(conc, b.MinInterval, mean)
		}
	}
	return out
}

// learnedRounds adds to out, for each limit the upstream u advertised or specgate
// inferred from its 429s, the round at which calls made conc at a time, in rounds of one
// mean latency and perCall tokens each, would meet it: "learned requests KEY", "learned
// tokens KEY", "inferred requests KEY" (KEY with the quota's resource when it named one),
// and "learned block KEY" (round 1) while a rate-limited answer still blocks it.
func learnedRounds(out map[string]any, u UpstreamStatus, conc int, mean time.Duration, perCall int64, now time.Time) {
	for _, l := range u.Learned {
		key := u.Key
		if l.Resource != "" {
			key += " " + l.Resource
		}
		if q := l.Requests; q.Limit > 0 {
			out["learned requests "+key] = windowRound(q.Limit, 1, quotaWindow(q, now), conc, mean)
		}
		if q := l.Tokens; q.Limit > 0 {
			out["learned tokens "+key] = windowRound(q.Limit, perCall, quotaWindow(q, now), conc, mean)
		}
		if b := l.Inferred; b.Limit > 0 {
			out["inferred requests "+key] = windowRound(b.Limit, 1, b.Window, conc, mean)
		}
		if l.BlockedUntil.After(now) {
			out["learned block "+key] = 1
		}
	}
}

// quotaWindow is the window of an advertised quota: as stated or inferred, else the time
// until its reset; zero when neither is known.
func quotaWindow(q LearnedQuota, now time.Time) time.Duration {
	if q.Window > 0 {
		return q.Window
	}
	return max(q.Reset.Sub(now), 0)
}

// windowRound is the round at which calls of cost each, conc a round, spend limit within
// one window (a window of zero: never renewed), or "not reached".
func windowRound(limit, cost int64, window time.Duration, conc int, mean time.Duration) any {
	perRound := int64(conc) * cost
	if window > 0 && perRound*max(int64(window/mean), 1) <= limit {
		return "not reached"
	}
	return limit/perRound + 1
}

// spacingRound is the round at which a limit that spaces calls by gap (a
// cooldown, a minimum interval) refuses one: the first call always passes;
// the second meets the gap in the same round with concurrency, else in the
// next when a round is shorter than the gap.
func spacingRound(conc int, gap, mean time.Duration) any {
	switch {
	case conc > 1:
		return 1
	case gap > mean:
		return 2
	}
	return "not reached"
}
