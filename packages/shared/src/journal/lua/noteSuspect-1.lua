--[[
  Keeps a task a refused push showed holding our message (the push route's suspect) among the delegation's pending
  suspects, for the reconciler to read by GetTask (clearSuspects-1.lua removes what it read). Rows field `suspects`:
  a JSON array of task ids, oldest first, at most ARGV[2] of them; an id arriving while that many wait unread is not
  kept and is counted in `suspectsOverCap` (the oldest unread ones are kept: a flood of new ids cannot push out one
  already waiting). Both fields are the row's own, so they live and expire with it (operational: never compacted).
  The version is not bumped: nothing a worker decides from changes.
  KEYS[1] delegation hash
  ARGV[1] task id (1 to SUSPECT_TASK_ID_MAX characters)
  ARGV[2] cap (SUSPECTS_PENDING_MAX)
  Returns: 1 kept; 2 already pending; 3 over the cap (counted, not kept); 0 finished (nothing kept);
  DELEGATION_MISSING
]]
--- @include "prelude"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
if FINISHED[redis.call('HGET', KEYS[1], 'state')] then return 0 end
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
  redis.call('HINCRBY', KEYS[1], 'suspectsOverCap', 1)
  return 3
end
ids[#ids + 1] = ARGV[1]
redis.call('HSET', KEYS[1], 'suspects', cjson.encode(ids))
return 1
