-- Binds a new task id to this delegation in the same step as the change that records it (Journal.bindTask's rule:
-- a task id belongs to at most one delegation): `binding` is 'here:<ttl ms>:<owner>' (ttl 0 = kept), written to
-- `ownerKey` with SET NX GET. Returns nil when the task id is bound to `owner` now; {TASK_NOT_BOUND, agentCardUrl}
-- when the caller asked for no binding here (it binds first, then calls again; `cardUrlOf()` reads the row's Agent
-- Card URL only then, not on the binding path); {TASK_BOUND_ELSEWHERE, holder}
-- when another delegation holds it (nothing written).
local function bindTaskHere(ownerKey, binding, cardUrlOf)
  local ttl, owner = string.match(binding, '^here:(%d+):(.+)$')
  if not ttl then return {CODE.TASK_NOT_BOUND, cardUrlOf() or ''} end
  local holder
  if tonumber(ttl) > 0 then holder = redis.call('SET', ownerKey, owner, 'NX', 'GET', 'PX', ttl)
  else holder = redis.call('SET', ownerKey, owner, 'NX', 'GET') end
  if holder and holder ~= owner then return {CODE.TASK_BOUND_ELSEWHERE, holder} end
  return nil
end
