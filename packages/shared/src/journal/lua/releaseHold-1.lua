--[[
  Releases a held intent (journaled at workflow start, waiting for earlier
  steps) so the send queue may send it.
  KEYS[1] delegation hash
  ARGV[1] now (ms)
  Returns: 1 released, 0 not held (already released), -1 missing
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'held') ~= '1' then return 0 end
redis.call('HSET', KEYS[1], 'held', '0', 'updatedAt', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'version', 1)
return 1
