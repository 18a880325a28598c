--[[
  Removes from the delegation's pending suspects (noteSuspect-1.lua) the task ids the reconciler read (or found to be
  our own task), compare-and-set on each id: one noted while it read stays for the next job. The field goes when no
  id is left.
  KEYS[1] delegation hash
  ARGV[1..n] the task ids to remove
  Returns: how many ids are still pending (0 when none, or the row is gone)
]]
local raw = redis.call('HGET', KEYS[1], 'suspects')
if not raw then return 0 end
local ok, ids = pcall(cjson.decode, raw)
if not ok or type(ids) ~= 'table' then
  redis.call('HDEL', KEYS[1], 'suspects')
  return 0
end
local drop = {}
for i = 1, #ARGV do drop[ARGV[i]] = true end
local left = {}
for _, id in ipairs(ids) do
  if not drop[id] then left[#left + 1] = id end
end
if #left == 0 then redis.call('HDEL', KEYS[1], 'suspects')
elseif #left ~= #ids then redis.call('HSET', KEYS[1], 'suspects', cjson.encode(left)) end
return #left
