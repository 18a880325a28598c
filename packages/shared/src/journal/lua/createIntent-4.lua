--[[
  Journals the intent of one more delegation of a workflow (a next step, a
  re-delegation or a compensation), before any I/O. Idempotent on the
  delegation id; fenced on the workflow version the caller decided from.
  KEYS[1] workflow hash
  KEYS[2] delegation hash
  KEYS[3] the workflow's delegation list
  KEYS[4] the unfinished index when ARGV[5] names a member (one server only: another Cluster slot); else KEYS[1] again,
          unused
  ARGV[1] delegation fields, JSON object of strings (the workflow's `tenant` is added when the row has one)
  ARGV[2] expected workflow version ('' = any)
  ARGV[3] workflow fields to set alongside, JSON object of strings ('{}' for none)
  ARGV[4] the intent's history entry (a re-delegation or a compensation: history.ts `historyEntryText`; '' none),
          appended when created
  ARGV[5] the delegation's unfinished-index member ('' = none: the caller adds it, a Cluster), ARGV[6] its due time
          (ms): added in the same script when created, so the row and its entry exist together (an entry added before
          the row could be dropped by a reconcile that found no row yet, and one added for an intent that existed
          already could put back a settled delegation's)
  Returns: 1 created, 0 already existed, DELEGATION_MISSING (the workflow's row), VERSION_CONFLICT (the workflow's)
]]
--- @include "prelude"
--- @include "history"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'version') ~= ARGV[2] then return CODE.VERSION_CONFLICT end
local function hset(key, json)
  local fields = cjson.decode(json)
  local flat = {}
  for k, v in pairs(fields) do flat[#flat + 1] = k; flat[#flat + 1] = v end
  if #flat > 0 then redis.call('HSET', key, unpack(flat)) end
end
hset(KEYS[2], ARGV[1])
-- A delegation belongs to its workflow's tenant (tenant.ts): recorded with it, in this step.
local tenant = redis.call('HGET', KEYS[1], 'tenant')
if tenant then redis.call('HSET', KEYS[2], 'tenant', tenant) end
redis.call('RPUSH', KEYS[3], cjson.decode(ARGV[1]).delegationId)
hset(KEYS[1], ARGV[3])
redis.call('HINCRBY', KEYS[1], 'version', '1')
appendHistory(string.sub(KEYS[1], 1, -4), ARGV[4])
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[4], ARGV[6], ARGV[5]) end
return 1
