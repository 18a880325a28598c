-- The question keys a delegation was parked on (applyStatus-5.lua 'askedKeys': a JSON array, oldest first): a
-- question asked again under one of them, after the row moved on to a later question, is an old event whatever its
-- timestamp. Bounded to ASKED_KEYS_KEPT (the latest): a question is asked and answered at a person's pace, and a key is
-- at most 128 characters (status-scripts.ts QUESTION_KEY_MAX): the field holds a few KB at most.
local ASKED_KEYS_KEPT = 32
local function askedKeysOf(text)
  local list = {}
  if text and text ~= '' then
    local ok, decoded = pcall(cjson.decode, text)
    if ok and type(decoded) == 'table' then
      for _, key in ipairs(decoded) do if type(key) == 'string' then list[#list + 1] = key end end
    end
  end
  local has = {}
  for _, key in ipairs(list) do has[key] = true end
  return { list = list, has = has }
end
-- The field's new text with `key` added (the oldest dropped past the bound), or nil when it is there already.
local function askedKeysAdded(asked, key)
  if asked.has[key] then return nil end
  local list = {}
  for i = math.max(1, #asked.list - ASKED_KEYS_KEPT + 2), #asked.list do list[#list + 1] = asked.list[i] end
  list[#list + 1] = key
  return cjson.encode(list)
end
