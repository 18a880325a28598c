--[[
  Per-agent flow control shared by every worker of the fleet, on Redis's clock: a pause (the agent answered
  Retry-After), a cap on SendMessage calls in flight (one slot per holder, each with a lease, so the slots of a
  worker killed while holding them come back when their leases end) and smooth rates of sends and resubscriptions.
  KEYS[1] sorted set of slot holders (holder token), scored by the end of each holder's lease (ms)
  KEYS[2] hash: pausedUntil, nextSend, nextResubscribe (ms since the epoch)
  ARGV[1] op
  'acquire'     ARGV[2] holder, ARGV[3] lease (ms), ARGV[4] max in flight (0: no cap), ARGV[5] sends per second (0: no rate)
                Returns {0, 0} go (the slot is the holder's when there is a cap; a holder already in the set renews);
                        {1, ms} paused for ms more; {2, ms} every slot held, the earliest lease ends in ms;
                        {3, ms} the rate allows the next send in ms. Nothing is taken on a wait.
  'renew'       ARGV[2] holder, ARGV[3] lease (ms). Returns {1, 0} renewed, {0, 0} not held (its lease ran out)
  'release'     ARGV[2] holder. Returns {1, 0} released, {0, 0} not held
  'pause'       ARGV[2] ms (the caller bounds it). Never shortens a pause. Returns {1, ms the pause still lasts}
  'resubscribe' ARGV[2] resubscriptions per second (0: no rate). Reserves the next turn (after any pause), spaced
                1000/rate ms apart. Returns {0, ms to wait for that turn}
  Why one script: the pause, the holders and the rates are read and changed together, so two workers never both
  take the last slot, and a pause is seen by the next acquire of any worker.
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local op = ARGV[1]

-- The hash outlives what it holds by a minute (a state nobody reads again goes away on its own).
local function keepState(untilMs)
  local wanted = math.ceil(untilMs - now) + 60000
  if redis.call('PTTL', KEYS[2]) < wanted then redis.call('PEXPIRE', KEYS[2], wanted) end
end

local function keepHolders()
  local last = redis.call('ZRANGE', KEYS[1], '-1', '-1', 'WITHSCORES')
  if last[2] then redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(tonumber(last[2]) - now))) end
end

if op == 'acquire' then
  local holder, leaseMs, maxInFlight, perSecond = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  local state = redis.call('HMGET', KEYS[2], 'pausedUntil', 'nextSend')
  local pausedUntil = tonumber(state[1]) or 0
  if pausedUntil > now then return {1, pausedUntil - now} end
  if maxInFlight > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    if not redis.call('ZSCORE', KEYS[1], holder) and redis.call('ZCARD', KEYS[1]) >= maxInFlight then
      local first = redis.call('ZRANGE', KEYS[1], '0', '0', 'WITHSCORES')
      return {2, math.max(1, tonumber(first[2]) - now)}
    end
  end
  if perSecond > 0 then
    local nextSend = tonumber(state[2]) or 0
    if nextSend > now then return {3, nextSend - now} end
    local spacing = math.ceil(1000 / perSecond)
    redis.call('HSET', KEYS[2], 'nextSend', now + spacing)
    keepState(now + spacing)
  end
  if maxInFlight > 0 then
    redis.call('ZADD', KEYS[1], now + leaseMs, holder)
    keepHolders()
  end
  return {0, 0}
end

if op == 'renew' then
  local score = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]))
  if not score or score <= now then
    redis.call('ZREM', KEYS[1], ARGV[2])
    return {0, 0}
  end
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
  keepHolders()
  return {1, 0}
end

if op == 'release' then
  return {redis.call('ZREM', KEYS[1], ARGV[2]), 0}
end

if op == 'pause' then
  local pausedUntil = math.max(tonumber(redis.call('HGET', KEYS[2], 'pausedUntil')) or 0, now + tonumber(ARGV[2]))
  redis.call('HSET', KEYS[2], 'pausedUntil', pausedUntil)
  keepState(pausedUntil)
  return {1, pausedUntil - now}
end

if op == 'resubscribe' then
  local perSecond = tonumber(ARGV[2])
  local state = redis.call('HMGET', KEYS[2], 'pausedUntil', 'nextResubscribe')
  local turn = math.max(now, tonumber(state[1]) or 0)
  if perSecond > 0 then
    turn = math.max(turn, tonumber(state[2]) or 0)
    redis.call('HSET', KEYS[2], 'nextResubscribe', turn + math.ceil(1000 / perSecond))
    keepState(turn + math.ceil(1000 / perSecond))
  end
  return {0, turn - now}
end

return redis.error_reply('agentFlow: unknown op ' .. tostring(op))
