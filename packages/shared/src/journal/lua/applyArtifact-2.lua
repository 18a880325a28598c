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
  ARGV[10] the artifact's entry bytes (artifactEntryBytes: its hash fields and its id in each, counted in ARGV[8]
          once per artifact): a chunk appended to a stored artifact costs its bytes without them ('' = 0)
  ARGV[11] artifactsPerDelegation: the limit on the artifacts (distinct ids) the delegation shows ('artifactCount')
  A new artifact (its id not held) adds one to the row's 'artifactCount' (record.ts: the artifacts the attempt showed,
  never lowered; an unsuccessful attempt with any is effect unknown in the workflow's decision, attack33a); one past
  ARGV[11] is over that limit (attack35: a Task listing every artifact is one script over all of them, holding Redis
  for every other delegation, so the count is bounded as the bytes are).
  Over a limit nothing is stored: the attempt ends AMBIGUOUS with a permanent LIMIT_EXCEEDED
  error naming the limit, in this same script (RT5/RT7): the agent produced output, so it may have done the work,
  and the step is not re-delegated blind (field case A31); a person decides.
  Returns: {1, 'applied'}; {0, 'sealed'} dropped after the seal; {0, 'finished'} the
           delegation is finished; {DELEGATION_MISSING, 'missing'}; {FENCE_LOST, 'fence'}; {ARTIFACT_LIMIT, 'limit'} the
           attempt ended (codes: script-codes.ts)
]]
--- @include "prelude"
-- One read of each hash and one write of each (fewer calls, same effect): the row's fields, then the artifact's.
local row = redis.call('HMGET', KEYS[1], 'delegationId', 'fence', 'state', 'artifactBytes', 'version', 'artifactCount')
if not row[1] then return {CODE.DELEGATION_MISSING, 'missing'} end
if ARGV[1] ~= '' and row[2] ~= ARGV[1] then return {CODE.FENCE_LOST, 'fence'} end
if FINISHED[row[3]] then return {0, 'finished'} end
local id = ARGV[2]
local stored = redis.call('HMGET', KEYS[2], 'sealed:' .. id, 'parts:' .. id, 'bytes:' .. id)
if stored[1] == '1' then return {0, 'sealed'} end
local existing = stored[2]
local parts = ARGV[4]
local incomingBytes = tonumber(ARGV[8]) or 0
local storedBytes = tonumber(stored[3] or '0') or 0
local artifactBytes = incomingBytes
if ARGV[5] == '1' and existing then
  artifactBytes = storedBytes + math.max(0, incomingBytes - (tonumber(ARGV[10]) or 0))
  if ARGV[4] == '[]' then parts = existing
  elseif existing ~= '[]' then parts = string.sub(existing, 1, -2) .. ',' .. string.sub(ARGV[4], 2) end
end
local total = (tonumber(row[4] or '0') or 0) - storedBytes + artifactBytes
local version = tostring((tonumber(row[5]) or 0) + 1)
local count = (tonumber(row[6] or '0') or 0) + (existing and 0 or 1)
local overLimit, message
if total > tonumber(ARGV[9]) then
  overLimit, message = 'artifactBytesPerDelegation', 'artifacts of this delegation would reach ' .. total .. ' bytes, over the limit of ' .. ARGV[9]
elseif not existing and ARGV[11] and ARGV[11] ~= '' and count > tonumber(ARGV[11]) then
  overLimit, message = 'artifactsPerDelegation', 'artifact ' .. count .. ' of this delegation, over the limit of ' .. ARGV[11] .. ' a delegation may show'
end
if overLimit then
  redis.call('HSET', KEYS[1], 'state', 'AMBIGUOUS', 'finishedAt', ARGV[7], 'updatedAt', ARGV[7], 'question', '',
    'error', cjson.encode({ code = 'LIMIT_EXCEEDED', message = message, retryable = false, delivery = 'received', limit = overLimit }),
    'version', version)
  return {CODE.ARTIFACT_LIMIT, 'limit'}
end
local artifact = { 'bytes:' .. id, tostring(artifactBytes), 'parts:' .. id, parts, 'meta:' .. id, ARGV[3] }
local rowFields = { 'artifactBytes', tostring(total), 'updatedAt', ARGV[7], 'version', version }
-- A new artifact's place: the hash's field count once its 'bytes:' field is in (the value the separate writes gave).
if not existing then
  artifact[#artifact + 1] = 'order:' .. id
  artifact[#artifact + 1] = tostring(redis.call('HLEN', KEYS[2]) + (stored[3] and 0 or 1))
  rowFields[#rowFields + 1] = 'artifactCount'
  rowFields[#rowFields + 1] = tostring(count)
end
if ARGV[6] == '1' then artifact[#artifact + 1] = 'sealed:' .. id; artifact[#artifact + 1] = '1' end
redis.call('HSET', KEYS[2], unpack(artifact))
redis.call('HSET', KEYS[1], unpack(rowFields))
return {1, 'applied'}
