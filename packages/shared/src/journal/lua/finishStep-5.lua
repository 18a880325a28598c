--[[
  The terminal status of a one-step workflow's only delegation and the settle that finishes the workflow, in one
  script: what applyStatus-5.lua (the stream's terminal event, the follow lease ended) and then updateWorkflow-4.lua
  (the finishing decision, compacted with the caller's record text, the index entries dropped) would leave, without
  writing either row first (both are deleted by the compaction). Only for the case the caller decided before the call
  (Journal.finishStep): a step kind, no verifier, no push config, one server with no replicas to wait for, and a
  terminal state whose decision is plain ('complete' or 'fail').
  Compare-and-set on everything the caller's text was built from; when anything differs, nothing is written and the
  caller takes the two calls instead (applyStatus, then the settle), which decide from the rows as they are.
  KEYS[1] delegation hash (its workflow row '<base>:wf', delegation list '<base>:wf:delegations', history and
          change channel are derived from it: same hash tag, same slot)
  KEYS[2] artifacts hash (read into the record unless a snapshot's artifacts replace it, then deleted)
  KEYS[3] the delegation's lease (the follow lease the stream holds; lease-1.lua)
  KEYS[4] the unfinished index
  KEYS[5] the updated index (search-index.ts), the workflow scored ARGV[3] there
  ARGV[1] the stream's fencing token ('' = unfenced)
  ARGV[2] lease holder token ('' = none): released when it holds KEYS[3], as applyStatus 'finished' releases it
  ARGV[3] now (ms): the status change's and the workflow change's time (the text holds it)
  ARGV[4] retention ms of the finished workflow ('0' = kept)
  ARGV[5] '1': publish the compacted record on '<base>:changed' (as updateWorkflow-4.lua ARGV[6]), '' the state only
  ARGV[6] the workflow's state as the change sets it (published when ARGV[5] is '')
  ARGV[7] the workflow row's version the text was built from (the change writes it + 1)
  ARGV[8] the delegation's index member, ARGV[9] the workflow's '*' member (indexMember)
  ARGV[10] '' = the stored artifacts (read into the record here); 'given' = a snapshot's artifacts replace them, or
          'add' = one artifact update added to a row that holds no artifact, as applyArtifact-2.lua would add it (the
          row's version moves by two, so it is the text's version - 2): in both the caller's delegation text
          (ARGV[19]) already holds them as `withArtifacts` (includes/compaction.lua) would add them
          (compacted-record-text.ts `withArtifactsText`), and they are never written (the artifacts hash is deleted
          with the compaction). Reading them into the record here from their arguments took about a fifth of this
          script's instructions (pattern matches, a sort and string building in Lua).
  ARGV[11..] the record text as updateWorkflow-4.lua takes it (ARGV[9+n..]) for one delegation: the workflow
          object's text, the row's historyDropped ('' absent), then the delegation's id, the version its text holds
          (the row's version before the status change + 1), fence, pushConfigState, pushConfigId, pushToken ('' absent)
          and its record text (with the artifacts when ARGV[10] is 'given' or 'add')
  Checked before any write: the delegation row is at the text's version - 1 (- 2 with 'add', and holds no artifact
  then), unfinished, and holds the fence, push
  config state, push config id and push token the text was built from (and ARGV[1]'s fence when given); the
  workflow row is at ARGV[7], unfinished, with the same historyDropped; its delegation list is exactly this
  delegation; the record (with the snapshot's artifacts, or the stored ones) fits in the layout's maxBytes.
  Returns: {1, removed} done (removed: 1 when the delegation's own index entry was there: the caller observes its
           duration, once); {0, reason} nothing written ('changed': a row moved since the text was built, or is not
           what it claims; 'large': the record would pass maxBytes): the caller takes the two calls
]]
--- @include "prelude"
--- @include "workflowKeys"
--- @include "compaction"
--- @include "suspects"
local adds = ARGV[10] == 'add'
local at = 11
local textVersion, fence = ARGV[at + 3], ARGV[at + 4]
local row = redis.call('HMGET', KEYS[1], 'version', 'state', 'fence', 'pushConfigState', 'pushConfigId', 'pushToken', 'delegationId', 'artifactBytes', 'suspects', 'replyMessageId')
if row[7] ~= ARGV[at + 2] or tostring((tonumber(row[1]) or 0) + (adds and 2 or 1)) ~= textVersion or FINISHED[row[2]] then return {0, 'changed'} end
if adds and row[8] then return {0, 'changed'} end
-- Suspects pending (noteSuspect-1.lua, no version bump): read before the workflow decides (the compaction would drop
-- them), so the change goes alone and the settle waits for the reconciler's reads (settle.ts).
if suspectsPending(row[9]) then return {0, 'changed'} end
if (row[3] or '') ~= fence or (ARGV[1] ~= '' and row[3] ~= ARGV[1]) then return {0, 'changed'} end
for i = 4, 6 do
  if (row[i] or '') ~= ARGV[at + i + 1] then return {0, 'changed'} end
end
local base = workflowBaseOf(KEYS[1])
local workflowKey, listKey = base .. ':wf', base .. ':wf:delegations'
local workflow = redis.call('HMGET', workflowKey, 'version', 'state', 'historyDropped', 'historyBytes', 'workflowId')
if not workflow[5] or workflow[1] ~= ARGV[7] or FINISHED_WORKFLOW[workflow[2]] or (workflow[3] or '') ~= ARGV[at + 1] then return {0, 'changed'} end
local ids = redis.call('LRANGE', listKey, '0', '-1')
if #ids ~= 1 or ids[1] ~= row[7] then return {0, 'changed'} end
local schema = {} --[[COMPACTED_RECORD_ASSEMBLY]]
-- The caller's text holds the Task's artifacts ('given', 'add'): `assemble` adds none (an empty set), reads none.
local given = ARGV[10] ~= '' and { {} } or nil
local done = assemble(schema, ARGV[at], { ARGV[at + 8] }, ids, base, workflow[4] or '', given)
if not done then return {0, 'large'} end

-- Nothing written above: from here the same writes as the two scripts, in their order, minus the rows' HSETs and the
-- snapshot's artifacts (deleted with the compaction).
-- The follow lease, when ARGV[2] holds it, goes in the compaction's DEL (one command fewer than a DEL of its own).
local leaseHeld = ARGV[2] ~= '' and redis.call('GET', KEYS[3]) == ARGV[2]
local pushed = (row[6] or '') ~= '' and { ids[1], row[6] } or {}
storeCompacted(workflowKey, listKey, base, done, ids, pushed, tonumber(ARGV[4]) or 0, (row[10] or '') ~= '', leaseHeld and KEYS[3] or nil)
redis.call('ZADD', KEYS[5], 'GT', ARGV[3], workflow[5])
publishChange(base, ARGV[5] == '1' and done or ARGV[6])
local removed = redis.call('ZREM', KEYS[4], ARGV[8])
redis.call('ZREM', KEYS[4], ARGV[9])
return {1, removed}
