--[[
  Counts a TaskNotFoundError for a task we once had (field case R13). The
  caller marks LOST only after several answers over a window, never on one.
  KEYS[1] delegation hash
  ARGV[1] now (ms)
  Returns: {count, firstNotFoundAt}, or {DELEGATION_MISSING, 0} if missing
]]
--- @include "prelude"
if redis.call('EXISTS', KEYS[1]) == 0 then return {CODE.DELEGATION_MISSING, 0} end
local count = redis.call('HINCRBY', KEYS[1], 'notFoundCount', '1')
local first = redis.call('HGET', KEYS[1], 'firstNotFoundAt')
if not first or first == '' then
  first = ARGV[1]
  redis.call('HSET', KEYS[1], 'firstNotFoundAt', first)
end
return {count, tonumber(first)}
