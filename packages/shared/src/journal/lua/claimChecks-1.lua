--[[
  A sweep claims the checks of the index entries it read: each entry whose score (its next check, ms since the
  epoch) is still the one the sweep read moves to its next check, and the sweep checks it; one that moved meanwhile
  (another sweep claimed it, its follow or reconcile moved it) or left the index (settled) is not the sweep's to
  check, and is neither moved nor put back. Two sweeps that read the same entry at once check it once.
  KEYS[1] the unfinished index (sorted set: member `<workflowId>|<delegationId>`, score = next check)
  ARGV    per entry, three values: member, the score read, the next check to set
  Returns: per entry, in order: 1 claimed (moved to its next check), 0 not (moved meanwhile, or gone)
]]
local claimed = {}
for index = 1, #ARGV, 3 do
  local member = ARGV[index]
  local score = redis.call('ZSCORE', KEYS[1], member)
  if score and tonumber(score) == tonumber(ARGV[index + 1]) then
    redis.call('ZADD', KEYS[1], ARGV[index + 2], member)
    claimed[#claimed + 1] = 1
  else
    claimed[#claimed + 1] = 0
  end
end
return claimed
