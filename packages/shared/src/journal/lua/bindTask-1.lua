--[[
  Binds an agent's task id to one delegation (issue 12, kind "ownership"): a
  task id belongs to at most one delegation. Runs before applyStatus records a
  new task id (the index lives in its own Cluster slot, so it cannot share that
  script); a crash in between leaves an entry that names the delegation that
  was about to record it, which is harmless and idempotent.
  KEYS[1] task index key (per agent and task id)
  ARGV[1] owner: 'workflowId|delegationId'
  ARGV[2] time to live in ms ('0' = none)
  Returns: {1, owner} bound to ARGV[1] (new or already); {0, owner} bound to another delegation
]]
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return {0, owner} end
if not owner then
  if tonumber(ARGV[2]) > 0 then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  else redis.call('SET', KEYS[1], ARGV[1]) end
end
return {1, ARGV[1]}
