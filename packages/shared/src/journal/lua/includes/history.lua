-- A workflow's history (journal/history.ts; docs/people.md "History"): append-only, one JSON text per entry in the list
-- '<base>:history' (base: '<prefix>:{wf:<id>}', same hash tag as the workflow row), appended by the script of the
-- transition the entry describes. Bounded: at most HISTORY.entries entries and HISTORY.bytes bytes of entry text;
-- past either the oldest are dropped (LPOP) and counted in the workflow row's 'historyDropped'; the row's
-- 'historyBytes' holds the bytes kept (operational: compaction reads the list only when it is set). Nothing is
-- appended once the workflow row is gone (finished and compacted, or expired): a late entry would outlive it.
-- The limits are history.ts's HISTORY_LIMITS, written into this text at load (scripts.ts).
local HISTORY = {} --[[HISTORY_LIMITS]]
local function appendHistory(base, entry)
  if entry == nil or entry == '' then return end
  local workflowKey = base .. ':wf'
  local row = redis.call('HMGET', workflowKey, 'workflowId', 'historyBytes', 'historyDropped')
  if not row[1] then return end
  local listKey = base .. ':history'
  local length = redis.call('RPUSH', listKey, entry)
  local bytes = (tonumber(row[2] or '') or 0) + #entry
  local dropped = 0
  while length > HISTORY.entries or bytes > HISTORY.bytes do
    local oldest = redis.call('LPOP', listKey)
    if not oldest then break end
    length = length - 1
    bytes = bytes - #oldest
    dropped = dropped + 1
  end
  if dropped > 0 then
    redis.call('HSET', workflowKey, 'historyBytes', bytes, 'historyDropped', (tonumber(row[3] or '') or 0) + dropped)
  else
    redis.call('HSET', workflowKey, 'historyBytes', bytes)
  end
end
-- `text` cut to at most `bytes` bytes without splitting a UTF-8 character (continuation bytes are 0x80-0xBF).
local function cutUtf8(text, bytes)
  if #text <= bytes then return text end
  local last = bytes
  while last > 0 do
    local byte = string.byte(text, last + 1)
    if not byte or byte < 0x80 or byte >= 0xC0 then break end
    last = last - 1
  end
  return string.sub(text, 1, last)
end
-- cjson escapes '/' and DEL; JSON.stringify does neither: kept as JSON.stringify writes them (one spelling).
local function historyText(value)
  local encoded = cjson.encode(value)
  if string.find(encoded, '\\/', 1, true) then encoded = string.gsub(encoded, '\\/', '/') end
  if string.find(encoded, '\\u007f', 1, true) then encoded = string.gsub(encoded, '\\u007f', '\127') end
  return encoded
end
-- The entry of a question an agent asked (history.ts HISTORY_ENTRY_SCHEMAS.question): `message` is the status
-- message's JSON text ('' none); past HISTORY.entryBytes its text parts are kept, cut to HISTORY.textBytes.
local function questionEntry(now, delegationId, step, state, message)
  local head = '{"kind":"question","at":' .. now .. ',"delegationId":' .. historyText(delegationId) .. ',"step":' .. historyText(step) .. ',"state":' .. historyText(state)
  if message == nil or message == '' then return head .. '}' end
  local whole = head .. ',"message":' .. message .. '}'
  if #whole <= HISTORY.entryBytes then return whole end
  local ok, decoded = pcall(cjson.decode, message)
  local text = ''
  if ok and type(decoded) == 'table' and type(decoded.parts) == 'table' then
    for _, part in ipairs(decoded.parts) do
      if type(part) == 'table' and type(part.text) == 'string' then text = text .. part.text
      elseif type(part) == 'table' and part.data ~= nil then text = text .. '[data]'
      else text = text .. '[file]' end
      if #text > HISTORY.textBytes then break end
    end
  end
  local kept = '{"parts":[{"text":' .. historyText(cutUtf8(text, HISTORY.textBytes)) .. '}]'
  if ok and type(decoded) == 'table' and type(decoded.messageId) == 'string' and #decoded.messageId <= 200 then
    kept = kept .. ',"messageId":' .. historyText(decoded.messageId)
  end
  local cut = head .. ',"message":' .. kept .. '},"cut":true}'
  -- Escapes can lengthen the kept text past the entry's bound: then the question is kept without its text.
  if #cut > HISTORY.entryBytes then return head .. ',"cut":true}' end
  return cut
end
