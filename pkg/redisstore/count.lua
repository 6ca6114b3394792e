-- count counts one event in a sorted set if fewer than ARGV[1] are in the window of
-- ARGV[2] microseconds; ARGV[3] makes the member unique.
-- Reply: allowed, wait until the next event can pass (microseconds), remaining, events in
-- the window (this one included when allowed).
local lim, win = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', num(now - win))
local c = redis.call('ZCARD', KEYS[1])
if c >= lim then
  local e = redis.call('ZRANGE', KEYS[1], c - lim, c - lim, 'WITHSCORES')
  return {0, tonumber(e[2]) + win - now, 0, c}
end
redis.call('ZADD', KEYS[1], num(now), num(now) .. '-' .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], num(math.ceil(win / 1000) + 1000))
local rem, wait = lim - c - 1, 0
if rem == 0 then
  local e = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  wait = tonumber(e[2]) + win - now
end
return {1, wait, rem, c + 1}
