--[[
  Keeps a task a refused push showed holding our message (the push route's suspect) among the delegation's pending
  suspects, for the reconciler to read by GetTask (clearSuspects-1.lua removes what it read). Row field `suspects`: a
  JSON array of task ids, oldest first, at most ARGV[2] of them (a queue the reconciler drains a few a job). A suspect
  that cannot be kept (ARGV[1] empty: its id is longer than SUSPECT_TASK_ID_MAX; or ARGV[2] already wait unread) is
  evidence lost, counted in `suspectsLost`: never dropped silently, the reconciler leaves the row to a person once
  what waits is read (the oldest unread are kept: a flood of new ids cannot push out one already waiting). Both fields
  are the row's own, so they live and expire with it (operational: never compacted). The version is not bumped: the
  reconciler reads the fields, nothing fenced on the version changes. A FINISHED row keeps them too: its state never
  changes, but a suspect read after it finished may show the agent holding our message twice (DUPLICATE_TASK,
  noteDuplicateTask-1.lua) and one lost is told as unchecked (noteSuspectsUnchecked-1.lua); the finished-row reconcile
  reads them (workers runs/finished-suspects.ts). A compacted workflow's rows are gone: DELEGATION_MISSING.
  KEYS[1] delegation hash
  ARGV[1] task id (1 to SUSPECT_TASK_ID_MAX characters), or '' for one that cannot be kept (too long)
  ARGV[2] cap (SUSPECTS_PENDING_MAX)
  Returns: 1 kept; 2 already pending; 3 not kept, counted lost (over the cap, or ARGV[1] empty); DELEGATION_MISSING
]]
--- @include "prelude"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
if ARGV[1] == '' then
  redis.call('HINCRBY', KEYS[1], 'suspectsLost', '1')
  return 3
end
local raw = redis.call('HGET', KEYS[1], 'suspects')
local ids = {}
if raw then
  local ok, decoded = pcall(cjson.decode, raw)
  if ok and type(decoded) == 'table' then ids = decoded end
end
for _, id in ipairs(ids) do
  if id == ARGV[1] then return 2 end
end
if #ids >= tonumber(ARGV[2]) then
  redis.call('HINCRBY', KEYS[1], 'suspectsLost', '1')
  return 3
end
ids[#ids + 1] = ARGV[1]
redis.call('HSET', KEYS[1], 'suspects', cjson.encode(ids))
return 1
