-- settle charges ARGV[1] more tokens now, or refunds up to -ARGV[1] from a bucket.
local d, bucket, g, span = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
if d > 0 then
  redis.call('HINCRBY', KEYS[1], num(now - now % g), num(d))
  redis.call('PEXPIRE', KEYS[1], num(math.ceil((span + g) / 1000) + 1000))
elseif d < 0 then
  local v = tonumber(redis.call('HGET', KEYS[1], bucket) or '0')
  if v > 0 then redis.call('HINCRBY', KEYS[1], bucket, num(-math.min(-d, v))) end
end
return 1
