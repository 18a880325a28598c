--[[
  Journals a part of the attempt's result we refused over a limit (field case A32: a stream or push event, a push
  body, a read or a SendMessage answer about our task): a durable fact of the attempt until a full read shows the
  result whole. The workers' table and the push webhook judge every finished task against it (journal
  refused-result.ts `refusedResultShown`): a COMPLETED without the result read since is never a plain success.
  The first refusal's error is kept (a later one adds nothing a person needs to read), but every refused artifact's id
  is gathered (a full read must show each): at most ARGV[4] ids, each at most ARGV[5] bytes; an id past either bound
  is not kept and sets `artifactIdsLost` (then no read can show the result whole: a person decides). Finished rows are
  left alone. A change sets `updatedAt` and bumps the version (a caller holding the row from before it asks again).
  KEYS[1] delegation hash
  ARGV[1] the refusal JSON {code, message, limit, delivery} (no ids: the id is ARGV[3]), kept when it is the first
  ARGV[2] now (ms)
  ARGV[3] the refused artifact's id ('' when the refusal knew none)
  ARGV[4] REFUSED_ARTIFACT_IDS_MAX
  ARGV[5] REFUSED_ARTIFACT_ID_BYTES_MAX
  Returns: {version, changed}: the version as written (changed 1) or as it is (changed 0: the fact already held it);
           {DELEGATION_MISSING}; {0, 0} finished
]]
--- @include "prelude"
local row = redis.call('HMGET', KEYS[1], 'delegationId', 'state', 'refusedResult', 'version')
if not row[1] then return {CODE.DELEGATION_MISSING} end
if FINISHED[row[2]] then return {0, 0} end
local version = tonumber(row[4]) or 0
local id = ARGV[3]
local kept = row[3] and row[3] ~= ''
if kept and id == '' then return {version, 0} end
if not kept and id == '' then
  version = version + 1
  redis.call('HSET', KEYS[1], 'refusedResult', ARGV[1], 'updatedAt', ARGV[2], 'version', tostring(version))
  return {version, 1}
end
-- An artifact id to gather: into the kept refusal, or the first one (whose JSON names no ids: they are added here).
local refused = cjson.decode(kept and row[3] or ARGV[1])
local ids = {}
if type(refused.artifactIds) == 'table' then ids = refused.artifactIds end
for _, known in ipairs(ids) do
  if known == id then return {version, 0} end
end
if #ids >= tonumber(ARGV[4]) or #id > tonumber(ARGV[5]) then
  if kept and refused.artifactIdsLost == true then return {version, 0} end
  refused.artifactIdsLost = true
else
  ids[#ids + 1] = id
  refused.artifactIds = ids
end
version = version + 1
redis.call('HSET', KEYS[1], 'refusedResult', cjson.encode(refused), 'updatedAt', ARGV[2], 'version', tostring(version))
return {version, 1}
