--[[
  Tells a person, on a FINISHED delegation, that suspects (tasks refused pushes showed holding our message,
  noteSuspect-1.lua) were lost: not kept, or never read to a conclusion in the rounds allowed (`suspectsLost`). The
  agent may have done the work twice and it could not be checked. The state, result and error never change (finished
  states never regress); written: `suspectsLostTold` (how many lost ones a person was told of), `updatedAt`, the
  version bumped, and an entry of the workflow's history (kind `duplicate-unchecked`, the lost count: what every view
  shows a person; written only while the workflow row is there, lua/includes/history.lua). Told once per count: the
  same count again (a retried job) writes nothing; more lost later (another suspect lost after this) is told again.
  KEYS[1] delegation hash (its workflow row and history are derived from it: same hash tag, same slot)
  ARGV[1] suspects lost, as the caller read them (`suspectsLost`; at least 1)
  ARGV[2] now (ms)
  ARGV[3] the history entry's JSON text (history.ts `historyEntryText`; '' = none)
  Returns: 1 noted; 2 already told of this many (nothing written); 0 not finished (nothing written: the reconciler's
  suspects-unread gives an unfinished row to a person); DELEGATION_MISSING
]]
--- @include "prelude"
--- @include "workflowKeys"
--- @include "history"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
local row = redis.call('HMGET', KEYS[1], 'state', 'suspectsLostTold')
if not FINISHED[row[1]] then return 0 end
if (tonumber(row[2]) or 0) >= tonumber(ARGV[1]) then return 2 end
redis.call('HSET', KEYS[1], 'suspectsLostTold', ARGV[1], 'updatedAt', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'version', '1')
appendHistory(workflowBaseOf(KEYS[1]), ARGV[3])
return 1
