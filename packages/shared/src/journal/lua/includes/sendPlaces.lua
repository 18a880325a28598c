-- The places of `count` message sends of `tenant` on the send order's virtual clock, as `count` calls of
-- sendOrder-2.lua one after the other would give them (its header says why a virtual clock, why Redis's clock, why one
-- declared key, what bounds the state). clockKey: the clock hash; weightsKey: the tenant weights (the registry's);
-- placeMs: the Redis time one place of the clock lasts. Commands: TIME, HMGET, HGET, HSET; an HRANDFIELD (and an HDEL
-- when the two fields sampled hold a stale tenant) when the tenant starts at the clock; a PEXPIRE when the clock
-- starts or moves on a place. Each call writes `at` (Redis's time, ms, of the last place given) in the same HSET: a
-- rebase of the clock waits until no place was given for a while (rebaseSendOrder-1.lua).
--- @include "sendPlaceLead"
local function sendPlaces(clockKey, weightsKey, tenant, placeMs, count)
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local field = 't:' .. tenant
  local stored = redis.call('HMGET', clockKey, 'v', 'ms', field)
  local clock, since = tonumber(stored[1]), tonumber(stored[2])
  local moved = false
  if clock == nil or clock ~= clock or clock < 0 or clock ~= math.floor(clock) then
    -- A new clock (or one a hand broke): place 0 starts now (a tenant's entry, if any, still holds its place).
    clock, since, moved = 0, now, true
  elseif since == nil or since ~= since then
    since, moved = now, true
  elseif now >= since + placeMs then
    -- At most PLACE_LEAD + 2 places at once: a hash idle longer has expired, so a longer step is a clock leaping
    -- ahead (a replica's, or a clock set wrong), which would otherwise use up the band for good.
    local steps = math.floor((now - since) / placeMs)
    if steps > PLACE_LEAD + 2 then clock, since = clock + PLACE_LEAD + 2, now else clock, since = clock + steps, since + steps * placeMs end
    moved = true
  elseif now < since then
    -- Redis's clock went back (stepped, or a replica promoted with a slower clock): the clock waits, never goes back,
    -- and moves on from this clock's now.
    since, moved = now, true
  end
  local place, sent, starts = clock, 0, true
  if stored[3] then
    local p, n = string.match(stored[3], '^(%d+):(%d+)$')
    if p and tonumber(p) >= clock then place, sent, starts = tonumber(p), tonumber(n), false end
  end
  local weight = tonumber(redis.call('HGET', weightsKey, tenant)) or 1
  if weight ~= weight or weight < 1 then weight = 1 elseif weight > 100 then weight = 100 end
  weight = math.floor(weight)
  local places = {}
  for _ = 1, count do
    if sent >= weight and place < clock + PLACE_LEAD then place, sent = place + 1, 0 end
    places[#places + 1] = place
    sent = sent + 1
  end
  if moved then
    redis.call('HSET', clockKey, 'v', string.format('%d', clock), 'ms', string.format('%d', since), 'at', string.format('%d', now), field, string.format('%d:%d', place, sent))
    redis.call('PEXPIRE', clockKey, (PLACE_LEAD + 2) * placeMs)
  else
    redis.call('HSET', clockKey, 'at', string.format('%d', now), field, string.format('%d:%d', place, sent))
  end
  -- A tenant that starts at the clock (new, or its entry behind the clock) looks at two fields at random: a tenant
  -- whose last place is behind the clock is as good as absent (its next send starts at the clock), so it goes. The
  -- hash grows only when a tenant starts, by one field, and each start removes up to two stale ones: it holds about
  -- twice the tenants with a place at or ahead of the clock at most. A tenant with sends ahead pays nothing for it.
  if starts then
    local sample = redis.call('HRANDFIELD', clockKey, '2', 'WITHVALUES')
    local stale = {}
    for index = 1, #sample, 2 do
      local p = string.match(sample[index + 1], '^(%d+):%d+$')
      if string.sub(sample[index], 1, 2) == 't:' and sample[index] ~= field and (p == nil or tonumber(p) < clock) then stale[#stale + 1] = sample[index] end
    end
    if #stale > 0 then redis.call('HDEL', clockKey, unpack(stale)) end
  end
  return places
end
