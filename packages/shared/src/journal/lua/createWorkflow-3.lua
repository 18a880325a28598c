--[[
  Creates a workflow and the intent of its first delegation, or does nothing
  if the workflow exists (idempotent on workflowId).
  KEYS[1] workflow hash
  KEYS[2] first delegation hash (ignored when ARGV[2] is '')
  KEYS[3] the workflow's delegation list
  ARGV[1] workflow fields, JSON object of strings
  ARGV[2] delegation fields, JSON object of strings, or ''
  Returns: 1 created, 0 already existed (also when finished and compacted to '<prefix>:{wf:<id>}:done')
]]
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('EXISTS', string.sub(KEYS[1], 1, -4) .. ':done') == 1 then return 0 end
local function hset(key, json)
  local fields = cjson.decode(json)
  local flat = {}
  for k, v in pairs(fields) do flat[#flat + 1] = k; flat[#flat + 1] = v end
  redis.call('HSET', key, unpack(flat))
end
hset(KEYS[1], ARGV[1])
if ARGV[2] ~= '' then
  hset(KEYS[2], ARGV[2])
  redis.call('RPUSH', KEYS[3], cjson.decode(ARGV[2]).delegationId)
end
return 1
