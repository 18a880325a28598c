--[[
  The progress rule's memory (workers delegation/progress.ts): progress is a
  change of what the delegation shows (state, question, artifacts, reply,
  result), summed up by the caller as a mark (a digest). Each follow cycle
  calls this with the mark after its observation: a new mark starts a fresh
  no-progress run (count 0, since now); the same mark counts one more
  observation that brought nothing new. Writes only the noProgress* fields
  (not the version: noting is not progress).
  KEYS[1] delegation hash
  ARGV[1] mark of what the delegation shows after the observation
  ARGV[2] now (ms)
  ARGV[3] what was observed (evidence, short text)
  Returns: {count, since}, or {-1, 0} if missing
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
local row = redis.call('HMGET', KEYS[1], 'noProgressMark', 'noProgressSince', 'noProgressCount')
if row[1] ~= ARGV[1] or not row[2] or row[2] == '' then
  redis.call('HSET', KEYS[1], 'noProgressMark', ARGV[1], 'noProgressSince', ARGV[2], 'noProgressCount', '0', 'noProgressLast', ARGV[3])
  return {0, tonumber(ARGV[2])}
end
local count = redis.call('HINCRBY', KEYS[1], 'noProgressCount', 1)
redis.call('HSET', KEYS[1], 'noProgressLast', ARGV[3])
return {count, tonumber(row[2])}
