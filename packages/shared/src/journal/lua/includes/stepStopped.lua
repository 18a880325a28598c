--- @include "workflowKeys"
-- True when `delegationKey` is a step's attempt whose workflow is stopping: a person canceled it (cancelRequested)
-- or another step failed for good (stopping). Such a step's question is closed: an answer would have the agent do
-- work the workflow is canceling (the CancelTask is on its way). A compensation's question stays open: compensations
-- run after a cancel and are never canceled. The TypeScript twin is `isWorkflowStopping` (workflow-record.ts): keep the
-- two equal (test/journal/reply-take-stop.test.ts holds them equal over stored flags).
local function stepStopped(delegationKey)
  if redis.call('HGET', delegationKey, 'kind') == 'compensation' then return false end
  local flags = redis.call('HMGET', workflowBaseOf(delegationKey) .. ':wf', 'cancelRequested', 'stopping')
  return flags[1] == '1' or (flags[2] ~= false and flags[2] ~= '' and flags[2] ~= '[]')
end
