--[[
  Starts a follow: takes the delegation's follow lease and, only when it is
  ours, claims the delegation (bumps the fencing token) in the same step, so
  a follow that is turned away fences nobody out (lease-1.lua's acquire and
  claim-1.lua, one round trip).
  KEYS[1] delegation hash
  KEYS[2] lease key
  ARGV[1] holder token (also recorded as the owner)
  ARGV[2] lease duration in ms
  Returns: the new fencing token (>= 1), 0 the lease is held by another
           holder, -1 the delegation is missing (no lease left behind)
]]
local token = ARGV[1]
if not redis.call('SET', KEYS[2], token, 'NX', 'PX', ARGV[2]) then
  if redis.call('GET', KEYS[2]) ~= token then return 0 end
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
local row = redis.call('HMGET', KEYS[1], 'delegationId', 'fence')
if not row[1] then
  redis.call('DEL', KEYS[2])
  return -1
end
local fence = (tonumber(row[2]) or 0) + 1
redis.call('HSET', KEYS[1], 'fence', tostring(fence), 'owner', token)
return fence
