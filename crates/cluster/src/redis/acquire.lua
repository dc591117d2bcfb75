-- Takes `want` tokens of one cluster rule's sliding windows, atomically.
--
-- KEYS[1]     the rule's members: a sorted set of instance -> last seen (ms)
-- KEYS[2..]   the windows to take from (the rule's, or one per argument value of a hot-parameter
--             rule): hashes of bucket start (ms, Redis's clock) -> tokens granted in that bucket
-- ARGV        bucket length ms, sample count, global (1) or average-local (0), want, this member,
--             member time-to-live ms, partial (1: grant what is free, up to want; 0: all or
--             nothing), then each window's count, in the order of its key
--
-- A window is the rule's `sampleCount` buckets of `windowIntervalMs / sampleCount` each, as the
-- engine's own windows are: a bucket counts while its start is within the interval before now's
-- bucket. A window's threshold is its count, or its count times the members seen within their
-- time-to-live for an average-local rule. The grant is taken from every window alike. Returns
-- {granted, the least left in a window after the grant, ms until a window that kept the grant
-- below want frees its oldest counted bucket (0 when none did), members}.
if redis.replicate_commands then
  pcall(redis.replicate_commands)
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local bucket_ms = tonumber(ARGV[1])
local interval = bucket_ms * tonumber(ARGV[2])
local start = now - now % bucket_ms
local global = ARGV[3] == '1'
local want = tonumber(ARGV[4])
local ttl = tonumber(ARGV[6])
local partial = ARGV[7] == '1'

redis.call('ZADD', KEYS[1], now, ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
redis.call('PEXPIRE', KEYS[1], ttl * 2)
local members = redis.call('ZCARD', KEYS[1])

local granted = want
local frees = {}
local oldests = {}
for k = 2, #KEYS do
  local threshold = tonumber(ARGV[6 + k])
  if not global then
    threshold = threshold * members
  end
  local used = 0
  local oldest = nil
  local buckets = redis.call('HGETALL', KEYS[k])
  for i = 1, #buckets, 2 do
    local bucket = tonumber(buckets[i])
    if bucket > start - interval then
      local tokens = tonumber(buckets[i + 1])
      used = used + tokens
      if tokens > 0 and (oldest == nil or bucket < oldest) then
        oldest = bucket
      end
    else
      redis.call('HDEL', KEYS[k], buckets[i])
    end
  end
  local free = math.floor(threshold - used)
  frees[k] = free
  oldests[k] = oldest
  if free < granted then
    granted = math.max(free, 0)
  end
end
if not partial and granted < want then
  granted = 0
end

local least = nil
local wait = 0
for k = 2, #KEYS do
  local oldest = oldests[k]
  if granted > 0 then
    redis.call('HINCRBY', KEYS[k], string.format('%d', start), granted)
    if oldest == nil then
      oldest = start
    end
  end
  redis.call('PEXPIRE', KEYS[k], interval + bucket_ms)
  local left = frees[k] - granted
  if least == nil or left < least then
    least = left
  end
  if frees[k] < want and oldest ~= nil and oldest + interval - now > wait then
    wait = oldest + interval - now
  end
end
return {granted, least, wait, members}
