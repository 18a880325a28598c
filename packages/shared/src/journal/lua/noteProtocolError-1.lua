--[[
  Journals a protocol error an agent caused on a delegation (a task bound to
  another delegation, a push for a task we did not record) without changing
  its state: the reconciler decides from a search. Finished rows are left alone. An earlier protocol error on the
  row is kept (lua/includes/protocolErrors.lua: `earlierProtocolErrors`), the count and the version moved.
  KEYS[1] delegation hash
  ARGV[1] error JSON {code, message, retryable}
  ARGV[2] now (ms)
  ARGV[3] earlier protocol errors kept at most (EARLIER_PROTOCOL_ERRORS_MAX)
  Returns: 1 journaled; 0 finished; DELEGATION_MISSING
]]
--- @include "prelude"
--- @include "protocolErrors"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
if FINISHED[redis.call('HGET', KEYS[1], 'state')] then return 0 end
noteProtocolErrorOn(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
return 1
