-- Takes up to `want` tokens of one cluster rule's sliding window, atomically.
--
-- KEYS[1]  the window: a hash of bucket start (ms, Redis's clock) -> tokens granted in that bucket
-- KEYS[2]  the rule's members: a sorted set of instance -> last seen (ms)
-- ARGV     bucket length ms, sample count, count, global (1) or average-local (0), want,
--          this instance, member time-to-live ms
--
-- The window is the rule's `sampleCount` buckets of `windowIntervalMs / sampleCount` each, as the
-- engine's own windows are: a bucket counts while its start is within the interval before now's
-- bucket. The threshold is `count`, or `count` times the members seen within their time-to-live
-- for an average-local rule. Returns {granted, left after the grant, ms until the oldest counted
-- bucket leaves the window (0 when none counts), members}.
if redis.replicate_commands then
  pcall(redis.replicate_commands)
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local bucket_ms = tonumber(ARGV[1])
local interval = bucket_ms * tonumber(ARGV[2])
local start = now - now % bucket_ms
local ttl = tonumber(ARGV[7])

redis.call('ZADD', KEYS[2], now, ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ttl)
redis.call('PEXPIRE', KEYS[2], ttl * 2)
local members = redis.call('ZCARD', KEYS[2])

local threshold = tonumber(ARGV[3])
if ARGV[4] ~= '1' then
  threshold = threshold * members
end

local used = 0
local oldest = nil
local buckets = redis.call('HGETALL', KEYS[1])
for i = 1, #buckets, 2 do
  local bucket = tonumber(buckets[i])
  if bucket > start - interval then
    local tokens = tonumber(buckets[i + 1])
    used = used + tokens
    if tokens > 0 and (oldest == nil or bucket < oldest) then
      oldest = bucket
    end
  else
    redis.call('HDEL', KEYS[1], buckets[i])
  end
end

local free = math.floor(threshold - used)
local want = tonumber(ARGV[5])
local granted = want
if free < want then
  granted = math.max(free, 0)
end
if granted > 0 then
  redis.call('HINCRBY', KEYS[1], string.format('%d', start), granted)
  if oldest == nil then
    oldest = start
  end
end
redis.call('PEXPIRE', KEYS[1], interval + bucket_ms)

local wait = 0
if oldest ~= nil then
  wait = oldest + interval - now
end
return {granted, free - granted, wait, members}
