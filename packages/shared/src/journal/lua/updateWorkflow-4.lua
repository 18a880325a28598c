--[[
  Changes a workflow's fields, compare-and-set on its version, and refuses to
  leave a finished workflow state (COMPLETED, FAILED, COMPENSATED, CANCELED).
  KEYS[1] workflow hash
  KEYS[2] the workflow's delegation list (same hash tag, same slot)
  KEYS[3] the unfinished index when ARGV[7..] name entries (one server only: another Cluster slot); else KEYS[1]
  KEYS[4] the updated index (search-index.ts), the workflow scored ARGV[3] there (one server only: another Cluster
          slot, where the caller moves it after this script); else KEYS[1]
  ARGV[1] expected version ('' = any)
  ARGV[2] fields JSON object of strings
  ARGV[3] now (ms)
  ARGV[4] retention ms for a workflow entering a finished state ('0' = keep)
  ARGV[5] '1': compact a workflow entering a finished state (lua/includes/compaction.lua), or '' (keep the hashes)
  ARGV[6] '1': a workflow compacted here publishes its compacted record; '' the state only (a Cluster,
          where PUBLISH reaches every node over the cluster bus)
  ARGV[7] the change's history entry (a cancel, a resolution: history.ts `historyEntryText`; '' none), appended
          when the change is written, before a finishing change compacts the workflow
  ARGV[8] n: how many index members follow ('0' none)
  ARGV[9..8+n] index members (indexMember) removed from KEYS[3] in the same step when the change sets a finished
          state: the settle of the workflow's last delegation drops its entry and the workflow's '*' with the
          decision, one round trip instead of a ZREM after it (Journal.finishWorkflow `removeFromIndex`)
  ARGV[9+n..] the compacted record's text as the caller built it from the rows it read (compacted-record-text.ts),
          with ARGV[5] and ARGV[1] given and ARGV[7] '': the workflow object's text as this change leaves the row,
          the row's historyDropped it was built from ('' absent: history.lua writes it without a version bump),
          then per delegation in list order 7 values: id, version, fence, pushConfigState, pushConfigId, pushToken
          ('' for an absent field) and its record text without artifacts. Kept when the workflow row and every
          delegation row still hold those values (compaction.lua `checkPrebuilt`), else the record is built here as
          without it.
  A workflow entering a finished state is compacted, or its keys expire: lua/includes/compaction.lua.
  Publishes the new state on '<prefix>:{wf:<id>}:changed' when `state` is among the
  fields (wakes the producer's waitFor; nothing is lost without subscribers: it reads back); with ARGV[6] a
  workflow compacted here publishes its compacted record instead (a JSON object, where a state is a bare name): a waiter
  builds its view from the message and reads nothing more.
  Returns: new version (>= 1), or {version, removed, kept} with index members or a record text (removed: how many
           of those entries were there, a workflow's '*' not counted; kept: 1 when the caller's text is the record
           written, else 0); DELEGATION_MISSING (no workflow row); VERSION_CONFLICT;
           WRONG_STATE the workflow already finished (codes: script-codes.ts)
]]
--- @include "prelude"
--- @include "workflowKeys"
--- @include "compaction"
--- @include "history"
local base = string.sub(KEYS[1], 1, -4) -- '<prefix>:{wf:<id>}' without ':wf'
local fields = cjson.decode(ARGV[2])
local finishing = fields.state ~= nil and FINISHED_WORKFLOW[fields.state] == true
local compactIt = finishing and (ARGV[5] or '') ~= ''
local members = tonumber(ARGV[8] or '0') or 0
local textAt = 9 + members
local prebuilt = nil
if compactIt and ARGV[7] == '' and ARGV[1] ~= '' and #ARGV > textAt then
  prebuilt = { workflow = ARGV[textAt], historyDropped = ARGV[textAt + 1], ids = {}, records = {}, rows = {} }
  for at = textAt + 2, #ARGV, 7 do
    local index = #prebuilt.ids + 1
    prebuilt.ids[index] = ARGV[at]
    prebuilt.rows[index] = { ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4], ARGV[at + 5] }
    prebuilt.records[index] = ARGV[at + 6]
  end
end
-- A change that compacts (and appends no history entry, which writes the row) reads the row whole once: the check
-- and the compaction use the same read, and the change is written only if the row stays (finishWorkflowKeys). With
-- the caller's record text it reads only what the check needs (the row whole only when the text is stale).
local whole = compactIt and ARGV[7] == '' and not prebuilt and toFields(redis.call('HGETALL', KEYS[1])) or nil
local row = whole and { whole.version, whole.state, whole.workflowId }
  or redis.call('HMGET', KEYS[1], 'version', 'state', 'workflowId', 'historyBytes', 'historyDropped')
if not row[3] then
  if redis.call('EXISTS', base .. ':done') == 1 then return CODE.WRONG_STATE end
  return CODE.DELEGATION_MISSING
end
if ARGV[1] ~= '' and row[1] ~= ARGV[1] then return CODE.VERSION_CONFLICT end
if FINISHED_WORKFLOW[row[2]] then return CODE.WRONG_STATE end
local version = (tonumber(row[1]) or 0) + 1
local flat = { 'updatedAt', ARGV[3] }
for k, v in pairs(fields) do flat[#flat + 1] = k; flat[#flat + 1] = v end
flat[#flat + 1] = 'version'; flat[#flat + 1] = tostring(version)
local unwritten
if whole then
  for i = 1, #flat, 2 do whole[flat[i]] = flat[i + 1] end
  unwritten = { row = whole, flat = flat }
elseif prebuilt then
  unwritten = { flat = flat, historyBytes = row[4] or '' }
  -- History entries dropped past the bounds are counted without a version bump (lua/includes/history.lua).
  if (row[5] or '') ~= prebuilt.historyDropped then prebuilt.stale = true end
else
  redis.call('HSET', KEYS[1], unpack(flat))
end
if KEYS[4] ~= KEYS[1] then redis.call('ZADD', KEYS[4], 'GT', ARGV[3], row[3]) end
appendHistory(base, ARGV[7])

local published = fields.state
local kept = false
if finishing then
  local done
  done, kept = finishWorkflowKeys(KEYS[1], KEYS[2], base, row[3], tonumber(ARGV[4]) or 0, compactIt, unwritten, prebuilt)
  if done and ARGV[6] == '1' then published = done end
end
if published then publishChange(base, published) end
if members > 0 or prebuilt then
  -- Only delegations' entries count: the settle that took one observes that delegation's duration, once. A
  -- workflow's '*' (still there when a late second settle of a step settled before finishes the workflow) does not.
  local removed = 0
  if finishing then
    for i = 9, 8 + members do
      local taken = redis.call('ZREM', KEYS[3], ARGV[i])
      if string.sub(ARGV[i], -2) ~= '|*' then removed = removed + taken end
    end
  end
  return { version, removed, kept and 1 or 0 }
end
return version
