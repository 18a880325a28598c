--[[
  A message send's place among the sends its tenant enqueued in the current window: the send queue orders sends of
  one priority by place (BullMQ priority), so a tenant's burst takes places 0, 1, 2, … and another tenant's next
  send takes place 0 again, ahead of the burst's tail (weighted fair queueing between tenants, send-order.ts).
  KEYS[1] hash of the window's counts: `window` (the window's number, on Redis's clock), `t:<tenant>` (sends enqueued)
  KEYS[2] hash of tenant weights (the registry's: tenant → whole number ≥ 1; absent: 1)
  ARGV[1] tenant, ARGV[2] window length (ms)
  Returns the place: floor(sends of the tenant in this window before this one / its weight)
  Why windows: counts that only ever grow would put a tenant that was busy an hour ago behind one that was not;
  counts that go down would need one more write per send when it starts. A window's counts go at its end.
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local windowMs = tonumber(ARGV[2])
local window = tostring(math.floor(now / windowMs))
if redis.call('HGET', KEYS[1], 'window') ~= window then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'window', window)
  redis.call('PEXPIRE', KEYS[1], 2 * windowMs)
end
local before = redis.call('HINCRBY', KEYS[1], 't:' .. ARGV[1], 1) - 1
local weight = tonumber(redis.call('HGET', KEYS[2], ARGV[1])) or 1
if weight < 1 then weight = 1 end
return math.floor(before / weight)
