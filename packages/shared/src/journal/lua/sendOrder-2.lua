--[[
  A message send's place among the sends its tenant enqueued in the current window: the send queue orders sends of
  one priority by place (BullMQ priority), so a tenant's burst takes places 0, 1, 2, … and another tenant's next
  send takes place 0 again, ahead of the burst's tail (weighted fair queueing between tenants, send-order.ts).
  KEYS[1] name of the window counts: the current window's hash (tenant → sends enqueued) is KEYS[1]..':'..window,
          window = Redis's clock (ms) / window length; same hash tag as KEYS[1], so the same Cluster slot
  KEYS[2] hash of tenant weights (the registry's: tenant → whole number ≥ 1; absent: 1)
  ARGV[1] tenant, ARGV[2] window length (ms): the counts go two windows after the window's first send
  Returns the place: floor(sends of the tenant in this window before this one / its weight)
  Why Redis's clock (TIME, inside the script: no round trip of its own): every process that enqueues numbers the
  window alike whatever its own clock says, so a tenant enqueuing through producers whose clocks differ is counted
  once. The window's key is named here, from KEYS[1], because only here is the window known.
  Why windows: counts that only ever grow would put a tenant that was busy an hour ago behind one that was not;
  counts that go down would need one more write per send when it starts. Three commands per call (TIME, HINCRBY,
  HGET), and a PTTL with the window's PEXPIRE at a tenant's first send in it.
]]
local time = redis.call('TIME')
local windowMs = tonumber(ARGV[2])
local window = math.floor((tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)) / windowMs)
local counts = KEYS[1] .. ':' .. string.format('%d', window)
local before = redis.call('HINCRBY', counts, ARGV[1], 1) - 1
if before == 0 and redis.call('PTTL', counts) < 0 then redis.call('PEXPIRE', counts, 2 * windowMs) end
local weight = tonumber(redis.call('HGET', KEYS[2], ARGV[1])) or 1
if weight < 1 then weight = 1 end
return math.floor(before / weight)
