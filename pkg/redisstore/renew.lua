-- renew extends the leases ARGV[2..] that still exist (a lease given back, or expired and
-- swept, stays gone) to now + ARGV[1] microseconds.
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', num(now + ttl), ARGV[i])
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  local left = redis.call('PTTL', KEYS[1])
  local want = math.ceil(ttl / 1000) + 1000
  if left >= 0 and left < want then redis.call('PEXPIRE', KEYS[1], num(want)) end
end
return 1
