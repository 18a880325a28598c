--[[
  Releases a held intent (journaled at workflow start, waiting for earlier
  steps) so the send queue may send it. Compare-and-set on the workflow's
  version when one is given: a decision made from an older read of the
  workflow (a cancel or a stop written since) releases nothing.
  KEYS[1] delegation hash (its workflow row is the same hash-tagged prefix + ':wf', the same slot)
  ARGV[1] now (ms)
  ARGV[2] expected workflow version ('' = unchecked)
  Returns: 1 released, 0 not held (already released), DELEGATION_MISSING, VERSION_CONFLICT (the workflow's)
]]
--- @include "prelude"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
if ARGV[2] ~= '' then
  local workflowKey = string.match(KEYS[1], '^(.*}):d:') .. ':wf'
  if redis.call('HGET', workflowKey, 'version') ~= ARGV[2] then return CODE.VERSION_CONFLICT end
end
if redis.call('HGET', KEYS[1], 'held') ~= '1' then return 0 end
redis.call('HSET', KEYS[1], 'held', '0', 'updatedAt', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'version', '1')
return 1
