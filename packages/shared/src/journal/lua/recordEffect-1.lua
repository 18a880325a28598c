--[[
  Records what a verifier found about a delegation's side effect, once.
  For a step: is the effect there? For a compensation: is the original effect
  still there (absent = the undo worked)?
  KEYS[1] delegation hash
  ARGV[1] effect: 'present' | 'absent' | 'unknown'
  ARGV[2] evidence JSON
  ARGV[3] now (ms)
  ARGV[4] the finding's history entry (history.ts `historyEntryText`; '' none), appended when recorded
  Returns: 1 recorded, 0 already recorded, DELEGATION_MISSING
]]
--- @include "prelude"
--- @include "workflowKeys"
--- @include "history"
if redis.call('EXISTS', KEYS[1]) == 0 then return CODE.DELEGATION_MISSING end
local effect = redis.call('HGET', KEYS[1], 'effect')
if effect and effect ~= '' then return 0 end
redis.call('HSET', KEYS[1], 'effect', ARGV[1], 'evidence', ARGV[2], 'verifiedAt', ARGV[3], 'updatedAt', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'version', '1')
appendHistory(workflowBaseOf(KEYS[1]), ARGV[4])
return 1
