--[[
  Moves the journaled reply forward: 'pending' → 'sending' (about to leave: from
  here on a retry asks the agent before sending again) → 'sent' (delivered).
  KEYS[1] delegation hash
  ARGV[1] fencing token
  ARGV[2] reply messageId
  ARGV[3] now (ms)
  ARGV[4] new reply state: 'sending' | 'sent' | 'refused' (the agent refused it for good: the
          question opens again for another answer)
  ARGV[5] why it was refused (with 'refused')
  Returns: 1 marked, 0 not in the state before (already moved on, or replaced),
           -1 missing, -2 fence mismatch
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local row = redis.call('HMGET', KEYS[1], 'fence', 'replyMessageId', 'replyState')
if row[1] ~= ARGV[1] then return -2 end
local before = ARGV[4] == 'sending' and { pending = true } or { pending = true, sending = true }
if row[2] ~= ARGV[2] or not before[row[3]] then return 0 end
redis.call('HSET', KEYS[1], 'replyState', ARGV[4], 'updatedAt', ARGV[3])
if ARGV[4] == 'refused' then redis.call('HSET', KEYS[1], 'replyForQuestion', '', 'replyError', ARGV[5] or '') end
redis.call('HINCRBY', KEYS[1], 'version', 1)
return 1
