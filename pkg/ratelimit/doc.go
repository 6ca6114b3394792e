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
// # Learning from the upstream
//
// Ticket.ObserveAt reads each answer (ParseHeaders) and can only make the limiter
// stricter than its configuration:
//
//   - A rate-limited answer (429, GitHub's rate-limit 403) blocks its quota until the
//     retry time, at least one second. When the block ends, the first call admitted is a
//     probe and the others wait for its answer: a non-rate-limited answer (or the probe
//     ending without one) lets them go, a rate-limited one blocks again.
//   - An advertised limit, remaining and reset become a learned budget, a fixed window
//     ending at the reset. The remaining is counted down by every call admitted after the
//     answered one, those still in flight included; calls admitted before it normally
//     reached the upstream first and are in the remaining already. A window not stated
//     (IETF w=) is inferred from the reset, allowing for resets in whole seconds being
//     rounded up, and rounded to a usual length (1s, 2s, 5s, ... 1m, ...).
//   - A rate-limited answer that advertises no quota (Retry-After alone) infers a
//     requests budget: the calls this limiter admitted in the window before the refused
//     one, the window being the block rounded up to a usual length, are taken as the most
//     the upstream allows per window (rolling, plus the budget's pad). A later refusal
//     only lowers it; it is dropped ten windows after the last refusal. It counts the
//     last 256 admissions, so it learns at most 255 calls per window. When every call of
//     that window was still in flight as the refused one was sent, the refusal teaches a
//     limit on calls in flight instead (their number; lowered only by a refusal sent
//     after it was set; dropped a minute, at least ten blocks, after the last refusal).
//
// A call held by any of these is KindLearned, ScopeUpstream. With a Store, blocks are
// shared by all replicas; learned budgets, inferred budgets and probes are each replica's
// own, from its own calls and answers.
//
// # Shared state
//
// All limiting state lives in two places: cooldownKey (one per endpoint, atomics) and
// upstream (one per upstream key, under one mutex), and is touched by four operations that
// take now as a parameter: upstream.admitLocked (check every limit, charge all or none),
// upstream.release, upstream.settle and upstream.learn. That is the memory store, the
// default: deciding a cooldown takes no lock and allocates nothing.
//
// With Options.Store (package redisstore: one Redis or a Redis Cluster) several replicas
// share the limits: one Lua script per admission, on one slot, checks and charges the
// cooldown, the request and token windows, the minimum interval, concurrency leases (with
// a TTL, so a crashed replica's leases expire) and learned blocks, with the Redis server's
// clock; the caller's context (Acquire's) bounds the call to the store; releases, settles and blocks learned from
// 429s go to Redis too. The wait queue stays local: a waiting call asks the store again
// when its wait ends. Each admission is mirrored in the local state, which runs on
// FallbackShare of each budget (cooldowns and minimum intervals stretched by its inverse)
// whenever the store does not answer for that upstream (with a cluster, only the
// upstreams on an unreachable slot), and for one window after, so a replica never fails open
// nor spends more than its share across the switch. The local state holds only this
// replica's own calls, while the upstream's windows also hold the other replicas': so for
// one window after it last saw a shared requests or tokens window (the calls and tokens
// each admission returns), a replica on its fallback allows floor(share × what was left
// there), counting its own fallback calls and tokens since (settles included), none when
// the window was full (at least 1 only when it was empty), and a replica that saw nothing
// of a window in the window before the switch allows none of it until a window after the
// switch. A store that never answered leaves no switch: the replica starts on its share.
// Limiter.Degraded and Status report it. A store call that only timed out, while the store
// answers a probe right after (ErrStoreSlow), is not an outage: the other replicas still
// spend the shared windows through it, so the call is asked again and then held
// (KindStore), within its caller's context and queue timeout, rather than admitted on a
// share that would come on top of theirs. Limiter.ReadyAt never asks the store: it is a
// hint from this replica's state and what the store last said.
//
// Window is the same idea for inbound budgets: at most Limit events per key (a principal,
// a client IP) in any rolling window, in memory or shared through the same store. Its
// fallback counts each key it saw as the requests window above: a replica allows a key its
// share of what the store last said was left of the key's window. A key it saw nothing of
// in the window before the switch gets the plain share at once rather than none for a
// window: an unseen principal is let in, at the price of a bounded overage (each other
// replica's share) for a key another replica had spent.
package ratelimit
