--[[
  Takes ownership of a delegation for one job run: bumps the fencing token.
  Every later write by that run passes the token; a run that lost its job lock
  holds an older token and its writes are refused (FENCE_LOST).
  KEYS[1] delegation hash
  ARGV[1] owner description (worker id and job id), for operators
  Returns: the new fencing token (>= 1), or DELEGATION_MISSING
]]
--- @include "prelude"
local row = redis.call('HMGET', KEYS[1], 'delegationId', 'fence')
if not row[1] then return CODE.DELEGATION_MISSING end
local fence = (tonumber(row[2]) or 0) + 1
redis.call('HSET', KEYS[1], 'fence', tostring(fence), 'owner', ARGV[1])
return fence
