--[[
  A fleet-wide smooth rate limit (resubscriptions): each caller reserves the
  next free slot, spaced window/max apart, so a restarted agent sees an even
  stream instead of bursts, and every waiting job is delayed once, not woken
  again and again. One call reserves `count` slots for `count` callers of one
  process, one after the other, exactly as `count` calls of one slot each
  would at this instant (the same Redis time): the limit is the same whatever
  the batching.
  KEYS[1] key holding the next free slot (ms since the epoch)
  ARGV[1] max per window
  ARGV[2] window in ms
  ARGV[3] longest wait handed out, in ms: beyond it the schedule restarts from now (a backlog
          that large, or a failover to a node whose clock is behind, must not push slots out forever)
  ARGV[4] slots to reserve (1 or more)
  Returns: per slot, in order: 0 to go now, else the ms to wait for it
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local spacing = tonumber(ARGV[2]) / tonumber(ARGV[1])
local maxWait = tonumber(ARGV[3])
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
local waits = {}
for index = 1, tonumber(ARGV[4]) do
  if slot < now or slot - now > maxWait then slot = now end
  waits[index] = math.floor(slot - now)
  slot = slot + spacing
end
redis.call('SET', KEYS[1], tostring(slot), 'PX', math.ceil(slot - now) + 1000)
return waits
