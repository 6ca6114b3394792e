-- admit checks, in the memory store's order, the cooldown, learned blocks, the requests
-- window, the tokens window, the minimum interval and the calls in flight; it keeps the
-- longest wait; with charge set and nothing in the way, it charges them all.
-- KEYS: cooldown, requests, tokens, last admission, leases, block of the whole upstream,
-- block of the endpoint's quota resource, epoch; all on one hash tag.
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
-- ARGV[15..]: ages of the units the replica admitted on its fallback share, written into
-- the requests window before anything is decided
local best, kind, src, cd, nc, nfree, tsum = 0, '', '', 0, 0, 0, 0
local epoch = redis.call('GET', KEYS[8])
if not epoch then
  epoch = num(now)
  redis.call('SET', KEYS[8], epoch)
end
redis.call('PEXPIRE', KEYS[8], 86400000) -- a day without an admission: nothing left to lose
epoch = tonumber(epoch)
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
if hasUp and nreq > 0 and #ARGV >= 15 then
  for i = 15, #ARGV do
    local at = now - tonumber(ARGV[i])
    if at > now - span then redis.call('ZADD', KEYS[2], num(at), num(at) .. '-' .. lease .. '-b' .. i) end
  end
  redis.call('PEXPIRE', KEYS[2], num(math.ceil(span / 1000) + 1000))
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
local function ttl(us) return num(math.ceil(us / 1000) + 1000) end
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
