--[[
  Journals one step of a delegation's push notification config life cycle
  (A2A §4.3.3 / §9): where it stands and the config id the agent knows (our
  own deterministic id, or the one the agent assigned). Compare-and-set on the
  life cycle field, so two workers never both create, and never both delete.
  'deleted' is final: nothing moves the life cycle out of it.
  The row's version is not bumped: no transition of the delegation reads these
  fields, and a bump would turn concurrent versioned writes (the push webhook,
  the reconciler) into needless VERSION_CONFLICT retries.
  KEYS[1] delegation hash
  ARGV[1] expected state ('' = not checked yet, '*' = any state but ARGV[2])
  ARGV[2] new state: creating | registered | unconfirmed | refused | deleted
  ARGV[3] config id ('' = keep the journaled one)
  Returns: 1 written; 0 the state was not the expected one (nothing written); DELEGATION_MISSING
]]
--- @include "prelude"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
local current = redis.call('HGET', KEYS[1], 'pushConfigState') or ''
if current == 'deleted' then return 0 end
if ARGV[1] == '*' then
  if current == ARGV[2] then return 0 end
elseif current ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'pushConfigState', ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'pushConfigId', ARGV[3]) end
return 1
