--[[
  A message send's place among the sends its tenant enqueued in the current window: the send queue orders sends of
  one priority by place (BullMQ priority), so a tenant's burst takes places 0, 1, 2, … and another tenant's next
  send takes place 0 again, ahead of the burst's tail (weighted fair queueing between tenants, send-order.ts).
  KEYS[1] hash of the current window's counts (the caller names the window in the key): tenant → sends enqueued
  KEYS[2] hash of tenant weights (the registry's: tenant → whole number ≥ 1; absent: 1)
  ARGV[1] tenant, ARGV[2] window length (ms): the counts go two windows after the window's first send
  Returns the place: floor(sends of the tenant in this window before this one / its weight)
  Why windows: counts that only ever grow would put a tenant that was busy an hour ago behind one that was not;
  counts that go down would need one more write per send when it starts. Three commands per call (HINCRBY, HGET,
  and the window's PEXPIRE once).
]]
local before = redis.call('HINCRBY', KEYS[1], ARGV[1], 1) - 1
if before == 0 and redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[2])) end
local weight = tonumber(redis.call('HGET', KEYS[2], ARGV[1])) or 1
if weight < 1 then weight = 1 end
return math.floor(before / weight)
