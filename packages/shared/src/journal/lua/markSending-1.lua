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
local row = redis.call('HMGET', KEYS[1], 'fence', 'state', 'sendStartedAt', 'delegationId', 'sendCount', 'version')
if not row[4] then return -1 end
if row[1] ~= ARGV[1] then return -2 end
if row[2] ~= 'INTENT' then return -4 end
if row[3] and row[3] ~= '' then return -6 end
local set = { 'sendStartedAt', ARGV[2], 'updatedAt', ARGV[2],
  'sendCount', tostring((tonumber(row[5]) or 0) + 1), 'version', tostring((tonumber(row[6]) or 0) + 1) }
if ARGV[3] ~= '' then set[#set + 1] = 'agentInterface'; set[#set + 1] = ARGV[3] end
redis.call('HSET', KEYS[1], unpack(set))
return 1
