--[[
  The place a message send's next try is added at (send-priority.ts `placeOfSendPriority`: the place its job had):
  that place, unless it is more than PLACE_LEAD ahead of the send order's clock, which no place given since the
  clock's last rebase is (sendPlaces.lua: a place is at most PLACE_LEAD ahead of the clock, which only grows between
  rebases); such a place is from before a rebase (rebaseSendOrder-1.lua) or before the hash expired, and counts as the
  clock's place: the send is older than every send placed since, so it goes among the first, not behind them all
  until its old place. A place from before a rebase that is within PLACE_LEAD of the clock (the clock has run more
  than its old place − PLACE_LEAD since) is kept: it is behind no send enqueued once the clock reaches it, as a new
  send's place.
  KEYS[1] the clock hash (`v`: the clock; absent, a hash expired or never made: 0)
  ARGV[1] the kept place (a whole number ≥ 0)
  Returns the place to add the try at. Commands: HGET. Reads only: a try is not a new send of its tenant.
]]
--- @include "sendPlaceLead"
local clock = tonumber(redis.call('HGET', KEYS[1], 'v'))
if clock == nil or clock ~= clock or clock < 0 then clock = 0 end
local place = tonumber(ARGV[1])
if place > clock + PLACE_LEAD then return math.floor(clock) end
return place
