-- A protocol error an agent caused, noted on a delegation row (noteProtocolError-1.lua, noteDuplicateTask-1.lua; the
-- one place that writes these fields): `protocolError` is the latest, `protocolErrorCount` how many were noted, and
-- the ones before the latest go to `earlierProtocolErrors` (a JSON array, oldest first, the first `kept` of them:
-- keys.ts EARLIER_PROTOCOL_ERRORS_MAX), so a later note never hides earlier evidence (a FOREIGN_TASK noted before a
-- DUPLICATE_TASK); past the bound they are only counted. The array's text is built from the stored texts as they are
-- (no re-encoding: the compacted record embeds it byte for byte). Sets `updatedAt` and bumps the version.
local function noteProtocolErrorOn(key, errorJson, now, kept)
  local row = redis.call('HMGET', key, 'protocolError', 'earlierProtocolErrors')
  local set = { 'protocolError', errorJson, 'updatedAt', now }
  if row[1] and row[1] ~= '' then
    local earlier = row[2] or ''
    local held = 0
    if earlier ~= '' then
      local ok, decoded = pcall(cjson.decode, earlier)
      if ok and type(decoded) == 'table' then held = #decoded else earlier = '' end
    end
    if held < tonumber(kept) then
      set[#set + 1] = 'earlierProtocolErrors'
      set[#set + 1] = held == 0 and ('[' .. row[1] .. ']') or (string.sub(earlier, 1, -2) .. ',' .. row[1] .. ']')
    end
  end
  redis.call('HSET', key, unpack(set))
  redis.call('HINCRBY', key, 'protocolErrorCount', '1')
  redis.call('HINCRBY', key, 'version', '1')
end
