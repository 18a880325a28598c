--[[
  Notes on a FINISHED delegation that another task of the agent holds our message too (read by GetTask after the row
  finished: a suspect a refused push named, noteSuspect-1.lua), so the agent may have done the work twice. The state,
  its result and its error never change (finished states never regress): the note is the row's `protocolError`
  (code DUPLICATE_TASK, naming both tasks), counted in `protocolErrorCount`, the version bumped. An unfinished row is
  left alone: there the task-read row makes it AMBIGUOUS for a person.
  KEYS[1] delegation hash
  ARGV[1] error JSON {code, message, retryable}
  ARGV[2] now (ms)
  Returns: 1 noted; 0 not finished (nothing written); DELEGATION_MISSING
]]
--- @include "prelude"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
if not FINISHED[redis.call('HGET', KEYS[1], 'state')] then return 0 end
redis.call('HSET', KEYS[1], 'protocolError', ARGV[1], 'updatedAt', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'protocolErrorCount', 1)
redis.call('HINCRBY', KEYS[1], 'version', 1)
return 1
