--[[
  Creates a workflow and the intent of its first delegation, with its entries in the unfinished index and the search
  index, or does nothing if the workflow exists (idempotent on workflowId).
  KEYS[1] workflow hash
  KEYS[2] first delegation hash (ignored when ARGV[2] is '')
  KEYS[3] the workflow's delegation list
  KEYS[4] the unfinished index when ARGV[3] is given (one server only: another Cluster slot); else KEYS[1] again, unused
  KEYS[5] the search index (lexicographic) when ARGV[4] is given (one server only); else KEYS[1] again, unused
  KEYS[6] the updated index when ARGV[4] is given (one server only); else KEYS[1] again, unused
  ARGV[1] workflow fields, JSON object of strings (its updatedAt scores it in KEYS[6])
  ARGV[2] delegation fields, JSON object of strings, or ''
  ARGV[3] unfinished index entries, JSON array [score, member, ...], or '' (on a Cluster the caller wrote them
          before this script, acknowledged)
  ARGV[4] search index members, JSON array of strings (search-index.ts `searchMembers`), or '' (on a Cluster the
          caller wrote them before this script, acknowledged)
  Every entry is written with the workflow, in this one step: a crash cannot leave a workflow that an index does
  not name, nor (on one server) an entry without its workflow.
  Returns: 1 created, 0 already existed (also when finished and compacted to '<prefix>:{wf:<id>}:done'; nothing
           is written, the indexes included)
]]
--- @include "prelude"
-- The live row or its compacted record (one EXISTS of both keys: same hash tag, same slot).
if redis.call('EXISTS', KEYS[1], string.sub(KEYS[1], 1, -4) .. ':done') > 0 then return 0 end
local workflowFields = cjson.decode(ARGV[1])
-- The indexes first: an index write refused (out of memory) ends the script before the workflow exists.
if ARGV[3] ~= '' then redis.call('ZADD', KEYS[4], unpack(cjson.decode(ARGV[3]))) end
if ARGV[4] ~= '' then
  local members = cjson.decode(ARGV[4])
  local scored = {}
  for _, member in ipairs(members) do scored[#scored + 1] = 0; scored[#scored + 1] = member end
  redis.call('ZADD', KEYS[5], unpack(scored))
  redis.call('ZADD', KEYS[6], workflowFields.updatedAt, workflowFields.workflowId)
end
-- Writes the fields and returns them.
local function hset(key, fields)
  local flat = {}
  for k, v in pairs(fields) do flat[#flat + 1] = k; flat[#flat + 1] = v end
  redis.call('HSET', key, unpack(flat))
  return fields
end
hset(KEYS[1], workflowFields)
if ARGV[2] ~= '' then
  redis.call('RPUSH', KEYS[3], hset(KEYS[2], cjson.decode(ARGV[2])).delegationId)
end
return 1
