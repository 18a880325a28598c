-- A Task's artifacts (applyStatus-5.lua: the count at AT_ARTIFACT_COUNT, the quadruples from AT_ARTIFACTS): `count`
-- quadruples (artifactId, meta JSON, parts JSON array, bytes) in ARGV from `first` on.

-- Writes the Task's artifacts to `artifactsKey`, each at its place in the Task's list (order:<id> = its index; a
-- later duplicate id wins). In batches of 100 artifacts per HSET (unpack stays far below Lua's stack limit).
local function writeArtifacts(artifactsKey, first, count)
  local flat = {}
  for i = 0, count - 1 do
    local at = first + i * 4
    local id, meta, parts, bytes = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
    for _, item in ipairs({ 'meta:' .. id, meta, 'parts:' .. id, parts, 'order:' .. id, tostring(i), 'bytes:' .. id, bytes }) do flat[#flat + 1] = item end
    if #flat >= 800 then redis.call('HSET', artifactsKey, unpack(flat)); flat = {} end
  end
  if #flat > 0 then redis.call('HSET', artifactsKey, unpack(flat)) end
end

-- The artifacts `artifactsKey` holds that the Task's list leaves out: their ids in their held order (order:<id>),
-- their bytes summed (bytes:<id>), and how many distinct ids the list names. One HKEYS, then HMGETs of 200 ids each.
local function artifactsLeftOut(artifactsKey, first, count)
  local listed, distinct = {}, 0
  for i = 0, count - 1 do
    local id = ARGV[first + i * 4]
    if not listed[id] then listed[id] = true; distinct = distinct + 1 end
  end
  local ids = {}
  for _, field in ipairs(redis.call('HKEYS', artifactsKey)) do
    if string.sub(field, 1, 6) == 'order:' then
      local id = string.sub(field, 7)
      if not listed[id] then ids[#ids + 1] = id end
    end
  end
  local place, bytes = {}, 0
  for start = 1, #ids, 200 do
    local fields = {}
    for i = start, math.min(start + 199, #ids) do fields[#fields + 1] = 'order:' .. ids[i]; fields[#fields + 1] = 'bytes:' .. ids[i] end
    local values = redis.call('HMGET', artifactsKey, unpack(fields))
    for j = 1, #fields, 2 do
      local id = ids[start + (j - 1) / 2]
      place[id] = tonumber(values[j]) or 0
      bytes = bytes + (tonumber(values[j + 1]) or 0)
    end
  end
  table.sort(ids, function(a, b) if place[a] ~= place[b] then return place[a] < place[b] end return a < b end)
  return ids, bytes, distinct
end

-- How many distinct ids the Task's list names that `artifactsKey` does not hold (a new artifact each, for the row's
-- 'artifactCount'). HMGETs of 200 ids each.
local function artifactsNew(artifactsKey, first, count)
  local new, seen = 0, {}
  for start = 0, count - 1, 200 do
    local last = math.min(start + 199, count - 1)
    local fields = {}
    for i = start, last do fields[#fields + 1] = 'order:' .. ARGV[first + i * 4] end
    local values = redis.call('HMGET', artifactsKey, unpack(fields))
    for i = start, last do
      local id = ARGV[first + i * 4]
      if not values[i - start + 1] and not seen[id] then seen[id] = true; new = new + 1 end
    end
  end
  return new
end

-- The held artifacts the Task's list carries with other content than the stored copy (parts or meta JSON differ):
-- their ids, in the Task's order. An unfinished Task's copy is written over the stored one, and a stale snapshot's
-- (taken between two chunks of an artifact) is older than what the stream stored: the caller is in doubt about them
-- until a full read (review16m). HMGETs of 200 ids each.
local function artifactsRewritten(artifactsKey, first, count)
  local rewritten, seen = {}, {}
  for start = 0, count - 1, 200 do
    local last = math.min(start + 199, count - 1)
    local fields = {}
    for i = start, last do local id = ARGV[first + i * 4]; fields[#fields + 1] = 'parts:' .. id; fields[#fields + 1] = 'meta:' .. id end
    local values = redis.call('HMGET', artifactsKey, unpack(fields))
    for i = start, last do
      local at, j = first + i * 4, (i - start) * 2 + 1
      local id = ARGV[at]
      if values[j] and not seen[id] and (values[j] ~= ARGV[at + 2] or values[j + 1] ~= ARGV[at + 1]) then
        seen[id] = true; rewritten[#rewritten + 1] = id
      end
    end
  end
  return rewritten
end

-- A FINISHED Task's artifacts replace every stored one (deleted first when `hadArtifacts`: a row without
-- 'artifactBytes' never stored one): the agent's last word on its result.
local function replaceArtifacts(artifactsKey, hadArtifacts, first, count)
  if hadArtifacts then redis.call('DEL', artifactsKey) end
  writeArtifacts(artifactsKey, first, count)
end

-- An UNFINISHED Task's artifacts are merged in: each listed one replaces its stored self (its seal, if any, goes, as a
-- replacement would leave it), at its place in the Task's list; the held ones the list leaves out (`leftOut`, in
-- their held order) are kept after them. A Task read while the task runs may be a stale snapshot (taken between two
-- artifact updates, or before a push) and proves nothing about what it leaves out; the finished Task decides.
local function mergeArtifacts(artifactsKey, first, count, leftOut)
  local seals = {}
  for i = 0, count - 1 do seals[#seals + 1] = 'sealed:' .. ARGV[first + i * 4] end
  for start = 1, #seals, 200 do redis.call('HDEL', artifactsKey, unpack(seals, start, math.min(start + 199, #seals))) end
  writeArtifacts(artifactsKey, first, count)
  local flat = {}
  for j, id in ipairs(leftOut) do
    flat[#flat + 1] = 'order:' .. id; flat[#flat + 1] = tostring(count + j - 1)
    if #flat >= 800 then redis.call('HSET', artifactsKey, unpack(flat)); flat = {} end
  end
  if #flat > 0 then redis.call('HSET', artifactsKey, unpack(flat)) end
end
