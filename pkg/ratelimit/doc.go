// Package ratelimit governs every call specgate makes to an upstream API: per-endpoint
// cooldowns, upstream budgets (requests and tokens per rolling window, minimum interval,
// calls in flight), limits learned from the upstream's rate-limit headers, and a FIFO wait
// queue per upstream.
//
// The maths is a pure function of an explicit now: Cooldown.AllowAt, Limiter.AdmitAt and
// Limiter.ReadyAt never read the clock, so tests use fixed times. Only the wait queue,
// Limiter.Acquire, owns timers; its tests run in a testing/synctest bubble.
//
// A call goes through the limiter like this:
//
//	t, err := l.Acquire(ctx, ratelimit.Request{Endpoint: id, Tokens: est, Progress: notify})
//	if err != nil {
//		// *LimitError, *QueueError or ctx.Err(): map to the error object the model reads
//	}
//	defer t.Release()
//	resp, err := send(ctx)
//	t.Observe(resp.StatusCode, resp.Header, firstBytes) // learn from the upstream
//	t.Settle(realTokens)                                // if token budgets matter
//
// # Shared state
//
// All limiting state lives in two places: cooldownKey (one per endpoint, atomics) and
// upstream (one per upstream key, under one mutex), and is touched by four operations that
// take now as a parameter: upstream.admitLocked (check every limit, charge all or none),
// upstream.release, upstream.settle and upstream.learn. A Redis store (issue 5) implements
// the same four as one script each, keyed by endpoint id and upstream key, with the Redis
// server's clock; the wait queue stays local to a replica.
package ratelimit
