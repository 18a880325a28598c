--[[
  Journals the answer a person gave through a signed answer link, before it is sent: single use, compare-and-set
  on the question the link names. The link's question must be the one the delegation is parked on, with no reply
  yet; the reply is then journaled as recordReply-2.lua does, with `replyBy` = `link <id>` (who answered), and indexed
  in the workflow's answer index with its digest (includes/answerIndex.lua), as every answer is: a caller's reply of the
  same content racing it is then indexed as this same answer, and its retry answers no later question.
  Once this question has a reply (from this link or any other way) every later use is refused, so a link
  answers at most once; once the delegation left the question (answered and resumed, canceled, finished, asked
  another question, expired, or its workflow is stopping: stepStopped) the link is refused as closed.
  KEYS[1] delegation hash
  KEYS[2] the workflow's answer index (keys.ts `answers`)
  ARGV[1] the link's question key
  ARGV[2] the link's id
  ARGV[3] reply messageId (new)
  ARGV[4] reply message JSON
  ARGV[5] now (ms)
  ARGV[6] the answer's history entry (history.ts `historyEntryText`; '' none), appended when journaled here
  ARGV[7] the reply's content digest (replies.ts `answerDigest`)
  ARGV[8] the most answers the index holds (`ANSWERS_PER_WORKFLOW_MAX`)
  Returns: {1, messageId} journaled and indexed, {0, existingMessageId} this question was already answered (the link
           is used), {DELEGATION_MISSING}, {WRONG_STATE} not parked on this question (closed), {ANSWER_LIMIT} the
           index is full (nothing written)
]]
--- @include "prelude"
--- @include "workflowKeys"
--- @include "history"
--- @include "stepStopped"
--- @include "answerIndex"
if redis.call('EXISTS', KEYS[1]) == 0 then return {CODE.DELEGATION_MISSING} end
local row = redis.call('HMGET', KEYS[1], 'state', 'questionKey', 'replyForQuestion', 'replyMessageId', 'questionExpired', 'delegationId')
if row[3] == ARGV[1] and row[4] and row[4] ~= '' then return {0, row[4]} end
if not PARKED[row[1]] or (row[2] or '') ~= ARGV[1] then return {CODE.WRONG_STATE} end
-- An expired question takes no answer, by link or otherwise (expireQuestion-2.lua: the first script wins).
if (row[5] or '') == ARGV[1] then return {CODE.WRONG_STATE} end
if stepStopped(KEYS[1]) then return {CODE.WRONG_STATE} end
if not indexAnswer(KEYS[2], KEYS[1], ARGV[3], ARGV[7] .. ' ' .. (row[6] or '') .. ' ' .. ARGV[1], ARGV[8]) then
  return {CODE.ANSWER_LIMIT}
end
redis.call('HSET', KEYS[1], 'replyMessageId', ARGV[3], 'replyMessage', ARGV[4],
  'replyForQuestion', ARGV[1], 'replyState', 'pending', 'replyBy', 'link ' .. ARGV[2], 'updatedAt', ARGV[5])
redis.call('HINCRBY', KEYS[1], 'version', '1')
appendHistory(workflowBaseOf(KEYS[1]), ARGV[6])
return {1, ARGV[3]}
