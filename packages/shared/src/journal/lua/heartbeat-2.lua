--[[
  A worker's heartbeat: sets its liveness key for ARGV[2] ms and its roster
  entry to now (Redis's clock, so every worker agrees), and names the workers
  whose last heartbeat is older than their liveness TTL (candidates: the caller
  confirms each with forgetWorker-2.lua). One call per worker per beat, whatever
  the number of streams it holds.
  KEYS[1] this worker's liveness key
  KEYS[2] the fleet's roster (sorted set: worker id by last heartbeat, ms)
  ARGV[1] this worker's id
  ARGV[2] liveness TTL in ms
  ARGV[3] most silent workers named per beat
  Returns: { 1 if this worker's liveness key was still there (0: it had lapsed, peers may have
           taken its leases), 1 if the roster already listed this id (0: new), the ids of silent
           workers (this one never among them) }
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ttl = tonumber(ARGV[2])
local was = redis.call('SET', KEYS[1], '1', 'PX', ttl, 'GET')
local added = redis.call('ZADD', KEYS[2], now, ARGV[1])
local silent = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - ttl, 'LIMIT', 0, tonumber(ARGV[3]))
return { was and 1 or 0, 1 - added, silent }
