--[[
  The progress rule's memory (workers delegation/core/policy.ts progressNext): progress is a
  change of what the delegation shows (state, question, artifacts, reply,
  result), summed up by the caller as a mark (a digest). Each follow cycle
  calls this with the mark after its observation: a new mark starts a fresh
  no-progress run (count 0, since now); the same mark counts one more
  observation that brought nothing new. Also counts the cycles in a row that
  ended on an answer we cannot accept (ARGV[4] = '1'; any other cycle, or
  progress, resets it). Writes only the noProgress* fields (not the version:
  noting is not progress).
  KEYS[1] delegation hash
  ARGV[1] mark of what the delegation shows after the observation
  ARGV[2] now (ms)
  ARGV[3] what was observed (evidence, short text)
  ARGV[4] '1' when the cycle ended on an answer we cannot accept, else '0'
  ARGV[5] '1' when the cycle's stream delivered events before it ended (P36): the count starts again (the
          follow's backoff), the run's start is kept (what the delegation shows did not change: the no-progress
          window still bounds an agent that repeats itself on stream after stream)
  Returns: {count, since, unacceptable in a row}, or {DELEGATION_MISSING, 0, 0} if missing
]]
--- @include "prelude"
if redis.call('EXISTS', KEYS[1]) == 0 then return {CODE.DELEGATION_MISSING, 0, 0} end
local row = redis.call('HMGET', KEYS[1], 'noProgressMark', 'noProgressSince', 'noProgressCount', 'noProgressUnacceptable')
local unacceptable = 0
if ARGV[4] == '1' then unacceptable = (tonumber(row[4]) or 0) + 1 end
if row[1] ~= ARGV[1] or not row[2] or row[2] == '' then
  if ARGV[4] == '1' then unacceptable = 1 end
  redis.call('HSET', KEYS[1], 'noProgressMark', ARGV[1], 'noProgressSince', ARGV[2], 'noProgressCount', '0', 'noProgressLast', ARGV[3], 'noProgressUnacceptable', unacceptable)
  return {0, tonumber(ARGV[2]), unacceptable}
end
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], 'noProgressCount', '0', 'noProgressLast', ARGV[3], 'noProgressUnacceptable', unacceptable)
  return {0, tonumber(row[2]), unacceptable}
end
local count = redis.call('HINCRBY', KEYS[1], 'noProgressCount', '1')
redis.call('HSET', KEYS[1], 'noProgressLast', ARGV[3], 'noProgressUnacceptable', unacceptable)
return {count, tonumber(row[2]), unacceptable}
