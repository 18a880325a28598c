--[[
  Creates a workflow and the intent of its first delegation, with its entries in the unfinished index, the search
  index and (with a quota) its tenant's quota sets, or does nothing if the workflow exists (idempotent on workflowId).
  KEYS[1] workflow hash
  KEYS[2] first delegation hash (ignored when ARGV[2] is '')
  KEYS[3] the workflow's delegation list
  KEYS[4] the unfinished index when ARGV[3] is given (one server only: another Cluster slot); else KEYS[1] again, unused
  KEYS[5] the search index (lexicographic) when ARGV[4] is given (one server only); else KEYS[1] again, unused
  KEYS[6] the updated index when ARGV[4] is given (one server only); else KEYS[1] again, unused
  KEYS[7] the tenant's in-flight set when ARGV[5] is given (one server only); else KEYS[1] again, unused
  KEYS[8] the tenant's stored set when ARGV[5] is given (one server only); else KEYS[1] again, unused
  KEYS[9] the tenant's created index when ARGV[6] is given (a tenant other than default, one server only); else
          KEYS[1] again, unused
  KEYS[10] the send order's clock hash when ARGV[10] > 0 (one server only: another Cluster slot); else KEYS[1]
          again, unused
  KEYS[11] the send order's tenant weights when ARGV[10] > 0 (one server only); else KEYS[1] again, unused
  ARGV[1] W: the workflow's field count (its field/value pairs from ARGV[13]; its updatedAt scores it in KEYS[6]),
          or, below 0, the row in its fixed layout (create-layout.ts WORKFLOW_ROW_LAYOUT: the layout's values, its
          names constants of this script, generated include `createLayout`) followed by -1 - W field/value pairs
  ARGV[2] D: the first delegation's field count (its pairs after the workflow's), 0 = no delegation; below 0, its
          fixed layout (INTENT_ROW_LAYOUT) and -1 - D pairs, as W
  ARGV[3] U: unfinished index entries (score/member pairs after the delegation's), 0 = none (on a Cluster the
          caller wrote them before this script, acknowledged)
  ARGV[4] S: search index members (search-index.ts `searchMembers`, as 0/member pairs after the entries), 0 = none
          (on a Cluster the caller wrote them before this script, acknowledged)
  ARGV[5] the tenant's quota, JSON { maxInFlight, maxStored, checked, at, workflowKey: [head, tail] }
          (`at`: the creation time, ms, the members' score), or '' (no quota: the sets are not touched)
  ARGV[6] the workflow's creation time (ms), its score in its tenant's created index, or '' (not indexed there; on a
          Cluster the caller wrote it before this script, acknowledged) (tenant-quota.ts)
  ARGV[7] the workflow id; ARGV[8] its updatedAt (ms); ARGV[9] the first delegation's id ('' = none)
  ARGV[10] P: message sends to place among the tenant's (includes/sendPlaces.lua, as sendOrder-2.lua would, one
          call per send), 0 = none (on a Cluster the caller asks sendOrder-2.lua); ARGV[11] the Redis time one
          place of the send order's clock lasts (ms); ARGV[12] the tenant
  ARGV[13..] the two rows' arguments (W, D), then the pairs above, in that order: flat, so the script decodes no JSON
          (but a quota) and hands each range to its command as it stands
  Every entry is written with the workflow, in this one step: a crash cannot leave a workflow that an index does
  not name, nor (on one server) an entry without its workflow. A quota is checked here too, so no two creations
  can both take the last place.
  Quota sets (sorted sets of workflow ids scored by creation time, ms, or by the time of the last full check that
  found them still there): a member leaves the in-flight set once its workflow is finished, and the stored set once
  its records are gone (retention). Nothing else removes members: when a set is full, its `checked` first members are
  looked at here, the ones that left are removed and the others go to the back (the oldest are the likeliest to have
  left; a long-running one must not hide the places freed behind it), so a full tenant pays for the check, never
  anyone else.
  The sends' places are taken only once the workflow is created: a creation that finds the workflow, or is refused
  at a quota, counts no send of its tenant.
  Returns: 1 created (with P > 0: {1, place, ...}, P places in send order), 0 already existed (also when finished and compacted to '<prefix>:{wf:<id>}:done'; nothing
           is written, the indexes included), QUOTA_IN_FLIGHT or QUOTA_STORED (the tenant is at that quota; nothing
           is written but the quota sets' checked members: removed, or moved to the back)
]]
--- @include "prelude"
--- @include "sendPlaces"
--- @include "createLayout"
-- 72 bytes, no '|': never an unfinished-index member (indexMember joins the workflow and delegation ids with '|').
local SKIPLIST_FORM = '~skiplist-form~skiplist-form~skiplist-form~skiplist-form~skiplist-form~~'
-- The live row or its compacted record (one EXISTS of both keys: same hash tag, same slot).
if redis.call('EXISTS', KEYS[1], string.sub(KEYS[1], 1, -4) .. ':done') > 0 then return 0 end
local workflowId = ARGV[7]
-- A row's arguments: pairs (count >= 0), or its layout's values and -1 - count pairs.
local workflowCount, delegationCount = tonumber(ARGV[1]), tonumber(ARGV[2])
local function width(count, values) if count < 0 then return values - 2 - 2 * count end return 2 * count end
local workflowAt = 13
local delegationAt = workflowAt + width(workflowCount, WORKFLOW_ROW_VALUES)
local unfinishedAt = delegationAt + width(delegationCount, INTENT_ROW_VALUES)
local searchAt = unfinishedAt + 2 * tonumber(ARGV[3])
local searchEnd = searchAt + 2 * tonumber(ARGV[4])
if ARGV[5] ~= '' then
  local quota = cjson.decode(ARGV[5])
  local head, tail = quota.workflowKey[1], quota.workflowKey[2]
  -- A quota member's records: its live row (and state) and whether its compacted record is there.
  local function recordsOf(id)
    local key = head .. id .. tail
    return redis.call('HGET', key, 'state'), redis.call('EXISTS', string.sub(key, 1, -4) .. ':done') == 1
  end
  local function finished(id)
    local state = recordsOf(id)
    return not state or FINISHED_WORKFLOW[state] == true
  end
  local function gone(id)
    local state, compacted = recordsOf(id)
    return not state and not compacted
  end
  -- True when the set has room, after removing those of its oldest members that left. A member that has not left
  -- goes to the back (scored `at`): the next full check looks at the members after it, so a place freed behind
  -- `checked` long-running workflows is found within ZCARD / `checked` checks, not only once those finish.
  local function hasRoom(key, limit, left)
    if redis.call('ZCARD', key) < limit then return true end
    for _, id in ipairs(redis.call('ZRANGE', key, '0', quota.checked - 1)) do
      if left(id) then redis.call('ZREM', key, id) else redis.call('ZADD', key, quota.at, id) end
    end
    return redis.call('ZCARD', key) < limit
  end
  if not hasRoom(KEYS[7], quota.maxInFlight, finished) then return CODE.QUOTA_IN_FLIGHT end
  if not hasRoom(KEYS[8], quota.maxStored, gone) then return CODE.QUOTA_STORED end
  redis.call('ZADD', KEYS[7], quota.at, workflowId)
  redis.call('ZADD', KEYS[8], quota.at, workflowId)
