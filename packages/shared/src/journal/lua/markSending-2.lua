--[[
  Records that a SendMessage is about to leave. From here on a send may have
  happened, so nobody resends without asking the agent first (reconcile).
  With a holder token, the same script takes the delegation's lease (the send
  lease, the follow lease's key): from the mark on, the reconciler sees it held
  and waits (recover.ts), so no re-read is needed between mark and request.
  KEYS[1] delegation hash
  KEYS[2] lease key
  ARGV[1] fencing token
  ARGV[2] now (ms)
  ARGV[3] chosen agent interface JSON ('' = unchanged)
  ARGV[4] lease holder token ('' = take no lease)
  ARGV[5] lease duration (ms)
  ARGV[6] '1': the mark also claims the delegation for the holder in ARGV[4] (claim-1.lua in the
          same step): ARGV[1] is then the fencing token the caller read (0 when never claimed), and
          the new one is ARGV[1] + 1, recorded with the owner; a run that read an older token is refused
  ARGV[7] the row's version as the caller holds it ('' = none): the reply says whether the row was at that version
          before the mark; then the caller knows every value the mark wrote (its arguments, the held sendCount and
          version plus one) and holds the row as the mark left it (the send's answer then gets a change reply from
          applyStatus-5.lua, not the row whole)
  Returns: {outcome, version}: outcome 1 marked and the lease taken (or none asked; a claiming mark always takes it),
           2 marked but the lease held by another holder (a mark without a claim only); 3 and 4 the same when the row was
           at the version in ARGV[7]; version: the version the mark wrote, always (giveBackMark-1.lua compares it: a
           run gives back only the row its own mark left, retrygive35). Refused: DELEGATION_MISSING, FENCE_LOST,
           WRONG_STATE not in INTENT, MAY_HAVE_SENT a send may already have happened (sendStartedAt set)
]]
--- @include "prelude"
local row = redis.call('HMGET', KEYS[1], 'fence', 'state', 'sendStartedAt', 'delegationId', 'sendCount', 'version')
if not row[4] then return CODE.DELEGATION_MISSING end
if (tonumber(row[1]) or 0) ~= tonumber(ARGV[1]) then return CODE.FENCE_LOST end
if row[2] ~= 'INTENT' then return CODE.WRONG_STATE end
if row[3] and row[3] ~= '' then return CODE.MAY_HAVE_SENT end
local version = (tonumber(row[6]) or 0) + 1
local set = { 'sendStartedAt', ARGV[2], 'updatedAt', ARGV[2],
  'sendCount', tostring((tonumber(row[5]) or 0) + 1), 'version', tostring(version) }
if ARGV[3] ~= '' then set[#set + 1] = 'agentInterface'; set[#set + 1] = ARGV[3] end
if ARGV[6] == '1' then
  set[#set + 1] = 'fence'; set[#set + 1] = tostring(tonumber(ARGV[1]) + 1)
  set[#set + 1] = 'owner'; set[#set + 1] = ARGV[4]
end
redis.call('HSET', KEYS[1], unpack(set))
local outcome = 2
if ARGV[4] == '' then outcome = 1
elseif ARGV[6] == '1' then
  -- A mark that claims takes the lease whoever holds it (attack33b): its claim fenced that holder out in this same
  -- script, and on an unmarked row no request is in flight (one mark stands at a time; every request leaves under
  -- one), so a lease left here is a gone run's (it gave its unsent mark back, or noted its agent unreachable, and did
  -- not live to release it). Before, such a mark sent "lease elsewhere", unheld: once that lease ran out the
  -- reconciler searched while the agent still held our request, missed it and resent.
  redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
  outcome = 1
elseif redis.call('SET', KEYS[2], ARGV[4], 'NX', 'PX', ARGV[5]) then outcome = 1
elseif redis.call('GET', KEYS[2]) == ARGV[4] then redis.call('PEXPIRE', KEYS[2], ARGV[5]); outcome = 1 end
if row[6] == ARGV[7] then return {outcome + 2, version} end
return {outcome, version}
