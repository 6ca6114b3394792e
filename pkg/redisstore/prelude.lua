-- Times are microseconds of the clock of the Redis node that runs the script (TIME): with
-- Redis Cluster, the node that owns the slot of the script's keys. Lua numbers are
-- doubles, exact for these integers; num() writes them without an exponent.
local function num(n) return string.format('%.0f', n) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
