--[[
  Takes ownership of a delegation for one job run: bumps the fencing token.
  Every later write by that run passes the token; a run that lost its job lock
  holds an older token and its writes are refused (-2).
  KEYS[1] delegation hash
  ARGV[1] owner description (worker id and job id), for operators
  Returns: the new fencing token (>= 1), or -1 if the delegation is missing
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local fence = redis.call('HINCRBY', KEYS[1], 'fence', 1)
redis.call('HSET', KEYS[1], 'owner', ARGV[1])
return fence
