--[[
  A try that could not reach the agent and proves nothing was created (connection refused, DNS failure, the
  Agent Card unavailable): the attempt stays INTENT and waits for the next try, journaled so every view shows
  why it waits. Compare-and-set on the send run's fencing token; after the mark (the SendMessage never left:
  delivery `not-sent`) the mark is cleared in the same step, so the next try sends the same messageId again, but only
  while the row is as the run's own mark left it, as giveBackMark-1.lua gives a mark back: the mark's sendStartedAt and
  the version it wrote, and no suspect evidence on the row (includes/suspects.lua `keepsSuspects`: a task a refused
  push showed holding our message). Else VERSION_CONFLICT and nothing is written: the reconciler decides. Before
  (retrygive35), the mark was cleared on the fence alone, over a push, an error or a suspect noted since the mark.
  KEYS[1] delegation hash
  ARGV[1] fencing token of the send run (the row's `fence` as the run read or claimed it)
  ARGV[2] now (ms)
  ARGV[3] the next try's time (ms)
  ARGV[4] the error (RecordedError JSON; its delivery is `not-sent`)
  ARGV[5] '1': the try was marked (SendMessage was attempted and never left): clear the mark;
          '0': it ended before the mark (the Agent Card could not be fetched): the row must not be marked
  ARGV[6] with '1': the run's mark's sendStartedAt (ms, as markSending-2.lua wrote it; '' refuses)
  ARGV[7] with '1': the version the run's mark wrote ('' refuses)
  Returns: {version, unreachableCount, unreachableSince} as written; {DELEGATION_MISSING}, {FENCE_LOST},
           {WRONG_STATE} not INTENT or a task is bound, {MAY_HAVE_SENT} unmarked try on a marked row,
           {VERSION_CONFLICT} a marked try whose mark is not the row's as it left it (written since, or suspects wait)
]]
--- @include "prelude"
--- @include "suspects"
local row = redis.call('HMGET', KEYS[1], 'delegationId', 'fence', 'state', 'taskId', 'sendStartedAt', 'version', 'unreachableSince',
  'suspects', 'suspectsLost')
if not row[1] then return {CODE.DELEGATION_MISSING} end
if (tonumber(row[2]) or 0) ~= tonumber(ARGV[1]) then return {CODE.FENCE_LOST} end
if row[3] ~= 'INTENT' or (row[4] and row[4] ~= '') then return {CODE.WRONG_STATE} end
if ARGV[5] ~= '1' and row[5] and row[5] ~= '' then return {CODE.MAY_HAVE_SENT} end
if ARGV[5] == '1' then
  if ARGV[6] == '' or row[5] ~= ARGV[6] or ARGV[7] == '' or row[6] ~= ARGV[7] then return {CODE.VERSION_CONFLICT} end
  if keepsSuspects(row[8], row[9]) then return {CODE.VERSION_CONFLICT} end
end
local since = row[7]
if not since or since == '' then since = ARGV[2] end
local version = (tonumber(row[6]) or 0) + 1
local count = redis.call('HINCRBY', KEYS[1], 'unreachableCount', '1')
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], 'sendStartedAt', '')
else
  redis.call('HINCRBY', KEYS[1], 'unsentTries', '1')
end
redis.call('HSET', KEYS[1], 'error', ARGV[4], 'unreachableSince', since, 'nextTryAt', ARGV[3], 'updatedAt', ARGV[2], 'version', tostring(version))
return {version, count, tonumber(since)}