end
-- The places before the rows too (a refused write leaves counts, never a workflow whose sends took no place).
local reply
if tonumber(ARGV[10]) > 0 then
  reply = sendPlaces(KEYS[10], KEYS[11], ARGV[12], tonumber(ARGV[11]), tonumber(ARGV[10]))
  table.insert(reply, 1, 1)
end
-- The indexes first: an index write refused (out of memory) ends the script before the workflow exists.
-- The unfinished index in its skiplist form: a member longer than zset-max-listpack-value (64 bytes by default) added
-- with the entries turns a listpack into a skiplist, and is removed again in this same script, so no reader ever
-- sees it (it holds no '|', so it is no index member: indexMember). Redis keeps a skiplist as it is until the set is
-- empty and deleted. A listpack of about 100 entries (50 workflows in flight, two entries each) costs every ZADD and
-- ZREM of the index a scan of it: about 60,000 instructions a delegation more at 50 in flight, 3,000 fewer at 1
-- (docs/performance.md, branch redis36).
if unfinishedAt < searchAt then
  redis.call('ZADD', KEYS[4], '0', SKIPLIST_FORM, unpack(ARGV, unfinishedAt, searchAt - 1))
  redis.call('ZREM', KEYS[4], SKIPLIST_FORM)
end
if searchAt < searchEnd then
  redis.call('ZADD', KEYS[5], unpack(ARGV, searchAt, searchEnd - 1))
  redis.call('ZADD', KEYS[6], ARGV[8], workflowId)
end
if ARGV[6] ~= '' then redis.call('ZADD', KEYS[9], ARGV[6], workflowId) end
if workflowCount < 0 then hsetWorkflowRow(KEYS[1], workflowAt, delegationAt - 1)
else redis.call('HSET', KEYS[1], unpack(ARGV, workflowAt, delegationAt - 1)) end
if delegationAt < unfinishedAt then
  if delegationCount < 0 then hsetIntentRow(KEYS[2], delegationAt, unfinishedAt - 1)
  else redis.call('HSET', KEYS[2], unpack(ARGV, delegationAt, unfinishedAt - 1)) end
  redis.call('RPUSH', KEYS[3], ARGV[9])
end
if reply then return reply end
return 1
