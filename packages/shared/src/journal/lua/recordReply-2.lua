--[[
  Journals a reply to the question a delegation is parked on, before it is sent, and indexes its messageId in the
  workflow's answer index (KEYS[2]): a reply's messageId is its identity for the workflow's whole life, whatever the
  bounded history kept. Checked first: a messageId in the index is that answer (the same content: {0}, other
  content: REPLY_CONFLICT), whatever question the row is parked on now; it answers no later question.
  Answering a question that has a reply already returns that reply, compared with this one: the same content {0},
  other content {2}; a reply from before the index (a row of an earlier release, an answer link's, an expiry's) has
  no digest: {3} with its message, which the caller compares.
  A question is identified by `questionKey` (see applyStatus-5.lua).
  KEYS[1] delegation hash
  KEYS[2] the workflow's answer index (keys.ts `answers`): hash messageId -> '<digest> <delegationId> <questionKey>'
  ARGV[1] reply messageId (new)
  ARGV[2] reply message JSON
  ARGV[3] now (ms)
  ARGV[4] the answer's history entry (history.ts `historyEntryText`; '' none), appended when journaled here
  ARGV[5] the reply's content digest (replies.ts `answerDigest`: hex, no space)
  ARGV[6] the most answers the index holds (`ANSWERS_PER_WORKFLOW_MAX`): past it nothing new is indexed, refused
  Returns: {1, messageId} journaled and indexed;
           {0, messageId} this content is the answer `messageId` already (ARGV[1] itself, or the question's reply:
             then ARGV[1] is indexed as that same answer, so a retry of it stays that answer);
           {2, messageId} the question's (or the row's latest) reply `messageId` is other content;
           {3, messageId, message JSON} the row's reply `messageId` is from before the index: compare its message;
           {REPLY_CONFLICT} ARGV[1] is indexed with other content; {ANSWER_LIMIT} the index is full;
           {DELEGATION_MISSING}; {WRONG_STATE} not parked on a question (and no reply), the question expired
           (expireQuestion-1.lua), or a step's question whose workflow is stopping (canceled, or another step failed
           for good: stepStopped)
]]
--- @include "prelude"
--- @include "workflowKeys"
--- @include "history"
--- @include "stepStopped"
if redis.call('EXISTS', KEYS[1]) == 0 then return {CODE.DELEGATION_MISSING} end
-- An index entry's digest: its text up to the first space.
local function digestOf(entry) return string.match(entry, '^(%S*)') end
local indexed = redis.call('HGET', KEYS[2], ARGV[1])
if indexed then
  if digestOf(indexed) == ARGV[5] then return {0, ARGV[1]} end
  return {CODE.REPLY_CONFLICT}
end
local row = redis.call('HMGET', KEYS[1], 'state', 'questionKey', 'replyForQuestion', 'replyMessageId', 'delegationId', 'questionExpired')
local question = row[2] or ''
-- Indexes ARGV[1] as an answer with `entry` (its digest, delegation, question), refused when the index is full. A
-- new index (its first answer) expires with the workflow row when that row already has an expiry.
local function index(entry)
  local count = redis.call('HLEN', KEYS[2])
  if count >= tonumber(ARGV[6]) then return false end
  redis.call('HSET', KEYS[2], ARGV[1], entry)
  if count == 0 then
    local ttl = redis.call('PTTL', workflowBaseOf(KEYS[1]) .. ':wf')
    if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
  end
  return true
end
-- The row's reply `id` compared with ARGV[1]'s content; the same content makes ARGV[1] that answer too.
local function stored(id)
  local entry = redis.call('HGET', KEYS[2], id)
  if not entry then return {3, id, redis.call('HGET', KEYS[1], 'replyMessage') or ''} end
  if digestOf(entry) ~= ARGV[5] then return {2, id} end
  if not index(entry) then return {CODE.ANSWER_LIMIT} end
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
redis.call('HINCRBY', KEYS[1], 'version', 1)
appendHistory(workflowBaseOf(KEYS[1]), ARGV[4])
return {1, ARGV[1]}
