--[[
  Expires the question a delegation is parked on, unanswered past its step's
  `question.expiresAfterMs`, and journals what is done with it. Compare-and-set
  against the answer: recordReply-2.lua refuses an expired question, and this
  script refuses an answered one, so of an answer and the expiry racing exactly
  one takes effect. `answer` journals the default answer as the reply (by
  `expiry`, 'pending': the reply path sends it) and indexes it in the workflow's
  answer index with its digest (includes/answerIndex.lua), as every answer is; a
  full index takes no new answer, so the default answer is journaled refused
  there ('refused', `replyError` ARGV[8], never sent) and a person decides, as for
  a default answer the agent refused. `fail` and `cancel` only mark the question
  (the executor then writes the outcome or cancels the workflow).
  A reply the agent refused reopens the question, so it may expire.
  KEYS[1] delegation hash
  KEYS[2] the workflow's answer index (keys.ts `answers`)
  ARGV[1] questionKey of the question that expired (the row's must match)
  ARGV[2] what is done: 'cancel' | 'fail' | 'answer'
  ARGV[3] now (ms)
  ARGV[4] with 'answer': the reply messageId (new)
  ARGV[5] with 'answer': the reply message JSON
  ARGV[6] with 'answer': the reply's content digest (replies.ts `answerDigest`)
  ARGV[7] with 'answer': the most answers the index holds (`ANSWERS_PER_WORKFLOW_MAX`)
  ARGV[8] with 'answer': the refusal kept as `replyError` when the index is full
  Returns: {1, version} expired, {4, version} expired, its default answer journaled refused (the index is full),
           {2, version} this question had already expired, {0, version} answered first (or the question moved on),
           {DELEGATION_MISSING}, {WRONG_STATE} not parked on a question
]]
--- @include "prelude"
--- @include "workflowKeys"
--- @include "answerIndex"
if redis.call('EXISTS', KEYS[1]) == 0 then return {CODE.DELEGATION_MISSING} end
local row = redis.call('HMGET', KEYS[1], 'state', 'questionKey', 'replyForQuestion', 'replyMessageId', 'replyState', 'questionExpired', 'version', 'delegationId')
if not PARKED[row[1]] then return {CODE.WRONG_STATE} end
local question = row[2] or ''
local version = tonumber(row[7]) or 0
if question == '' or question ~= ARGV[1] then return {0, version} end
if row[6] == question then return {2, version} end
if row[4] and row[4] ~= '' and row[3] == question and row[5] ~= 'refused' then return {0, version} end
local set = { 'questionExpired', question, 'questionExpiredAt', ARGV[3], 'questionExpiry', ARGV[2], 'updatedAt', ARGV[3] }
local code = 1
if ARGV[2] == 'answer' then
  -- Refused as markReply-1.lua refuses: the question it was for cleared, so no caller's reply is compared with it.
  local replyState, replyError, answers = 'pending', '', question
  if not indexAnswer(KEYS[2], KEYS[1], ARGV[4], ARGV[6] .. ' ' .. (row[8] or '') .. ' ' .. question, ARGV[7]) then
    replyState, replyError, answers, code = 'refused', ARGV[8], '', 4
  end
  for _, value in ipairs({ 'replyMessageId', ARGV[4], 'replyMessage', ARGV[5], 'replyForQuestion', answers,
      'replyState', replyState, 'replyBy', 'expiry', 'replyError', replyError }) do set[#set + 1] = value end
end
redis.call('HSET', KEYS[1], unpack(set))
version = redis.call('HINCRBY', KEYS[1], 'version', '1')
return {code, version}
