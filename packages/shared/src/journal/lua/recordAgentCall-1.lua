--[[
  Records one call to a registered agent (a card fetch or a SendMessage) in its health entry: the outcome joins
  the agent's recent outcomes (the last ARGV[6], oldest dropped first), and the last success, the last error or
  the last card fetch is stamped. An agent with no health entry is not registered (the registry writes the entry
  when it registers an agent and deletes it with the agent): nothing is written, so calls to unregistered agents
  cost one read and never grow the hash. One script, so concurrent workers never lose each other's outcomes.
  KEYS[1] the registry's health hash (keys.ts agentHealth): field = normalized card URL, value = JSON
          { recent = '1'/'0' per call, newest last; lastSuccessAt, lastErrorAt, lastCardFetchAt (ms);
            lastError, lastErrorKind ('card' | 'send'); lastCardFetchOk (true | false) }
  ARGV[1] the normalized card URL
  ARGV[2] '1' the call succeeded, '0' it failed
  ARGV[3] 'card' (a card fetch) or 'send' (a SendMessage)
  ARGV[4] now (ms since the epoch)
  ARGV[5] the error, bounded by the caller ('' on success)
  ARGV[6] how many recent outcomes are kept (the health window)
  Returns: 1 recorded, 0 no such agent (nothing written)
]]
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local decoded, health = pcall(cjson.decode, raw)
if not decoded or type(health) ~= 'table' then health = {} end
local recent = tostring(health.recent or '') .. ARGV[2]
local window = tonumber(ARGV[6])
if #recent > window then recent = string.sub(recent, -window) end
health.recent = recent
local now = tonumber(ARGV[4])
if ARGV[2] == '1' then
  health.lastSuccessAt = now
else
  health.lastErrorAt = now
  health.lastError = ARGV[5]
  health.lastErrorKind = ARGV[3]
end
if ARGV[3] == 'card' then
  health.lastCardFetchAt = now
  health.lastCardFetchOk = ARGV[2] == '1'
end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(health))
return 1
