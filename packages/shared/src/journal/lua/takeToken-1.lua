--[[
  A fleet-wide smooth rate limit (resubscriptions): each caller reserves the
  next free slot, spaced window/max apart, so a restarted agent sees an even
  stream instead of bursts, and every waiting job is delayed once, not woken
  again and again.
  KEYS[1] key holding the next free slot (ms since the epoch)
  ARGV[1] max per window
  ARGV[2] window in ms
  ARGV[3] longest wait handed out, in ms: beyond it the schedule restarts from now (a backlog
          that large, or a failover to a node whose clock is behind, must not push slots out forever)
  Returns: 0 to go now, else the ms to wait for the reserved slot
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local spacing = tonumber(ARGV[2]) / tonumber(ARGV[1])
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
if slot < now or slot - now > tonumber(ARGV[3]) then slot = now end
redis.call('SET', KEYS[1], tostring(slot + spacing), 'PX', math.ceil(slot + spacing - now) + 1000)
return math.floor(slot - now)
