--[[
  The reconciler proved the agent never received our message: clear the
  "may have been sent" mark so the send queue resends with the SAME messageId.
  A release on a search that PROVED our message absent (ARGV[5] '1') covers every send so far: `provenAbsentSends`
  becomes the sends that may have left as policy.ts `earlierSendsMayHaveLeft` counts them (sendCount less the marked
  tries journaled as never left, unreachableCount - unsentTries), so that count is 0 right after it and counts only
  later sends. A release without that proof (a deduplicating agent that cannot list tasks, a refusal of one send)
  leaves it as it is: those sends may still be at the agent.
  KEYS[1] delegation hash
  ARGV[1] expected version (compare-and-set on what the reconciler read)
  ARGV[2] now (ms)
  ARGV[3] '1' if the agent refused our contextId (resend without it), else '0'
  ARGV[4] the interface to resend on (JSON, P37: the next one the card lists after one that refused our
          version), or '' to keep the journaled one
  ARGV[5] '1' if a search proved our message absent at the agent, else '0' (or absent: a caller of an older release)
  Returns: 1 released, DELEGATION_MISSING, VERSION_CONFLICT, WRONG_STATE not in INTENT or task known
]]
--- @include "prelude"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
local row = redis.call('HMGET', KEYS[1], 'version', 'state', 'taskId')
if row[1] ~= ARGV[1] then return CODE.VERSION_CONFLICT end
if row[2] ~= 'INTENT' or (row[3] and row[3] ~= '') then return CODE.WRONG_STATE end
redis.call('HSET', KEYS[1], 'sendStartedAt', '', 'updatedAt', ARGV[2])
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'contextRefused', '1') end
if ARGV[4] and ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'agentInterface', ARGV[4]) end
if ARGV[5] == '1' then
  local counts = redis.call('HMGET', KEYS[1], 'sendCount', 'unreachableCount', 'unsentTries', 'provenAbsentSends')
  local left = (tonumber(counts[1]) or 0) - ((tonumber(counts[2]) or 0) - (tonumber(counts[3]) or 0))
  local covered = math.max(left, tonumber(counts[4]) or 0, 0)
  redis.call('HSET', KEYS[1], 'provenAbsentSends', tostring(covered))
end
redis.call('HINCRBY', KEYS[1], 'resendCount', '1')
redis.call('HINCRBY', KEYS[1], 'version', '1')
return 1
