--[[
  Journals a protocol error an agent caused on a delegation (a task bound to
  another delegation, a push for a task we did not record) without changing
  its state: the reconciler decides from a search. Finished rows are left alone.
  KEYS[1] delegation hash
  ARGV[1] error JSON {code, message, retryable}
  ARGV[2] now (ms)
  Returns: 1 journaled; 0 finished; DELEGATION_MISSING
]]
--- @include "prelude"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
if FINISHED[redis.call('HGET', KEYS[1], 'state')] then return 0 end
redis.call('HSET', KEYS[1], 'protocolError', ARGV[1], 'updatedAt', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'protocolErrorCount', 1)
redis.call('HINCRBY', KEYS[1], 'version', 1)
return 1
