-- A snapshot's artifacts replace every stored one: `count` quadruples (artifactId, meta JSON, parts JSON array,
-- bytes) in ARGV from `first` on, written to `artifactsKey` (deleted first when `hadArtifacts`: a row without
-- 'artifactBytes' never stored one). In batches of 100 artifacts per HSET (unpack stays far below Lua's stack limit).
local function replaceArtifacts(artifactsKey, hadArtifacts, first, count)
  if hadArtifacts then redis.call('DEL', artifactsKey) end
  local flat = {}
  for i = 0, count - 1 do
    local at = first + i * 4
    local id, meta, parts, bytes = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
    for _, item in ipairs({ 'meta:' .. id, meta, 'parts:' .. id, parts, 'order:' .. id, tostring(i), 'bytes:' .. id, bytes }) do flat[#flat + 1] = item end
    if #flat >= 800 then redis.call('HSET', artifactsKey, unpack(flat)); flat = {} end
  end
  if #flat > 0 then redis.call('HSET', artifactsKey, unpack(flat)) end
end
