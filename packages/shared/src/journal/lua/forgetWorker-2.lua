--[[
  Takes a silent worker off the roster when its liveness key is gone: exactly
  one caller gets 1 and sweeps the dead worker's leases (a worker still alive,
  or one already forgotten, gives 0).
  KEYS[1] the silent worker's liveness key
  KEYS[2] the fleet's roster (heartbeat-2.lua)
  ARGV[1] the silent worker's id
  Returns: 1 forgotten now (the caller sweeps), 0 alive or already forgotten
]]
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
return redis.call('ZREM', KEYS[2], ARGV[1])
