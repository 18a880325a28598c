--[[
  Notes on a FINISHED delegation that another task of the agent holds our message too (read by GetTask after the row
  finished: a suspect a refused push named, noteSuspect-1.lua), so the agent may have done the work twice. The state,
  its result and its error never change (finished states never regress): the note is the row's `protocolError`
  (code DUPLICATE_TASK, naming both tasks), counted in `protocolErrorCount`, an earlier protocol error kept
  (lua/includes/protocolErrors.lua: `earlierProtocolErrors`), the version bumped; and an entry of the workflow's
  history (kind `duplicate-task`, both task ids: what every view shows a person, written only while the workflow row is
  there, lua/includes/history.lua). The same note again (a retried job's second read) writes nothing. An unfinished row
  is left alone: there the task-read row makes it AMBIGUOUS for a person.
  KEYS[1] delegation hash (its workflow row and history are derived from it: same hash tag, same slot)
  ARGV[1] error JSON {code, message, retryable}
  ARGV[2] now (ms)
  ARGV[3] earlier protocol errors kept at most (EARLIER_PROTOCOL_ERRORS_MAX)
  ARGV[4] the history entry's JSON text (history.ts `historyEntryText`; '' = none)
  Returns: 1 noted; 2 already noted (the row's latest protocol error is this one: nothing written); 0 not finished
  (nothing written); DELEGATION_MISSING
]]
--- @include "prelude"
--- @include "workflowKeys"
--- @include "history"
--- @include "protocolErrors"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
local row = redis.call('HMGET', KEYS[1], 'state', 'protocolError')
if not FINISHED[row[1]] then return 0 end
if row[2] == ARGV[1] then return 2 end
noteProtocolErrorOn(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
appendHistory(workflowBaseOf(KEYS[1]), ARGV[4])
return 1
