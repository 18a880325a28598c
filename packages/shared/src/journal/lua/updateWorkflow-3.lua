--[[
  Changes a workflow's fields, compare-and-set on its version, and refuses to
  leave a finished workflow state (COMPLETED, FAILED, COMPENSATED, CANCELED).
  KEYS[1] workflow hash
  KEYS[2] the workflow's delegation list (same hash tag, same slot)
  KEYS[3] the unfinished index when ARGV[7..] name entries (one server only: another Cluster slot); else KEYS[1]
  ARGV[1] expected version ('' = any)
  ARGV[2] fields JSON object of strings
  ARGV[3] now (ms)
  ARGV[4] retention ms for a workflow entering a finished state ('0' = keep)
  ARGV[5] '1': compact a workflow entering a finished state (layout below), or '' (keep the hashes)
  ARGV[6] '1': a workflow compacted here publishes its compacted record (below); '' the state only (a Cluster,
          where PUBLISH reaches every node over the cluster bus)
  ARGV[7..] index members (indexMember) removed from KEYS[3] in the same step when the change sets a finished
          state: the settle of the workflow's last delegation drops its entry and the workflow's '*' with the
          decision, one round trip instead of a ZREM after it (Journal.updateWorkflow `removeFromIndex`)
  A workflow entering a finished state whose delegations are all final, and whose record fits in
  the layout's maxBytes (artifacts included; given up as soon as the record built so far passes it), is compacted
  (README "Retention and storage"): its audit fields become one JSON string,
  '<prefix>:{wf:<id>}:done' (layout in compacted-record.ts), its push tokens (if any) a hash
  '<prefix>:{wf:<id>}:push' (delegation id -> token: a push is authenticated without reading the
  record), and the hashes and the list are deleted; with retention on, both expire after it.
  Otherwise every key expires.
  Publishes the new state on '<prefix>:{wf:<id>}:changed' when `state` is among the
  fields (wakes the producer's waitFor; nothing is lost without subscribers: it reads back); with ARGV[6] a
  workflow compacted here publishes its compacted record instead (a JSON object, where a state is a bare name): a waiter
  builds its view from the message and reads nothing more.
  Returns: new version (>= 1), or {version, removed} with ARGV[7..] (removed: how many of those entries were
           there, a workflow's '*' not counted); -1 missing; -3 version mismatch; -4 workflow already finished
]]
local finished = { COMPLETED = true, FAILED = true, COMPENSATED = true, CANCELED = true }
local base = string.sub(KEYS[1], 1, -4) -- '<prefix>:{wf:<id>}' without ':wf'
local row = redis.call('HMGET', KEYS[1], 'version', 'state', 'workflowId')
if not row[3] then
  if redis.call('EXISTS', base .. ':done') == 1 then return -4 end
  return -1
end
if ARGV[1] ~= '' and row[1] ~= ARGV[1] then return -3 end
if finished[row[2]] then return -4 end
local fields = cjson.decode(ARGV[2])
local version = (tonumber(row[1]) or 0) + 1
local flat = { 'updatedAt', ARGV[3] }
for k, v in pairs(fields) do flat[#flat + 1] = k; flat[#flat + 1] = v end
flat[#flat + 1] = 'version'; flat[#flat + 1] = tostring(version)
redis.call('HSET', KEYS[1], unpack(flat))

-- Compaction (layout and names: compacted-record.ts, written into this text at load by scripts.ts as a table
-- constructor: no JSON to decode per call).
-- cjson escapes '/' as '\/'; the record keeps it plain (the find first: most values hold no '/').
local function text(value)
  local encoded = cjson.encode(value)
  if string.find(encoded, '\\/', 1, true) then encoded = string.gsub(encoded, '\\/', '/') end
  return encoded
end
-- Replaces the first occurrence of `from` (a key and its value, '"key":…') in the JSON text `value` that
-- starts a member (after '{' or ','; inside a string a quote is always escaped, so never after either) by `to`.
local function replaceMember(value, from, to)
  local start = 1
  while true do
    local first, last = string.find(value, from, start, true)
    if not first then return value end
    local before = string.sub(value, first - 1, first - 1)
    if before == '{' or before == ',' then return string.sub(value, 1, first - 1) .. to .. string.sub(value, last + 1) end
    start = first + 1
  end
end
-- A JSON text may get '"="' marks only if it had none (so a mark is never the agent's own value).
local function markable(value) return value ~= nil and value ~= '' and not string.find(value, '"="', 1, true) end
-- A JSON text that may carry marks but holds '"="' of its own is kept as a string (`plain`): the reader
-- restores marks only inside embedded JSON, so an agent's own "=" is never taken for one.
local function plainFields(fields, names)
  local plain = {}
  for _, k in ipairs(names) do if fields[k] and fields[k] ~= '' and not markable(fields[k]) then plain[k] = true end end
  return plain
end
-- `since` (ms, the workflow's createdAt): time fields are stored as a number of ms after it.
local function encodeFields(fields, schema, since, plain)
  local out = {}
  for k, v in pairs(fields) do
    if v ~= '' and not schema.operational[k] and not (schema.zeroIsAbsent[k] and v == '0') then
      local c = string.sub(v, 1, 1)
      local encoded
      if since and schema.times[k] and string.match(v, '^%d+$') and #v <= 15 then encoded = string.format('%d', tonumber(v) - since)
      elseif schema.json[k] and (c == '{' or c == '[') and not plain[k] then encoded = v
      elseif string.match(v, '^[1-9]%d*$') and #v <= 15 then encoded = v
      else encoded = text(v) end
      out[#out + 1] = text(schema.names[k] or k) .. ':' .. encoded
    end
  end
  return '{' .. table.concat(out, ',') .. '}'
end
local function toFields(flat)
  local fields = {}
  for i = 1, #flat, 2 do fields[flat[i]] = flat[i + 1] end
  return fields
end
-- Leaves out (or marks '=') what the rest of the record implies; the reader restores it.
local function slimDelegation(d, workflow, stepAgents)
  local plain = plainFields(d, { 'statusMessage', 'message' })
  d.workflowId = nil
  if d.delegationId == (d.step or '') .. '.' .. (d.attempt or '') then d.delegationId = nil end
  if d.createdAt == workflow.createdAt then d.createdAt = nil end
  if d.updatedAt == d.finishedAt then d.updatedAt = nil end
  if (d.statusTimestamp or '') ~= '' then d.statusTimestampMs = nil end
  if (d.kind or 'step') == 'step' and stepAgents[d.step] == d.agentCardUrl then d.agentCardUrl = nil end
  if d.kind == 'step' then d.kind = nil end
  if d.requestedContextId and d.requestedContextId == d.contextId then d.requestedContextId = '=' end
  if markable(d.statusMessage) then
    if (d.contextId or '') ~= '' then d.statusMessage = replaceMember(d.statusMessage, '"contextId":' .. text(d.contextId), '"contextId":"="') end
    if (d.taskId or '') ~= '' then d.statusMessage = replaceMember(d.statusMessage, '"taskId":' .. text(d.taskId), '"taskId":"="') end
  end
  if markable(d.message) and d.attempt then
    local stamp = '{"workflowId":' .. text(row[3]) .. ',"step":' .. text(d.step or '') .. ',"attempt":' .. d.attempt .. '}'
    d.message = replaceMember(d.message, '"durableA2a":' .. stamp, '"durableA2a":"="')
  end
  return plain
end
local function compact(schema)
  local ids = redis.call('LRANGE', KEYS[2], 0, -1)
  local workflow = toFields(redis.call('HGETALL', KEYS[1]))
  local stepAgents = {}
  local ok, definition = pcall(cjson.decode, workflow.definition or '')
  if ok and type(definition) == 'table' and type(definition.steps) == 'table' then
    for _, step in ipairs(definition.steps) do
      if type(step) == 'table' and type(step.name) == 'string' and type(step.agent) == 'string' then stepAgents[step.name] = step.agent end
    end
  end
  local since = string.match(workflow.createdAt or '', '^%d+$') and tonumber(workflow.createdAt) or nil
  -- `size`: bytes of the record so far; past maxBytes it is given up at once (not built whole, then measured).
  -- `push`: delegation id, push token, … (the push webhook reads a token without the record).
  local delegations, artifactBytes, size, push = {}, 0, 0, {}
  for index, id in ipairs(ids) do
    local d = toFields(redis.call('HGETALL', base .. ':d:' .. id))
    if not schema.finalDelegation[d.state] then return nil end
    artifactBytes = artifactBytes + (tonumber(d.artifactBytes or '0') or 0)
    if artifactBytes > schema.maxBytes then return nil end
    if (d.pushToken or '') ~= '' then push[#push + 1] = id; push[#push + 1] = d.pushToken end
    local record = encodeFields(d, schema, since, slimDelegation(d, workflow, stepAgents))
    local artifacts = toFields(redis.call('HGETALL', base .. ':d:' .. id .. ':artifacts'))
    local kept = {}
    for k, v in pairs(artifacts) do
      local kind = string.match(k, '^(%a+):')
      if kind == 'order' or kind == 'meta' or kind == 'parts' then kept[k] = v end
    end
    if next(kept) then
      local parts = {}
      for k, v in pairs(kept) do
        local c = string.sub(v, 1, 1)
        parts[#parts + 1] = text(k) .. ':' .. ((string.match(k, '^order:') or not (c == '{' or c == '[')) and text(v) or v)
      end
      record = string.sub(record, 1, -2) .. (#record > 2 and ',' or '') .. text(schema.names.artifacts) .. ':{' .. table.concat(parts, ',') .. '}}'
    end
    size = size + #record + 1
    if size > schema.maxBytes then return nil end
    delegations[index] = record
  end
  workflow.workflowId = nil
  local plain = plainFields(workflow, { 'definition' })
  if markable(workflow.definition) then
    workflow.definition = replaceMember(workflow.definition, '"workflowId":' .. text(row[3]) .. ',', '"workflowId":"=",')
  end
  local createdAt = workflow.createdAt
  workflow.createdAt = nil
  local encoded = encodeFields(workflow, schema, since, plain)
  if createdAt then encoded = '{' .. text(schema.names.createdAt or 'createdAt') .. ':' .. (since and createdAt or text(createdAt)) .. (#encoded > 2 and ',' or '') .. string.sub(encoded, 2) end
  local done = '{"workflow":' .. encoded .. ',"delegations":[' .. table.concat(delegations, ',') .. ']}'
  if #done > schema.maxBytes then return nil end
  return done, ids, push
end

local published = fields.state
if fields.state and finished[fields.state] then
  local retention = tonumber(ARGV[4]) or 0
  local done, ids, push
  if (ARGV[5] or '') ~= '' then
    -- names: field -> stored name; json, operational, zeroIsAbsent, times, finalDelegation: sets (name -> true).
    local schema = {} --[[COMPACTED_RECORD_LAYOUT]]
    done, ids, push = compact(schema)
  end
  if done then
    if ARGV[6] == '1' then published = done end
    if retention > 0 then redis.call('SET', base .. ':done', done, 'PX', retention)
    else redis.call('SET', base .. ':done', done) end
    for first = 1, #push, 1000 do
      redis.call('HSET', base .. ':push', unpack(push, first, math.min(first + 999, #push)))
    end
    if #push > 0 and retention > 0 then redis.call('PEXPIRE', base .. ':push', retention) end
    -- DEL in chunks: Lua's unpack takes at most ~8,000 values, and a workflow may hold 4,000 delegations
    -- (100 steps × 20 attempts, each with a compensation), two keys each.
    local keys = { KEYS[1], KEYS[2] }
    for _, id in ipairs(ids) do
      keys[#keys + 1] = base .. ':d:' .. id
      keys[#keys + 1] = base .. ':d:' .. id .. ':artifacts'
    end
    for first = 1, #keys, 1000 do
      redis.call('DEL', unpack(keys, first, math.min(first + 999, #keys)))
    end
  elseif retention > 0 then
    redis.call('PEXPIRE', KEYS[1], retention)
    for _, id in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
      redis.call('PEXPIRE', base .. ':d:' .. id, retention)
      redis.call('PEXPIRE', base .. ':d:' .. id .. ':artifacts', retention)
    end
    redis.call('PEXPIRE', KEYS[2], retention)
  end
end
if published then redis.call('PUBLISH', base .. ':changed', published) end
if #ARGV >= 7 then
  -- Only delegations' entries count: the settle that took one observes that delegation's duration, once. A
  -- workflow's '*' (still there when a late second settle of a step settled before finishes the workflow) does not.
  local removed = 0
  if fields.state and finished[fields.state] then
    for i = 7, #ARGV do
      local taken = redis.call('ZREM', KEYS[3], ARGV[i])
      if string.sub(ARGV[i], -2) ~= '|*' then removed = removed + taken end
    end
  end
  return { version, removed }
end
return version
