--[[
  Changes a workflow's fields, compare-and-set on its version, and refuses to
  leave a finished workflow state (COMPLETED, FAILED, COMPENSATED, CANCELED).
  KEYS[1] workflow hash
  KEYS[2] the workflow's delegation list; every delegation row (and its artifacts)
          listed there expires with the workflow (same hash tag, same slot)
  ARGV[1] expected version ('' = any)
  ARGV[2] fields JSON object of strings
  ARGV[3] now (ms)
  ARGV[4] retention ms for a workflow entering a finished state ('0' = keep)
  Publishes the new state on '<prefix>:{wf:<id>}:changed' when `state` is among the
  fields (wakes the producer's waitFor; nothing is lost without subscribers: it reads back).
  Returns: new version (>= 1); -1 missing; -3 version mismatch; -4 workflow already finished
]]
local finished = { COMPLETED = true, FAILED = true, COMPENSATED = true, CANCELED = true }
local row = redis.call('HMGET', KEYS[1], 'version', 'state', 'workflowId')
if not row[3] then return -1 end
if ARGV[1] ~= '' and row[1] ~= ARGV[1] then return -3 end
if finished[row[2]] then return -4 end
local fields = cjson.decode(ARGV[2])
local version = (tonumber(row[1]) or 0) + 1
local flat = { 'updatedAt', ARGV[3] }
for k, v in pairs(fields) do flat[#flat + 1] = k; flat[#flat + 1] = v end
flat[#flat + 1] = 'version'; flat[#flat + 1] = tostring(version)
redis.call('HSET', KEYS[1], unpack(flat))
if fields.state and finished[fields.state] then
  local retention = tonumber(ARGV[4]) or 0
  if retention > 0 then
    redis.call('PEXPIRE', KEYS[1], retention)
    local base = string.sub(KEYS[1], 1, -4) -- '<prefix>:{wf:<id>}' without ':wf'
    for _, id in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
      redis.call('PEXPIRE', base .. ':d:' .. id, retention)
      redis.call('PEXPIRE', base .. ':d:' .. id .. ':artifacts', retention)
    end
    redis.call('PEXPIRE', KEYS[2], retention)
  end
end
if fields.state then redis.call('PUBLISH', string.sub(KEYS[1], 1, -4) .. ':changed', fields.state) end
return version
