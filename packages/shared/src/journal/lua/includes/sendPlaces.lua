-- The places of `count` message sends of `tenant` among the sends it enqueued in the current window, as `count` calls
-- of sendOrder-2.lua one after the other would give them (its header says why windows, why Redis's clock, why one
-- declared key). countsKey: the window's counts hash; weightsKey: the tenant weights (the registry's); windowMs: the
-- window's length. Commands: TIME, HGET, HINCRBY (by `count`), HGET; DEL, HSET, PEXPIRE at a window's first send.
local function sendPlaces(countsKey, weightsKey, tenant, windowMs, count)
  local time = redis.call('TIME')
  local window = math.floor((tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)) / windowMs)
  local stored = tonumber(redis.call('HGET', countsKey, 'window'))
  if stored == nil or window > stored or window < stored - 1 then
    redis.call('DEL', countsKey)
    redis.call('HSET', countsKey, 'window', string.format('%d', window))
    redis.call('PEXPIRE', countsKey, 2 * windowMs)
  end
  local before = redis.call('HINCRBY', countsKey, 't:' .. tenant, count) - count
  local weight = tonumber(redis.call('HGET', weightsKey, tenant)) or 1
  if weight ~= weight or weight < 1 then weight = 1 elseif weight > 100 then weight = 100 end
  weight = math.floor(weight)
  local places = {}
  for index = 0, count - 1 do places[#places + 1] = math.floor((before + index) / weight) end
  return places
end
