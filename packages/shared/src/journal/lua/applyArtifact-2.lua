--[[
  Applies one TaskArtifactUpdateEvent (spec §5.5): artifacts are keyed by
  artifactId; append:true adds the parts (to a new artifact if the id is
  unknown), otherwise the parts replace; lastChunk:true seals the artifact and
  any later update to it is dropped (field cases R09, R10).
  KEYS[1] delegation hash
  KEYS[2] artifacts hash (fields meta:<id>, parts:<id> (JSON array), order:<id>, sealed:<id>)
  ARGV[1] fencing token ('' = unfenced)
  ARGV[2] artifactId
  ARGV[3] meta JSON (name, description, metadata)
  ARGV[4] parts JSON array, compact (an empty array appends nothing: a bare seal)
  ARGV[5] append '1' | '0'
  ARGV[6] lastChunk '1' | '0'
  ARGV[7] now (ms)
  ARGV[8] bytes these parts carry (artifactByteSize)
  ARGV[9] artifactBytesPerDelegation: the limit on the delegation's artifact bytes, summed
          over chunks and pushes (field 'artifactBytes', per artifact 'bytes:<id>')
  Over the limit nothing is stored: the attempt ends AMBIGUOUS with a permanent LIMIT_EXCEEDED
  error, in this same script (RT5/RT7): the agent produced output, so it may have done the work,
  and the step is not re-delegated blind (field case A31); a person decides.
  Returns: {1, 'applied'}; {0, 'sealed'} dropped after the seal; {0, 'finished'} the
           delegation is finished; {DELEGATION_MISSING, 'missing'}; {FENCE_LOST, 'fence'}; {ARTIFACT_LIMIT, 'limit'} the
           attempt ended (codes: script-codes.ts)
]]
--- @include "prelude"
if redis.call('EXISTS', KEYS[1]) == 0 then return {CODE.DELEGATION_MISSING, 'missing'} end
local row = redis.call('HMGET', KEYS[1], 'fence', 'state')
if ARGV[1] ~= '' and row[1] ~= ARGV[1] then return {CODE.FENCE_LOST, 'fence'} end
if FINISHED[row[2]] then return {0, 'finished'} end
local id = ARGV[2]
if redis.call('HGET', KEYS[2], 'sealed:' .. id) == '1' then return {0, 'sealed'} end
local existing = redis.call('HGET', KEYS[2], 'parts:' .. id)
local parts = ARGV[4]
local incomingBytes = tonumber(ARGV[8]) or 0
local storedBytes = tonumber(redis.call('HGET', KEYS[2], 'bytes:' .. id) or '0') or 0
local artifactBytes = incomingBytes
if ARGV[5] == '1' and existing then
  artifactBytes = storedBytes + incomingBytes
  if ARGV[4] == '[]' then parts = existing
  elseif existing ~= '[]' then parts = string.sub(existing, 1, -2) .. ',' .. string.sub(ARGV[4], 2) end
end
local total = (tonumber(redis.call('HGET', KEYS[1], 'artifactBytes') or '0') or 0) - storedBytes + artifactBytes
if total > tonumber(ARGV[9]) then
  local message = 'artifacts of this delegation would reach ' .. total .. ' bytes, over the limit of ' .. ARGV[9]
  redis.call('HSET', KEYS[1], 'state', 'AMBIGUOUS', 'finishedAt', ARGV[7], 'updatedAt', ARGV[7], 'question', '',
    'error', cjson.encode({ code = 'LIMIT_EXCEEDED', message = message, retryable = false, delivery = 'received', limit = 'artifactBytesPerDelegation' }))
  redis.call('HINCRBY', KEYS[1], 'version', 1)
  return {CODE.ARTIFACT_LIMIT, 'limit'}
end
redis.call('HSET', KEYS[1], 'artifactBytes', tostring(total))
redis.call('HSET', KEYS[2], 'bytes:' .. id, tostring(artifactBytes))
if not existing then
  redis.call('HSET', KEYS[2], 'order:' .. id, tostring(redis.call('HLEN', KEYS[2])))
end
redis.call('HSET', KEYS[2], 'parts:' .. id, parts, 'meta:' .. id, ARGV[3])
if ARGV[6] == '1' then redis.call('HSET', KEYS[2], 'sealed:' .. id, '1') end
redis.call('HSET', KEYS[1], 'updatedAt', ARGV[7])
redis.call('HINCRBY', KEYS[1], 'version', 1)
return {1, 'applied'}
