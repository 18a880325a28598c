-- How far ahead of the send order's clock a tenant's place may be (places): its further sends share its last place.
-- Within one run of the clock (between rebases, rebaseSendOrder-1.lua) every place given is at most this far ahead of
-- the clock as stored, which only grows; a place further ahead than that is from before a rebase (keepSendPlace-1.lua).
local PLACE_LEAD = 20000
