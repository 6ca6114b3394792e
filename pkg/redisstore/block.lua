-- block sets a learned block for ARGV[1] microseconds unless a longer one is set.
local untl = now + tonumber(ARGV[1])
local cur = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
if untl > cur then
  redis.call('HSET', KEYS[1], 'until', num(untl), 'src', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], num(math.ceil((untl - now) / 1000) + 1000))
end
return 1
