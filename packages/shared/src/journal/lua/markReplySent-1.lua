--[[
  Marks the pending reply as delivered to the agent.
  KEYS[1] delegation hash
  ARGV[1] fencing token
  ARGV[2] reply messageId
  ARGV[3] now (ms)
  Returns: 1 marked, 0 not pending (already sent or replaced), -1 missing, -2 fence mismatch
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local row = redis.call('HMGET', KEYS[1], 'fence', 'replyMessageId', 'replyState')
if row[1] ~= ARGV[1] then return -2 end
if row[2] ~= ARGV[2] or row[3] ~= 'pending' then return 0 end
redis.call('HSET', KEYS[1], 'replyState', 'sent', 'updatedAt', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'version', 1)
return 1
