--[[
  Creates a workflow and the intent of its first delegation, or does nothing
  if the workflow exists (idempotent on workflowId).
  KEYS[1] workflow hash
  KEYS[2] first delegation hash (ignored when ARGV[2] is '')
  KEYS[3] the workflow's delegation list
  KEYS[4] the unfinished index when ARGV[3] is given (one server only: another Cluster slot); else KEYS[1] again, unused
  ARGV[1] workflow fields, JSON object of strings
  ARGV[2] delegation fields, JSON object of strings, or ''
  ARGV[3] the index member the caller's ZADD (sent just before, same round trip) wrote ('' = no check: on a
          Cluster the entries are acknowledged before this script). Missing (that ZADD was refused, or the entry
          was dropped since): nothing is created, so no workflow exists that the index does not name
  Returns: 1 created, 0 already existed (also when finished and compacted to '<prefix>:{wf:<id>}:done'),
           INDEX_ENTRY_MISSING the index entry in ARGV[3] is missing, nothing created
]]
--- @include "prelude"
-- The live row or its compacted record (one EXISTS of both keys: same hash tag, same slot).
if redis.call('EXISTS', KEYS[1], string.sub(KEYS[1], 1, -4) .. ':done') > 0 then return 0 end
if ARGV[3] ~= '' and not redis.call('ZSCORE', KEYS[4], ARGV[3]) then return CODE.INDEX_ENTRY_MISSING end
-- Writes the fields and returns them (each JSON text decoded once).
local function hset(key, json)
  local fields = cjson.decode(json)
  local flat = {}
  for k, v in pairs(fields) do flat[#flat + 1] = k; flat[#flat + 1] = v end
  redis.call('HSET', key, unpack(flat))
  return fields
end
hset(KEYS[1], ARGV[1])
if ARGV[2] ~= '' then
  redis.call('RPUSH', KEYS[3], hset(KEYS[2], ARGV[2]).delegationId)
end
return 1
