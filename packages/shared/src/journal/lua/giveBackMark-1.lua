--[[
  A send run gives back its own "may have been sent" mark that it knows never left: it stalled between the
  mark and the request (crash window 8's stall guard) and sent nothing. markSending-2.lua refuses a second
  mark while sendStartedAt is set, so under this mark only this run could have sent, and it did not. The row
  is as before the mark: unmarked, its sendCount one less (the mark's own try never left); resendCount is not
  touched (no resend happened: the attempt's sendAttempts budget is not used up). The run may then mark again.
  Compare-and-set on the mark itself: the run's fencing token (the mark claimed it), the mark's sendStartedAt
  and the version the mark wrote (markSending-2.lua replies it, always); a write of either or of the version since
  (the reconciler decided or released, another run claimed, a push refused before our task was recorded, an error
  noted) refuses: the reconciler owns the delegation, as before. A give-back without the version refuses too: before
  (retrygive35), a run whose copy of the row was older than the row at its mark knew no version, and its give-back
  compared the fence and sendStartedAt only, so it undid the mark over whatever was written since.
  So does suspect evidence on the row (includes/suspects.lua `keepsSuspects`, which noteSuspect-1.lua writes
  without a version): a task a refused push showed holding our message may be an earlier send's that the search
  releasing it missed, so nothing is sent again before the reconciler reads it. (noteNotFound-1.lua's count,
  also unversioned, is about a task we held: an INTENT row's, from before a resend, does not refuse.)
  KEYS[1] delegation hash
  ARGV[1] fencing token of the send run (as the mark claimed it)
  ARGV[2] the mark's sendStartedAt (ms, as markSending wrote it)
  ARGV[3] the version the mark wrote (required: '' refuses, VERSION_CONFLICT)
  ARGV[4] now (ms)
  Returns: 1 given back, DELEGATION_MISSING, FENCE_LOST, VERSION_CONFLICT (the mark is not the row's any more, the
           row changed since, no version given, or suspects wait on it), WRONG_STATE not INTENT or a task is bound
]]
--- @include "prelude"
--- @include "suspects"
local row = redis.call('HMGET', KEYS[1], 'delegationId', 'fence', 'state', 'taskId', 'sendStartedAt', 'version', 'sendCount',
  'suspects', 'suspectsLost')
if not row[1] then return CODE.DELEGATION_MISSING end
if (tonumber(row[2]) or 0) ~= tonumber(ARGV[1]) then return CODE.FENCE_LOST end
if row[3] ~= 'INTENT' or (row[4] and row[4] ~= '') then return CODE.WRONG_STATE end
if row[5] ~= ARGV[2] then return CODE.VERSION_CONFLICT end
if ARGV[3] == '' or row[6] ~= ARGV[3] then return CODE.VERSION_CONFLICT end
if keepsSuspects(row[8], row[9]) then return CODE.VERSION_CONFLICT end
local sends = (tonumber(row[7]) or 1) - 1
if sends < 0 then sends = 0 end
redis.call('HSET', KEYS[1], 'sendStartedAt', '', 'sendCount', tostring(sends), 'updatedAt', ARGV[4], 'version', tostring((tonumber(row[6]) or 0) + 1))
return 1
