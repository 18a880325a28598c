-- The workflow's answer index (keys.ts `answers`): hash messageId -> '<digest> <delegationId> <questionKey>', one
-- field per answer journaled in the workflow (recordReply-2.lua, answerByLink-2.lua, expireQuestion-2.lua), the
-- digest being replies.ts `answerDigest` of its parts. The one record of which answers exist: a messageId in it is
-- that answer for the workflow's whole life. Needs the workflowKeys include.
-- An index entry's digest: its text up to the first space.
local function digestOf(entry) return string.match(entry, '^(%S*)') end
-- Indexes answer `id` in `indexKey` with `entry`, refused (false) when the index holds `limit` answers (nothing
-- written). A new index (its first answer) expires when the workflow row of `delegationKey` does, when that row has
-- an expiry (its expiry time, the same millisecond); compaction (compaction.lua) gives it the finished record's.
local function indexAnswer(indexKey, delegationKey, id, entry, limit)
  local count = redis.call('HLEN', indexKey)
  if count >= tonumber(limit) then return false end
  redis.call('HSET', indexKey, id, entry)
  if count == 0 then
    local at = redis.call('PEXPIRETIME', workflowBaseOf(delegationKey) .. ':wf')
    if at > 0 then redis.call('PEXPIREAT', indexKey, at) end
  end
  return true
end
