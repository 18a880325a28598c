--[[
  Records calls to a registered agent (card fetches and SendMessages) in its health entry, oldest first: each
  outcome joins the agent's recent outcomes (the last ARGV[2], oldest dropped first), and the last success, the last
  error or the last card fetch is stamped. A worker coalesces the calls of a short window into one call of this
  script (registry.ts recordCalls): health is operational, so one script per agent per window instead of one per
  SendMessage. An agent with no health entry is not registered (the registry writes the entry when it registers an
  agent and deletes it with the agent): nothing is written, so calls to unregistered agents cost one read and never
  grow the hash. One script, so concurrent workers never lose each other's outcomes.
  KEYS[1] the registry's health hash (keys.ts agentHealth): field = normalized card URL, value = JSON
          { recent = '1'/'0' per call, newest last; lastSuccessAt, lastErrorAt, lastCardFetchAt (ms);
            lastError, lastErrorKind ('card' | 'send'); lastCardFetchOk (true | false) }
  ARGV[1] the normalized card URL
  ARGV[2] how many recent outcomes are kept (the health window)
  ARGV[3..] one quadruple per call, oldest first: '1' the call succeeded or '0' it failed; 'card' (a card fetch)
          or 'send' (a SendMessage); when (ms since the epoch); the error, bounded by the caller ('' on success)
  Returns: 1 recorded, 0 no such agent (nothing written)
]]
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local decoded, health = pcall(cjson.decode, raw)
if not decoded or type(health) ~= 'table' then health = {} end
local recent = tostring(health.recent or '')
for i = 3, #ARGV - 3, 4 do
  local ok, kind, now = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  recent = recent .. ok
  if ok == '1' then
    health.lastSuccessAt = now
  else
    health.lastErrorAt = now
    health.lastError = ARGV[i + 3]
    health.lastErrorKind = kind
  end
  if kind == 'card' then
    health.lastCardFetchAt = now
    health.lastCardFetchOk = ok == '1'
  end
end
local window = tonumber(ARGV[2])
if #recent > window then recent = string.sub(recent, -window) end
health.recent = recent
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(health))
return 1
