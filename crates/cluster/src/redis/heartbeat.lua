-- Marks this instance a member of one cluster rule, seen now (Redis's clock).
--
-- KEYS[1]  the rule's members: a sorted set of instance -> last seen (ms)
-- ARGV     this instance, member time-to-live ms
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
return redis.call('ZCARD', KEYS[1])
