--[[
  A worker's heartbeat: sets its liveness key for ARGV[2] ms and its roster
  entry to now (Redis's clock, so every worker agrees), and names the workers
  whose last heartbeat is older than the TTL given (ARGV[2]; candidates: the caller
  confirms each with forgetWorker-2.lua). One call per worker per beat, whatever
  the number of streams it holds.
  When no worker at all beat for a whole TTL (Redis was away and came back from its data, its liveness keys run out
  meanwhile; or the whole fleet stopped), a silence says nothing about any one worker: every worker on the roster is
  given one TTL from now to beat again before it is named (else the first worker back would sweep every live peer).
  KEYS[1] this worker's liveness key
  KEYS[2] the fleet's roster (sorted set: worker id by last heartbeat, ms)
  ARGV[1] this worker's id
  ARGV[2] liveness TTL in ms
  ARGV[3] most silent workers named per beat
  Returns: { 1 if this worker's liveness key was still there (0: it had lapsed, peers may have
           taken its leases), 1 if the roster already listed this id (0: new), the ids of silent
           workers (this one never among them), ms until the next other worker on the roster turns
           silent if it does not beat again (its entry's age reaches the TTL, its liveness key runs
           out with it), or -1 when no other worker is listed and not yet silent }
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ttl = tonumber(ARGV[2])
local newest = redis.call('ZREVRANGE', KEYS[2], '0', '0', 'WITHSCORES')
if newest[2] and tonumber(newest[2]) <= now - ttl then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], '0', '-1')) do redis.call('ZADD', KEYS[2], now, id) end
end
local was = redis.call('SET', KEYS[1], '1', 'PX', ttl, 'GET')
local added = redis.call('ZADD', KEYS[2], now, ARGV[1])
local silent = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - ttl, 'LIMIT', '0', tonumber(ARGV[3]))
-- The oldest entries not yet silent (this worker's, at now, is the newest): the first other one turns silent next.
local nextSilentIn = -1
local oldest = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. (now - ttl), '+inf', 'WITHSCORES', 'LIMIT', '0', '2')
for i = 1, #oldest, 2 do
  if oldest[i] ~= ARGV[1] then
    nextSilentIn = tonumber(oldest[i + 1]) + ttl - now
    break
  end
end
return { was and 1 or 0, 1 - added, silent, nextSilentIn }
