--[[
  Records that a SendMessage is about to leave. From here on a send may have
  happened, so nobody resends without asking the agent first (reconcile).
  KEYS[1] delegation hash
  ARGV[1] fencing token
  ARGV[2] now (ms)
  ARGV[3] chosen agent interface JSON ('' = unchanged)
  Returns: 1 marked, -1 missing, -2 fence mismatch, -4 not in INTENT,
           -6 a send may already have happened (sendStartedAt set)
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local row = redis.call('HMGET', KEYS[1], 'fence', 'state', 'sendStartedAt')
if row[1] ~= ARGV[1] then return -2 end
if row[2] ~= 'INTENT' then return -4 end
if row[3] and row[3] ~= '' then return -6 end
redis.call('HSET', KEYS[1], 'sendStartedAt', ARGV[2], 'updatedAt', ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'agentInterface', ARGV[3]) end
redis.call('HINCRBY', KEYS[1], 'sendCount', 1)
redis.call('HINCRBY', KEYS[1], 'version', 1)
return 1
