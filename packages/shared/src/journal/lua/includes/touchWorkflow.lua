--- @include "workflowKeys"
-- A change of a delegation's state is a visible change of its workflow: the workflow row's updatedAt moves with it
-- (list order). A delegation row exists only with its workflow row (created together, expiring together): a
-- finished state writes it without a look and returns {workflow row (flat), delegation ids} (what the settle
-- decides from) as second value; an unfinished one reads the flags the router needs first and returns
-- {state, cancelRequested, stopping} as first value ({} when the workflow row is gone).
local function touchWorkflow(delegationKey, finishing, now)
  local workflowKey = workflowBaseOf(delegationKey) .. ':wf'
  if finishing then
    redis.call('HSET', workflowKey, 'updatedAt', now)
    return {}, { redis.call('HGETALL', workflowKey), redis.call('LRANGE', workflowKey .. ':delegations', '0', '-1') }
  end
  local flags = redis.call('HMGET', workflowKey, 'state', 'cancelRequested', 'stopping')
  if not flags[1] then return {}, {} end
  redis.call('HSET', workflowKey, 'updatedAt', now)
  return { flags[1], flags[2] or '', flags[3] or '' }, {}
end
