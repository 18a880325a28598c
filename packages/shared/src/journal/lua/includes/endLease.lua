-- Ends the lease `holder` holds at `leaseKey` (send or follow lease, lease-1.lua) after a status change to `state`
-- whose reply is `reply` (applyStatus-5.lua ARGV[13], ARGV[14] give `holder` and `ending`):
-- - 'handover:<duration ms>:<check at>:<follow token>' (`handover`, read by `handoverOf`): when the change was
--   applied, left the row unfinished and not parked, and `holder` holds the lease, it passes to the follow token as
--   takeFollow-2.lua would take it (the lease for <duration ms>, the fencing token bumped, the owner the follow
--   token; the change wrote those two in its own HSET, `handoverFields`, and the row (or change) in `reply` carries
--   them, reply[6] the new fence); with <check at> the delegation's unfinished-index entry (`indexKey`, member
--   `member`: indexMember of keys.ts) is due then, if it is still there (ZADD XX: never put back once its workflow
--   dropped it). On every other outcome it is released.
-- - 'always': released on every outcome; 'finished': released when the delegation is finished afterwards (applied
--   to a finished state, found finished, or gone; a refusal reads the row's state, only then).

-- applyStatus-5.lua ARGV[14] 'handover:<duration ms>:<check at>:<follow token>' as { holdMs, checkAt, token }, else nil.
local function handoverOf(ending)
  local holdMs, checkAt, token = string.match(ending, '^handover:(%d+):(%d*):(.+)$')
  if token then return { holdMs = holdMs, checkAt = checkAt, token = token } end
  return nil
end

-- Called by the change just before its HSET (it is applied), with `put` adding a field to that HSET and `fence` the
-- row's fencing token as read: when the change leaves the row unfinished and not parked, looks at the lease once
-- (`handover.looked`) and, when `holder` holds it, writes the bumped fence and the owner with the change
-- (`handover.fence`). One HSET of the row instead of two.
local function handoverFields(handover, leaseKey, holder, state, fence, put)
  if not handover or FINISHED[state] or PARKED[state] then return end
  handover.looked = true
  if redis.call('GET', leaseKey) ~= holder then return end
  handover.fence = (tonumber(fence or '') or 0) + 1
  put('fence', tostring(handover.fence))
  put('owner', handover.token)
end

local function endLease(reply, rowKey, leaseKey, indexKey, holder, ending, state, member, handover)
  if handover then
    if handover.fence then
      redis.call('SET', leaseKey, handover.token, 'PX', handover.holdMs)
      if handover.checkAt ~= '' then redis.call('ZADD', indexKey, 'XX', handover.checkAt, member) end
      reply[6] = handover.fence
      return
    end
    -- The change looked at the lease and another holds it: nothing of ours to release. Else (refused, ignored,
    -- finished or parked) it is released when held.
    if handover.looked then return end
    if redis.call('GET', leaseKey) == holder then redis.call('DEL', leaseKey) end
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
