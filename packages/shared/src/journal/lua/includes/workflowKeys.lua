-- A delegation key's workflow prefix, '<prefix>:{wf:<id>}' (keys.ts): its workflow row is that + ':wf', its change
-- channel that + ':changed'; the same hash tag, so the same Cluster slot as the delegation.
local function workflowBaseOf(delegationKey) return string.match(delegationKey, '^(.*}):d:') end
-- Publishes `message` on the workflow's change channel (wakes the producer's waitFor; nothing is lost without
-- subscribers: a waiter reads back).
local function publishChange(workflowBase, message) redis.call('PUBLISH', workflowBase .. ':changed', message) end
