-- admit checks, in the memory store's order, the cooldown, learned blocks, the requests
-- window, the tokens window, the minimum interval and the calls in flight; it keeps the
-- longest wait; with charge set and nothing in the way, it charges them all.
-- KEYS: cooldown, requests, tokens, last admission, leases, block of the whole upstream,
-- block of the endpoint's quota resource, epoch, replicas seen, hand-over, replicas not
-- back; all on one hash tag.
-- Reply: ok, now, kind, wait, source, cooldown refused, token bucket, units in the
-- requests window (this call's included when charged), wait until that window has room,
-- tokens in the tokens window (this call's included when charged), epoch.
--
-- The epoch is when the hash tag's state was first written: a Redis that restarted empty
-- (or a failover to a replica that had not seen it) has a new one, which tells every
-- replica that the windows lost what they held.
local charge = ARGV[1] == '1'
local iv, nreq, span = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ntok, cost, g = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local mi, mc, est = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local lease, lttl, hasUp = ARGV[11], tonumber(ARGV[12]), ARGV[13] == '1'
local units = tonumber(ARGV[14]) -- what the call charges the requests window, 1..nreq
-- the replica's id, the epoch it last saw (0: none), whether it comes back from its
-- fallback share, and how many replicas the fallback share stands for
local me, known, rejoin, least = ARGV[15], tonumber(ARGV[16]), ARGV[17] == '1', tonumber(ARGV[18])
-- a replica's fallback share of the requests window, how long the share of a replica not
-- back is kept for it, and how long a replica that called is remembered
local part, hold, memory = tonumber(ARGV[19]), tonumber(ARGV[20]), tonumber(ARGV[21])
-- ARGV[22..]: ages of the units the replica admitted on its fallback share, written into
-- the requests window before anything is decided
local best, kind, src, cd, nc, nfree, tsum = 0, '', '', 0, 0, 0, 0
local function ttl(us) return num(math.ceil(us / 1000) + 1000) end
local epoch = redis.call('GET', KEYS[8])
if not epoch then
  epoch = num(now)
  redis.call('SET', KEYS[8], epoch)
end
redis.call('PEXPIRE', KEYS[8], 86400000) -- a day without an admission: nothing left to lose
epoch = tonumber(epoch)
local reset = known > 0 and known ~= epoch
local function consider(k, w, s)
  if w > best then best, kind, src = w, k, s or '' end
end
-- the wait until the requests window, holding nc units, has room for k more
local function free(k)
  if nc + k <= nreq then return 0 end
  local e = redis.call('ZRANGE', KEYS[2], nc + k - nreq - 1, nc + k - nreq - 1, 'WITHSCORES')
  return math.max(tonumber(e[2]) + span - now, 0)
end
if iv > 0 then
  local last = tonumber(redis.call('GET', KEYS[1]) or '0')
  if last > 0 and last + iv - now > 0 then
    cd = 1
    consider('cooldown', last + iv - now)
  end
end
local nb = 0 -- backlog units written
if hasUp and nreq > 0 and #ARGV >= 22 then
  for i = 22, #ARGV do
    local at = now - tonumber(ARGV[i])
    if at > now - span then
      redis.call('ZADD', KEYS[2], num(at), num(at) .. '-' .. lease .. '-b' .. i)
      nb = nb + 1
    end
  end
  redis.call('PEXPIRE', KEYS[2], ttl(span))
end
-- handover shares the requests window's remainder between the replicas for one window
-- after the store comes back (a replica returns from its fallback share, writes what it
-- admitted there, or finds the store reset): otherwise the replica whose wait queue wakes
-- first takes all of it. The hand-over keeps the remainder r at its start (less the
-- fallback admissions written since) and n, the replicas that called the upstream in the
-- last window, at least those the fallback share stands for. Each replica may take
-- ceil(r / n) of it, and that much more each n-th of the window, so that by the window's
-- end a replica alone takes what the others leave.
--
-- A hand-over also keeps, for hold, the fallback share of each other replica that called
-- the upstream within memory and has not called since (KEYS[11], by when its share is
-- freed): it may still run on its share, its calls there written nowhere until it comes
-- back (a replica whose slot map still names a dead master, a link slower to return), and
-- the replicas back on the store must leave that much of the window. A replica is back
-- with its first call through the store, which writes what it admitted on its share; one
-- that never comes back (killed) holds its share for hold at most. At most least - 1
-- shares are kept: the budget was shared for that many replicas.
local ho = false
local function handover()
  redis.call('ZADD', KEYS[9], num(now), me)
  redis.call('ZREMRANGEBYSCORE', KEYS[9], '-inf', num(now - memory))
  redis.call('PEXPIRE', KEYS[9], ttl(memory))
  local h = redis.call('HMGET', KEYS[10], 'at', 'r', 'n')
  local at, r, n = tonumber(h[1]), tonumber(h[2]), tonumber(h[3])
  if at and now >= at + span then at = nil end
  if not at then
    if not (rejoin or reset or nb > 0) then return end
    at, r = now, math.max(nreq - nc, 0)
    n = math.max(redis.call('ZCOUNT', KEYS[9], num(now - span), '+inf'), least, 1)
    redis.call('DEL', KEYS[10])
    redis.call('HSET', KEYS[10], 'at', num(at), 'r', num(r), 'n', num(n))
    redis.call('PEXPIRE', KEYS[10], ttl(span))
    for _, m in ipairs(redis.call('ZRANGE', KEYS[9], 0, -1)) do
      if m ~= me then redis.call('ZADD', KEYS[11], num(now + hold), m) end
    end
    redis.call('PEXPIRE', KEYS[11], ttl(hold))
  elseif nb > 0 then
    r = tonumber(redis.call('HINCRBY', KEYS[10], 'r', -nb))
  end
  ho = true
  local slice = math.max(math.floor(span / n), 1)
  local k = math.floor((now - at) / slice)
  local allow = math.max(math.ceil(r / n), 1) * (k + 1)
  local mine = tonumber(redis.call('HGET', KEYS[10], 'c:' .. me) or '0')
  if mine + units > allow then consider('requests', at + slice * (k + 1) - now) end
end
-- away keeps the fallback shares of the replicas not back since a hand-over began: the
-- requests window has room for the call only below the limit less those shares, or
-- once they are freed
local function away(k)
  redis.call('ZREM', KEYS[11], me)
  redis.call('ZREMRANGEBYSCORE', KEYS[11], '-inf', num(now))
  local gone = math.min(redis.call('ZCARD', KEYS[11]), least - 1)
  if gone <= 0 then return end
  local lim = nreq - gone * part
  if nc + k <= lim then return end
  local first = redis.call('ZRANGE', KEYS[11], 0, 0, 'WITHSCORES')
  local w = tonumber(first[2]) - now
  local i = nc + k - lim - 1
  if lim > 0 and i < nc then
    local e = redis.call('ZRANGE', KEYS[2], i, i, 'WITHSCORES')
    w = math.min(w, math.max(tonumber(e[2]) + span - now, 1))
  end
  consider('requests', w)
end
if hasUp then
  for i = 6, 7 do
    local b = redis.call('HMGET', KEYS[i], 'until', 'src')
    if b[1] then consider('learned', tonumber(b[1]) - now, b[2]) end
  end
  if nreq > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', num(now - span))
    nc = redis.call('ZCARD', KEYS[2])
    consider('requests', free(units))
    nfree = free(1)
    handover()
    away(units)
  end
  if ntok > 0 then
    local h = redis.call('HGETALL', KEYS[3])
    local bs, sum = {}, 0
    for i = 1, #h, 2 do
      local st, v = tonumber(h[i]), tonumber(h[i + 1])
      if st + g + span <= now then
        redis.call('HDEL', KEYS[3], h[i])
      else
        bs[#bs + 1] = {st, v}
        sum = sum + v
      end
    end
    tsum = sum
    local c = math.min(math.max(cost, 1), ntok)
    if sum + c > ntok then
      table.sort(bs, function(a, b) return a[1] < b[1] end)
      local freed = 0
      for _, b in ipairs(bs) do
        freed = freed + b[2]
        if sum - freed + c <= ntok then
          consider('tokens', b[1] + g + span - now)
          break
        end
      end
    end
  end
  if mi > 0 then
    local last = tonumber(redis.call('GET', KEYS[4]) or '0')
    if last > 0 then consider('interval', last + mi - now) end
  end
  if mc > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', num(now))
    if redis.call('ZCARD', KEYS[5]) >= mc then consider('concurrency', est) end
  end
end
if best > 0 then return {0, now, kind, best, src, cd, 0, nc, nfree, tsum, epoch} end
if not charge then return {1, now, '', 0, '', 0, 0, nc, nfree, tsum, epoch} end
if iv > 0 then redis.call('SET', KEYS[1], num(now), 'PX', ttl(iv)) end
local bucket = 0
if hasUp then
  if nreq > 0 then
    for u = 1, units do
      redis.call('ZADD', KEYS[2], num(now), num(now) .. '-' .. lease .. '-' .. u)
    end
    redis.call('PEXPIRE', KEYS[2], ttl(span))
    nc = nc + units
    nfree = free(1)
    if ho then redis.call('HINCRBY', KEYS[10], 'c:' .. me, units) end
  end
  if ntok > 0 and cost > 0 then
    bucket = now - now % g
    redis.call('HINCRBY', KEYS[3], num(bucket), num(cost))
    redis.call('PEXPIRE', KEYS[3], ttl(span + g))
    tsum = tsum + cost
  end
  if mi > 0 then redis.call('SET', KEYS[4], num(now), 'PX', ttl(mi)) end
  if mc > 0 then
    redis.call('ZADD', KEYS[5], num(now + lttl), lease)
    redis.call('PEXPIRE', KEYS[5], ttl(lttl))
  end
end
return {1, now, '', 0, '', 0, bucket, nc, nfree, tsum, epoch}
