--[[
  Journals a part of the attempt's result we refused over a limit (a stream or push event of our task: field case
  A32): a durable fact of the attempt until a full read shows the result whole. The workers' table reads it on every
  finishing path (delegation/core/refused-result.ts): a COMPLETED without a result read since is never a plain
  success. The first refusal is kept (a later one adds nothing a person needs); finished rows are left alone.
  Sets `updatedAt` and bumps the version (a caller holding the row from before it asks again).
  KEYS[1] delegation hash
  ARGV[1] the refusal JSON {code, message, limit}
  ARGV[2] now (ms)
  Returns: {version} as written (or as it is when one was kept); {DELEGATION_MISSING}; {0} finished
]]
--- @include "prelude"
local row = redis.call('HMGET', KEYS[1], 'delegationId', 'state', 'refusedResult', 'version')
if not row[1] then return {CODE.DELEGATION_MISSING} end
if FINISHED[row[2]] then return {0} end
if row[3] and row[3] ~= '' then return {tonumber(row[4]) or 0} end
local version = (tonumber(row[4]) or 0) + 1
redis.call('HSET', KEYS[1], 'refusedResult', ARGV[1], 'updatedAt', ARGV[2], 'version', tostring(version))
return {version}
