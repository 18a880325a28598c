--[[
  Rebases the send order's virtual clock (sendOrder-2.lua): the clock back to place 0 and every tenant's entry gone,
  so places stay inside the delegation priority's band (200,000 places, send-priority.ts) for as long as the fleet
  runs. The caller (FairSendQueue.rebaseOrderWhenIdle) calls it only when the send queue held no job at all (waiting,
  prioritized, delayed, active: one BullMQ count, atomic): no message send is then waiting at a place a rebase would
  put behind newer sends, and no job is running that could add its next try at an old place.
  KEYS[1] the clock hash (`v`, `ms`, `at`: Redis's time, ms, of the last place given, `t:<tenant>` entries)
  ARGV[1] from: the clock's place from which a rebase is due (places; `SEND_ORDER_REBASE_FROM`, a quarter of the band)
  ARGV[2] quietMs: no place may have been given for this long (Redis's time, ms)
  ARGV[3] the Redis time one place of the clock lasts (ms), for the hash's expiry as sendOrder-2.lua sets it
  Returns 1 rebased; 0 not due (no clock, or the clock before `from`: a clock already rebased by another worker, the
  compare-and-set); 2 a place given less than quietMs ago (or `at` absent: only an earlier release placed sends).
  Why only from a quarter of the band: a rebase forgives every tenant's lead (a tenant that had a burst served starts
  at the clock again); done at every idle moment it would undo the fairness over time, so it is done about monthly
  (50,000 places at 60 s: 35 days), leaving 130,000 places (90 days) to find an idle moment before places reach the
  band's end (200,000 − PLACE_LEAD).
  Why quietMs: a place is taken (this hash) and then its job added (BullMQ's keys, another slot in a Cluster): a send
  placed before the queue was counted and added after it is in no count. With no place given for quietMs before the
  rebase, such a send was held more than quietMs between its place and its add (an event loop stalled that long, a
  connection's offline queue); then it waits at its old place behind sends placed after the rebase until its band's
  sends at lower places are served, and its next try, if any, is placed at the clock (keepSendPlace-1.lua).
  Commands: HMGET, TIME; when rebased DEL, HSET, PEXPIRE.
]]
--- @include "sendPlaceLead"
local stored = redis.call('HMGET', KEYS[1], 'v', 'at')
local clock, at = tonumber(stored[1]), tonumber(stored[2])
if clock == nil or clock ~= clock or clock < tonumber(ARGV[1]) then return 0 end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
-- `at` ahead of now (Redis's clock stepped back) counts as recent: the rebase waits.
if at == nil or at ~= at or now - at < tonumber(ARGV[2]) then return 2 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'v', '0', 'ms', string.format('%d', now), 'at', string.format('%d', at))
redis.call('PEXPIRE', KEYS[1], (PLACE_LEAD + 2) * tonumber(ARGV[3]))
return 1
