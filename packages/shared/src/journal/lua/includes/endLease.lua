-- Ends the lease `holder` holds at `leaseKey` (send or follow lease, lease-1.lua) after a status change to `state`
-- whose reply is `reply` (applyStatus-5.lua ARGV[15], ARGV[16] give `holder` and `ending`):
-- - 'handover:<duration ms>:<check at>:<follow token>': when the change was applied, left the row unfinished and
--   not parked, and `holder` holds the lease, it passes to the follow token as takeFollow-2.lua would take it (the
--   lease for <duration ms>, the fencing token bumped, the owner the follow token; the row (or change) in `reply`
--   carries them too, and reply[6] the new fence); with <check at> the delegation's unfinished-index entry
--   (`indexKey`, member `member`: indexMember of keys.ts) is due then, if it is still there (ZADD XX: never put
--   back once its workflow dropped it). On every other outcome it is released.
-- - 'always': released on every outcome; 'finished': released when the delegation is finished afterwards (applied
--   to a finished state, found finished, or gone; a refusal reads the row's state, only then).
local function endLease(reply, rowKey, leaseKey, indexKey, holder, ending, state, member)
  local holdMs, checkAt, followToken = string.match(ending, '^handover:(%d+):(%d*):(.+)$')
  if followToken then
    if redis.call('GET', leaseKey) ~= holder then return end
    if reply[1] ~= 1 or FINISHED[state] or PARKED[state] then
      redis.call('DEL', leaseKey)
      return
    end
    redis.call('SET', leaseKey, followToken, 'PX', holdMs)
    local written, fence = reply[3], 1
    for i = 1, #written, 2 do if written[i] == 'fence' then fence = (tonumber(written[i + 1]) or 0) + 1 end end
    redis.call('HSET', rowKey, 'fence', tostring(fence), 'owner', followToken)
    if checkAt ~= '' then redis.call('ZADD', indexKey, 'XX', checkAt, member) end
    local seen = {}
    for i = 1, #written, 2 do
      if written[i] == 'fence' then written[i + 1] = tostring(fence); seen.fence = true end
      if written[i] == 'owner' then written[i + 1] = followToken; seen.owner = true end
    end
    if not seen.fence then written[#written + 1] = 'fence'; written[#written + 1] = tostring(fence) end
    if not seen.owner then written[#written + 1] = 'owner'; written[#written + 1] = followToken end
    reply[6] = fence
    return
  end
  if holder == '' then return end
  -- A refusal (fence, version, task) changed nothing, so the row's own state tells (read only then: never on the
  -- paths that know it).
  local finishedAfter = (reply[1] == 1 and FINISHED[state]) or (reply[1] == 0 and reply[2] == 'finished') or reply[1] == CODE.DELEGATION_MISSING
  if not finishedAfter and reply[1] < 0 and ending == 'finished' then
    local current = redis.call('HGET', rowKey, 'state')
    finishedAfter = not current or FINISHED[current]
  end
  if (ending == 'always' or finishedAfter) and redis.call('GET', leaseKey) == holder then redis.call('DEL', leaseKey) end
end
