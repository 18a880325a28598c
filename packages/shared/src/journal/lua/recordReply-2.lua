--[[
  Journals a reply to the question a delegation is parked on, before it is sent, and indexes its messageId in the
  workflow's answer index (KEYS[2], includes/answerIndex.lua): a reply's messageId is its identity for the workflow's
  whole life, whatever the bounded history kept. Checked first: a messageId in the index is that answer (the same
  content: {0}, other content: REPLY_CONFLICT), whatever question the row is parked on now; it answers no later question.
  Answering a question that has a reply already returns that reply, compared with this one: the same content {0} (and
  ARGV[1] is indexed as that same answer), other content {2}. Every answer journaled by this release is in the index
  (answer links' and expiries' default answers too); a reply of a row from an earlier release has no entry: {3} with its
  message, which the caller compares and calls again with ARGV[7] naming it and its digest, so it is indexed then
  (compare-and-set on its message, read back as its SHA1) and ARGV[1] with it when the content is the same.
  A question is identified by `questionKey` (see applyStatus-5.lua).
  KEYS[1] delegation hash
  KEYS[2] the workflow's answer index (keys.ts `answers`): hash messageId -> '<digest> <delegationId> <questionKey>'
  ARGV[1] reply messageId (new)
  ARGV[2] reply message JSON
  ARGV[3] now (ms)
  ARGV[4] the answer's history entry (history.ts `historyEntryText`; '' none), appended when journaled here
  ARGV[5] the reply's content digest (replies.ts `answerDigest`: hex, no space)
  ARGV[6] the most answers the index holds (`ANSWERS_PER_WORKFLOW_MAX`): past it nothing new is indexed, refused
  ARGV[7] '' or, after a {3}: '<messageId> <SHA1 of its message JSON as returned> <its digest>', the row's reply to index
  Returns: {1, messageId} journaled and indexed;
           {0, messageId} this content is the answer `messageId` already (ARGV[1] itself, or the question's reply:
             then ARGV[1] is indexed as that same answer, so a retry of it stays that answer);
           {2, messageId} the question's (or the row's latest) reply `messageId` is other content;
           {3, messageId, message JSON} the row's reply `messageId` has no index entry (an earlier release's): call again
             with ARGV[7];
           {REPLY_CONFLICT} ARGV[1] is indexed with other content; {ANSWER_LIMIT} the index is full;
           {DELEGATION_MISSING}; {WRONG_STATE} not parked on a question (and no reply), the question expired
           (expireQuestion-2.lua), or a step's question whose workflow is stopping (canceled, or another step failed
           for good: stepStopped)
]]
--- @include "prelude"
--- @include "workflowKeys"
--- @include "history"
--- @include "stepStopped"
--- @include "answerIndex"
if redis.call('EXISTS', KEYS[1]) == 0 then return {CODE.DELEGATION_MISSING} end
local indexed = redis.call('HGET', KEYS[2], ARGV[1])
if indexed then
  if digestOf(indexed) == ARGV[5] then return {0, ARGV[1]} end
  return {CODE.REPLY_CONFLICT}
end
local row = redis.call('HMGET', KEYS[1], 'state', 'questionKey', 'replyForQuestion', 'replyMessageId', 'delegationId', 'questionExpired')
local question = row[2] or ''
-- Indexes ARGV[1] as an answer with `entry` (its digest, delegation, question), refused when the index is full.
local function index(entry) return indexAnswer(KEYS[2], KEYS[1], ARGV[1], entry, ARGV[6]) end
-- The row's reply `id` as ARGV[7] names it (an earlier release's reply, compared by the caller), its index entry once
-- written; nil when ARGV[7] names another reply or its message changed since, or the index is full.
local function adopted(id)
  local named, sha, digest = string.match(ARGV[7] or '', '^(%S+) (%S+) (%S+)$')
  if named ~= id then return nil end
  local fields = redis.call('HMGET', KEYS[1], 'replyMessage', 'replyForQuestion', 'delegationId')
  if redis.sha1hex(fields[1] or '') ~= sha then return nil end
  local entry = digest .. ' ' .. (fields[3] or '') .. ' ' .. (fields[2] or '')
  if not indexAnswer(KEYS[2], KEYS[1], id, entry, ARGV[6]) then return nil end
  return entry
end
-- The row's reply `id` compared with ARGV[1]'s content; the same content makes ARGV[1] that answer too.
local function stored(id)
  local entry = redis.call('HGET', KEYS[2], id) or adopted(id)
  if not entry then return {3, id, redis.call('HGET', KEYS[1], 'replyMessage') or ''} end
  if digestOf(entry) ~= ARGV[5] then
    if id == ARGV[1] then return {CODE.REPLY_CONFLICT} end
    return {2, id}
  end
  if id ~= ARGV[1] and not index(entry) then return {CODE.ANSWER_LIMIT} end
  return {0, id}
end
if row[4] and row[4] == ARGV[1] then return stored(row[4]) end
if not PARKED[row[1]] then
  if row[4] and row[4] ~= '' then return stored(row[4]) end
  return {CODE.WRONG_STATE}
end
if row[4] and row[4] ~= '' and row[3] == question then return stored(row[4]) end
-- An expired question takes no answer (the expiry and an answer race: the first script wins).
if row[6] and row[6] ~= '' and row[6] == question then return {CODE.WRONG_STATE} end
if stepStopped(KEYS[1]) then return {CODE.WRONG_STATE} end
if not index(ARGV[5] .. ' ' .. (row[5] or '') .. ' ' .. question) then return {CODE.ANSWER_LIMIT} end
redis.call('HSET', KEYS[1], 'replyMessageId', ARGV[1], 'replyMessage', ARGV[2],
  'replyForQuestion', question, 'replyState', 'pending', 'replyBy', '', 'updatedAt', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'version', '1')
appendHistory(workflowBaseOf(KEYS[1]), ARGV[4])
return {1, ARGV[1]}
