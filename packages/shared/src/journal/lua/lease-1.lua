--[[
  A per-delegation lease held while a follow stream is open, so that two
  sweeps or a sweep and a resubscription never open two streams (field case R22).
  KEYS[1] lease key
  ARGV[1] 'acquire' | 'renew' | 'release'
  ARGV[2] holder token
  ARGV[3] lease duration in ms (acquire, renew)
  The renewal of an open stream's lease, which also takes back one that ran out, is keepLease-2.lua.
  Returns: 1 done, 0 held by someone else (acquire) or not ours (renew, release)
]]
local op, token = ARGV[1], ARGV[2]
if op == 'acquire' then
  if redis.call('SET', KEYS[1], token, 'NX', 'PX', ARGV[3]) then return 1 end
  if redis.call('GET', KEYS[1]) == token then redis.call('PEXPIRE', KEYS[1], ARGV[3]); return 1 end
  return 0
end
if redis.call('GET', KEYS[1]) ~= token then return 0 end
if op == 'renew' then return redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
redis.call('DEL', KEYS[1])
return 1
