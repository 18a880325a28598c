--[[
  Records how far one notification event got: enqueued (its job was added), failed (its retries ran out; it waits
  in the failed set), delivered (its receiver answered 2xx). Forward only, compare-and-set on the stage's rank:
  a later stage is never replaced by an earlier one (a re-emitted event after delivery stays delivered).
  The hash lives beside the workflow's keys and expires with its retention (ARGV[5]; 0 keeps it).
  KEYS[1] the workflow's notifications hash (field: event id)
  ARGV[1] event id
  ARGV[2] stage: 'enqueued' | 'failed' | 'delivered'
  ARGV[3] now (ms)
  ARGV[4] event kind (kept with the stage)
  ARGV[5] retention (ms); 0: no expiry
  ARGV[6] receiver attempts made so far
  Returns: 1 recorded, 0 unchanged (already at this stage or later)
]]
local RANK = { enqueued = 1, failed = 2, delivered = 3 }
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current then
  local stage = cjson.decode(current).stage
  if (RANK[stage] or 0) >= RANK[ARGV[2]] then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode({ stage = ARGV[2], at = tonumber(ARGV[3]), kind = ARGV[4], attempts = tonumber(ARGV[6]) }))
if tonumber(ARGV[5]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[5]) end
return 1
