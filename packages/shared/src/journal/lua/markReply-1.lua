--[[
  Moves the journaled reply forward: 'pending' → 'sending' (about to leave: from
  here on a retry asks the agent before sending again) → 'sent' (delivered).
  'sending' is a compare-and-set lease (C1: replies at most once): one worker
  owns it with a token until a deadline; nobody else may send the reply before
  that deadline, and after it a worker takes the lease over only to ask the
  agent (GetTask) before any resend. Never two racing sends.
  KEYS[1] delegation hash
  ARGV[1] fencing token
  ARGV[2] reply messageId
  ARGV[3] now (ms)
  ARGV[4] new reply state: 'sending' | 'sent' (delivered: a status message that is the question is cleared) |
          'refused' (the agent refused it for good: the question opens again for another answer)
  ARGV[5] why it was refused (with 'refused')
  ARGV[6] send token ('' = none): with 'sending' the new owner's token; with 'sent' / 'refused'
          the owner's token, which is accepted in place of the fencing token
  ARGV[7] with 'sending': the lease deadline (ms)
  ARGV[8] with 'refused': the refusal's history entry (history.ts `historyEntryText`; '' none), appended when marked
  Returns: 1 marked, 2 'sending' taken over from an expired lease (ask the agent first),
           3 not taken: the reply of a step whose workflow is stopping never leaves (stepStopped: a cancel
           or a step failed for good between the worker's read and this take; a compensation's reply goes),
           0 not in the state before (already moved on, replaced, or another worker's
           'sending' lease is live), DELEGATION_MISSING, FENCE_LOST
]]
--- @include "prelude"
--- @include "workflowKeys"
--- @include "history"
--- @include "stepStopped"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
local row = redis.call('HMGET', KEYS[1], 'fence', 'replyMessageId', 'replyState', 'replySendToken', 'replySendUntil', 'statusMessage', 'question')
local token = ARGV[6] or ''
local ownsSend = token ~= '' and row[4] == token
if row[1] ~= ARGV[1] and not ownsSend then return CODE.FENCE_LOST end
if row[2] ~= ARGV[2] then return 0 end
local now = tonumber(ARGV[3])
if ARGV[4] == 'sending' then
  -- Only a lease taker (with a token) takes an expired 'sending' over; a row without a deadline counts as expired.
  local expired = token ~= '' and row[3] == 'sending' and (tonumber(row[5] or '') or 0) < now
  if row[3] ~= 'pending' and not expired then return 0 end
  -- Atomic with the take (review13): a cancel that lands after the worker read the workflow still holds the reply back.
  if stepStopped(KEYS[1]) then return 3 end
  redis.call('HSET', KEYS[1], 'replyState', 'sending', 'replySendToken', token, 'replySendUntil', ARGV[7] or '', 'updatedAt', ARGV[3])
  redis.call('HINCRBY', KEYS[1], 'version', '1')
  if expired then return 2 end
  return 1
else
  if row[3] ~= 'pending' and row[3] ~= 'sending' then return 0 end
  redis.call('HSET', KEYS[1], 'replyState', ARGV[4], 'updatedAt', ARGV[3])
  -- Delivered: the status that asked is over (a status is replaced by the next one; the history keeps the question),
  -- so a row that finishes before the agent sends another status does not show the question as its last word.
  if ARGV[4] == 'sent' and row[6] and row[6] ~= '' and row[6] == row[7] then redis.call('HSET', KEYS[1], 'statusMessage', '') end
  if ARGV[4] == 'refused' then
    redis.call('HSET', KEYS[1], 'replyForQuestion', '', 'replyError', ARGV[5] or '')
    appendHistory(workflowBaseOf(KEYS[1]), ARGV[8])
  end
end
redis.call('HINCRBY', KEYS[1], 'version', '1')
return 1
