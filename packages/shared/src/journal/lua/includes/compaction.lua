-- Compaction of a workflow entering a finished state (docs/concepts.md "Retention and storage"; used by updateWorkflow-4.lua):
-- when its delegations are all final and its record fits in the layout's maxBytes (artifacts and history included;
-- given up as soon as the record built so far passes it), its audit fields and its history (the list's entry texts
-- byte for byte, `"history":[…]` after the delegations) become one JSON string, '<prefix>:{wf:<id>}:done'
-- (layout in compacted-record.ts), its push tokens (if any) a hash '<prefix>:{wf:<id>}:push' (delegation id ->
-- token: a push is authenticated without reading the record), and the hashes and the list are deleted; with
-- retention on, both expire after it. Otherwise every key expires.
-- The layout and names: compacted-record.ts, written into this text at load by scripts.ts as a table constructor
-- (no JSON to decode per call).
-- cjson escapes '/' as '\/'; the record keeps it plain. A string with no control character, '"', '\' or '/' is
-- its own text between quotes (cjson escapes nothing else: bytes from 0x80 pass as they are), without cjson.
local function text(value)
  if not string.find(value, '[%c"\\/]') then return '"' .. value .. '"' end
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
-- `since` (ms, the workflow's createdAt): time fields are stored as a number of ms after it. Members in the layout's
-- `order` (compacted-record.ts: the text depends on the row's values only, so the worker can build the same text,
-- compacted-record-text.ts), then fields outside it in table order (the worker builds no text for such a row).
local function encodeFields(fields, schema, since, plain)
  local out = {}
  local function put(k, v)
    if v ~= '' and not schema.operational[k] and not (schema.zeroIsAbsent[k] and v == '0') then
      local c = string.sub(v, 1, 1)
      local encoded
      if since and schema.times[k] and string.match(v, '^%d+$') and #v <= 15 then encoded = string.format('%d', tonumber(v) - since)
      elseif schema.json[k] and (c == '{' or c == '[') and not plain[k] then encoded = v
      elseif string.match(v, '^[1-9]%d*$') and #v <= 15 then encoded = v
      else encoded = text(v) end
      out[#out + 1] = (schema.label[k] or text(schema.names[k] or k)) .. ':' .. encoded
    end
  end
  for _, k in ipairs(schema.order) do
    local v = fields[k]
    if v then put(k, v) end
  end
  for k, v in pairs(fields) do
    if not schema.label[k] then put(k, v) end
  end
  return '{' .. table.concat(out, ',') .. '}'
end
local function toFields(flat)
  local fields = {}
  for i = 1, #flat, 2 do fields[flat[i]] = flat[i + 1] end
  return fields
end
-- Leaves out (or marks '=') what the rest of the record implies; the reader restores it.
local function slimDelegation(d, workflow, stepAgents, workflowId)
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
    local stamp = '{"workflowId":' .. text(workflowId) .. ',"step":' .. text(d.step or '') .. ',"attempt":' .. d.attempt .. '}'
    d.message = replaceMember(d.message, '"durableA2a":' .. stamp, '"durableA2a":"="')
  end
  return plain
end
-- A delegation's record text with its artifacts (kept: order, meta, parts) as member 'art', when it has any.
-- `artifacts`: the artifacts hash as fields (field -> value). Members in the order of their names (sorted), so the
-- text depends on the fields alone, not on how they were stored or read (a hash's or a Lua table's order).
local function withArtifacts(record, schema, artifacts)
  local names = {}
  for k in pairs(artifacts) do
    local kind = string.match(k, '^(%a+):')
    if kind == 'order' or kind == 'meta' or kind == 'parts' then names[#names + 1] = k end
  end
  if #names == 0 then return record end
  table.sort(names)
  local parts = {}
  for i, k in ipairs(names) do
    local v = artifacts[k]
    local c = string.sub(v, 1, 1)
    parts[i] = text(k) .. ':' .. ((string.match(k, '^order:') or not (c == '{' or c == '[')) and text(v) or v)
  end
  return string.sub(record, 1, -2) .. (#record > 2 and ',' or '') .. text(schema.names.artifacts) .. ':{' .. table.concat(parts, ',') .. '}}'
end
-- The whole record from the workflow's text and its delegations' (artifacts included), with its history list
-- (read only when the row's 'historyBytes' says it holds entries: lua/includes/history.lua); nil past maxBytes
-- (given up as soon as the delegations built so far pass it). `given` (optional): per delegation index, its
-- artifacts as fields, instead of reading its artifacts hash (a snapshot's, not written: finishStep-5.lua).
local function assemble(schema, encodedWorkflow, records, ids, base, historyBytes, given)
  local delegations, size = {}, 0
  for index, id in ipairs(ids) do
    local artifacts = given and given[index] or toFields(redis.call('HGETALL', base .. ':d:' .. id .. ':artifacts'))
    local record = withArtifacts(records[index], schema, artifacts)
    size = size + #record + 1
    if size > schema.maxBytes then return nil end
    delegations[index] = record
  end
  local history = ''
  if historyBytes ~= '' and historyBytes ~= '0' then
    local entries = redis.call('LRANGE', base .. ':history', '0', '-1')
    if #entries > 0 then history = ',"history":[' .. table.concat(entries, ',') .. ']' end
  end
  local done = '{"workflow":' .. encodedWorkflow .. ',"delegations":[' .. table.concat(delegations, ',') .. ']' .. history .. '}'
  if #done > schema.maxBytes then return nil end
  return done
end
-- `workflow`: the workflow row (field -> value) as this step leaves it; compact changes it.
local function compact(schema, workflow, listKey, base, workflowId)
  local ids = redis.call('LRANGE', listKey, '0', '-1')
  local stepAgents = {}
  local ok, definition = pcall(cjson.decode, workflow.definition or '')
  if ok and type(definition) == 'table' and type(definition.steps) == 'table' then
    for _, step in ipairs(definition.steps) do
      if type(step) == 'table' and type(step.name) == 'string' and type(step.agent) == 'string' then stepAgents[step.name] = step.agent end
    end
  end
  local since = string.match(workflow.createdAt or '', '^%d+$') and tonumber(workflow.createdAt) or nil
  -- `push`: delegation id, push token, … (the push webhook reads a token without the record).
  local records, artifactBytes, size, push, answered = {}, 0, 0, {}, false
  for index, id in ipairs(ids) do
    local d = toFields(redis.call('HGETALL', base .. ':d:' .. id))
    if not schema.finalDelegation[d.state] then return nil end
    if (d.replyMessageId or '') ~= '' then answered = true end
    artifactBytes = artifactBytes + (tonumber(d.artifactBytes or '0') or 0)
    if artifactBytes > schema.maxBytes then return nil end
    if (d.pushToken or '') ~= '' then push[#push + 1] = id; push[#push + 1] = d.pushToken end
    records[index] = encodeFields(d, schema, since, slimDelegation(d, workflow, stepAgents, workflowId))
    size = size + #records[index] + 1
    if size > schema.maxBytes then return nil end
  end
  workflow.workflowId = nil
  local historyBytes = workflow.historyBytes or ''
  local plain = plainFields(workflow, { 'definition' })
  if markable(workflow.definition) then
    workflow.definition = replaceMember(workflow.definition, '"workflowId":' .. text(workflowId) .. ',', '"workflowId":"=",')
  end
  local createdAt = workflow.createdAt
  workflow.createdAt = nil
  local encoded = encodeFields(workflow, schema, since, plain)
  if createdAt then encoded = '{' .. schema.label.createdAt .. ':' .. (since and createdAt or text(createdAt)) .. (#encoded > 2 and ',' or '') .. string.sub(encoded, 2) end
  local done = assemble(schema, encoded, records, ids, base, historyBytes)
  if not done then return nil end
  return done, ids, push, answered
end

-- The caller's own record text (`prebuilt`: { workflow = text, ids = {…}, records = {…}, rows = {…} }, the texts as
-- compacted-record-text.ts builds them from rows it read), kept only when it is the text `compact` would build now:
-- the delegation list is `ids`, and every delegation row still holds the version, fence, push config state, push
-- config id and push token it was built from (`rows[i]`: those five values, '' for an absent field). Every change to
-- a delegation row bumps its version except the lease's fence and owner and the push config's life cycle
-- (notePushConfig-1.lua): those are compared here; the owner is not in the record. Artifacts and history change
-- only with a version, and are read here. The workflow row's version and historyDropped were checked by the caller
-- (`prebuilt.stale`). Returns the ids, push tokens and whether a delegation has a reply (the workflow may have an
-- answer index: `storeCompacted`), or nil (then `compact` builds the text).
local function checkPrebuilt(listKey, base, prebuilt)
  if prebuilt.stale then return nil end
  local ids = redis.call('LRANGE', listKey, '0', '-1')
  if #ids ~= #prebuilt.ids then return nil end
  local push, answered = {}, false
  for index, id in ipairs(ids) do
    if id ~= prebuilt.ids[index] then return nil end
    local expected = prebuilt.rows[index]
    local row = redis.call('HMGET', base .. ':d:' .. id, 'version', 'fence', 'pushConfigState', 'pushConfigId', 'pushToken', 'replyMessageId')
    for i = 1, 5 do
      if (row[i] or '') ~= expected[i] then return nil end
    end
    if row[5] and row[5] ~= '' then push[#push + 1] = id; push[#push + 1] = row[5] end
    if row[6] and row[6] ~= '' then answered = true end
  end
  return ids, push, answered
end

-- Gives `key` the expiry time of `other` (the same millisecond; PEXPIRE with the same duration may land a tick later),
-- when `other` has one.
local function expireWith(key, other)
  local at = redis.call('PEXPIRETIME', other)
  if at > 0 then redis.call('PEXPIREAT', key, at) end
end

-- Stores a finished workflow's compacted record `done` (retention ms: 0 = kept), its push tokens (`push`: delegation
-- id, token, …), keeps its answer index with the same expiry (`answered`: a delegation has a reply, so the index may
-- exist; a workflow without one costs no command), and deletes its hashes, list and history (`ids`: its delegation
-- ids), and `alsoDeleted` (optional: a key of the same slot the caller deletes with them).
-- Numbers go to redis.call as text (here `px`, and every literal in the journal's scripts): Redis 7.0 turns a Lua
-- number argument into a string with snprintf("%.17g"), about 2,500 instructions each, where '%d' or a literal costs
-- a few hundred or nothing (docs/performance.md, branch redis37).
local function storeCompacted(workflowKey, listKey, base, done, ids, push, retention, answered, alsoDeleted)
  local px = retention > 0 and string.format('%d', retention)
  if px then redis.call('SET', base .. ':done', done, 'PX', px)
  else redis.call('SET', base .. ':done', done) end
  for first = 1, #push, 1000 do
    redis.call('HSET', base .. ':push', unpack(push, first, math.min(first + 999, #push)))
  end
  if #push > 0 and px then redis.call('PEXPIRE', base .. ':push', px) end
  -- The answer index (includes/answerIndex.lua) stays beside the record, with its expiry: a retried answer is still
  -- that answer. The record's own expiry time, not `retention` again: the clock may tick between two commands.
  if answered and retention > 0 then expireWith(base .. ':answers', base .. ':done') end
  -- DEL in chunks: Lua's unpack takes at most ~8,000 values, and a workflow may hold 4,000 delegations
  -- (100 steps × 20 attempts, each with a compensation), two keys each.
  local keys = { workflowKey, listKey, base .. ':history' }
  if alsoDeleted then keys[4] = alsoDeleted end
  for _, id in ipairs(ids) do
    keys[#keys + 1] = base .. ':d:' .. id
    keys[#keys + 1] = base .. ':d:' .. id .. ':artifacts'
  end
  for first = 1, #keys, 1000 do
    redis.call('DEL', unpack(keys, first, math.min(first + 999, #keys)))
  end
end

-- Stores a finished workflow (`finishWorkflowKeys`): compacted when `compactIt` and `compact` succeeds (returns the
-- compacted record and whether it is the caller's `prebuilt` text), else its keys expire after `retention` ms
-- (0 = kept; returns nil).
-- `unwritten`: nil when the workflow row holds this step's change (read here when compacting), or
-- { row = the row as this step leaves it (field -> value), flat = the change's HSET arguments } when the caller read
-- the row whole and held its change back: a compacted workflow's row is deleted, so the change is written only when
-- the row stays (one HSET and one HGETALL fewer on the settle). With `prebuilt` the caller held its change back
-- without reading the row ({ flat = …, historyBytes = the row's }): the row is read whole only when the text is not
-- kept.
local function finishWorkflowKeys(workflowKey, listKey, base, workflowId, retention, compactIt, unwritten, prebuilt)
  local done, ids, push, kept, answered
  if compactIt then
    if prebuilt then
      ids, push, answered = checkPrebuilt(listKey, base, prebuilt)
      if ids then
        -- The caller's text needs only what `assemble` reads (the artifacts' stored name, maxBytes): the layout whole
        -- is a table of some 300 entries, about 4 µs to build on every call.
        done = assemble({} --[[COMPACTED_RECORD_ASSEMBLY]], prebuilt.workflow, prebuilt.records, ids, base, unwritten.historyBytes)
        kept = done ~= nil
      elseif unwritten then
        -- The text is stale: the row whole, as this step leaves it, for `compact`.
        local row = toFields(redis.call('HGETALL', workflowKey))
        for i = 1, #unwritten.flat, 2 do row[unwritten.flat[i]] = unwritten.flat[i + 1] end
        unwritten.row = row
      end
    end
    if not kept and not (prebuilt and ids) then
      -- names: field -> stored name; label: field -> quoted stored name; order: the fields in the order written;
      -- json, operational, zeroIsAbsent, times, finalDelegation: sets (name -> true).
      local schema = {} --[[COMPACTED_RECORD_LAYOUT]]
      local workflow = unwritten and unwritten.row or toFields(redis.call('HGETALL', workflowKey))
      done, ids, push, answered = compact(schema, workflow, listKey, base, workflowId)
    end
  end
  if unwritten and not done then redis.call('HSET', workflowKey, unpack(unwritten.flat)) end
  if done then
    storeCompacted(workflowKey, listKey, base, done, ids, push, retention, answered)
  elseif retention > 0 then
    local px = string.format('%d', retention)
    redis.call('PEXPIRE', workflowKey, px)
    for _, id in ipairs(redis.call('LRANGE', listKey, '0', '-1')) do
      redis.call('PEXPIRE', base .. ':d:' .. id, px)
      redis.call('PEXPIRE', base .. ':d:' .. id .. ':artifacts', px)
    end
    redis.call('PEXPIRE', listKey, px)
    redis.call('PEXPIRE', base .. ':history', px)
    expireWith(base .. ':answers', workflowKey)
  end
  return done, kept
end
