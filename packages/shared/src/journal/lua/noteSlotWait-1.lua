--[[
  A send that must wait for its agent (flow control: every slot of the agent held across the fleet, this worker's
  share of send slots for it full, its send rate, or a pause it asked for with Retry-After): nothing was sent, the
  attempt stays INTENT and waits for its next try, journaled so every view shows why it waits ("waiting for a slot
  at <agent>") and the reconciler leaves it to its delayed send. Compare-and-set on the send run's fencing token,
  before the send mark only (a marked row may have been sent: it is never told to wait).
  KEYS[1] delegation hash
  ARGV[1] fencing token of the send run (the row's `fence` as the run read it)
  ARGV[2] now (ms)
  ARGV[3] the next try's time (ms)
  Returns: {version} as written; {DELEGATION_MISSING}, {FENCE_LOST}, {WRONG_STATE} not INTENT or a task is bound,
           {MAY_HAVE_SENT} the row is marked
]]
--- @include "prelude"
local row = redis.call('HMGET', KEYS[1], 'delegationId', 'fence', 'state', 'taskId', 'sendStartedAt', 'version')
if not row[1] then return {CODE.DELEGATION_MISSING} end
if (tonumber(row[2]) or 0) ~= tonumber(ARGV[1]) then return {CODE.FENCE_LOST} end
if row[3] ~= 'INTENT' or (row[4] and row[4] ~= '') then return {CODE.WRONG_STATE} end
if row[5] and row[5] ~= '' then return {CODE.MAY_HAVE_SENT} end
local version = (tonumber(row[6]) or 0) + 1
redis.call('HSET', KEYS[1], 'slotWaitUntil', ARGV[3], 'nextTryAt', ARGV[3], 'updatedAt', ARGV[2], 'version', tostring(version))
return {version}
