--[[
  Journals a reply to the question a delegation is parked on, before it is
  sent. Answering the same question twice returns the first reply (harmless). A reply whose messageId is the
  row's reply already (a caller's retry, `ReplyOptions.messageId`) is that reply, whatever question the row is
  parked on now: it answers no later question.
  A question is identified by `questionKey` (see applyStatus-5.lua).
  KEYS[1] delegation hash
  ARGV[1] reply messageId (new)
  ARGV[2] reply message JSON
  ARGV[3] now (ms)
  ARGV[4] the answer's history entry (history.ts `historyEntryText`; '' none), appended when journaled here
  Returns: {1, messageId} journaled, {0, existingMessageId} already answered (also by
           the question's expiry with its default answer), {DELEGATION_MISSING},
           {WRONG_STATE} not parked on a question, the question expired (expireQuestion-1.lua), or a step's
           question whose workflow is stopping (canceled, or another step failed for good: stepStopped)
]]
--- @include "prelude"
--- @include "workflowKeys"
--- @include "history"
--- @include "stepStopped"
if redis.call('EXISTS', KEYS[1]) == 0 then return {CODE.DELEGATION_MISSING} end
local row = redis.call('HMGET', KEYS[1], 'state', 'questionKey', 'replyForQuestion', 'replyMessageId', 'version', 'questionExpired')
if row[4] and row[4] == ARGV[1] then return {0, row[4]} end
if not PARKED[row[1]] then
  if row[4] and row[4] ~= '' then return {0, row[4]} end
  return {CODE.WRONG_STATE}
end
local question = row[2] or ''
if row[4] and row[4] ~= '' and row[3] == question then return {0, row[4]} end
-- An expired question takes no answer (the expiry and an answer race: the first script wins).
if row[6] and row[6] ~= '' and row[6] == question then return {CODE.WRONG_STATE} end
if stepStopped(KEYS[1]) then return {CODE.WRONG_STATE} end
redis.call('HSET', KEYS[1], 'replyMessageId', ARGV[1], 'replyMessage', ARGV[2],
  'replyForQuestion', question, 'replyState', 'pending', 'replyBy', '', 'updatedAt', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'version', 1)
appendHistory(workflowBaseOf(KEYS[1]), ARGV[4])
return {1, ARGV[1]}
