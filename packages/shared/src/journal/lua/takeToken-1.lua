--[[
  A fleet-wide fixed-window rate limit (resubscriptions per window), so a
  restarted agent is not stormed by every worker at once.
  KEYS[1] window counter key
  ARGV[1] max per window
  ARGV[2] window in ms
  Returns: 0 when a token was taken, else the ms until the window ends
]]
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if count <= tonumber(ARGV[1]) then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]); ttl = tonumber(ARGV[2]) end
return ttl
