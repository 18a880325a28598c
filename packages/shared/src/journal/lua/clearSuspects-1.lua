--[[
  The end of one round of suspect reads (the reconciler read some of the pending suspects, noteSuspect-1.lua, by
  GetTask): removes what was read to a conclusion, keeps what could not be read this time for another round, and counts
  as evidence lost (`suspectsLost`) what cannot be read at all, or still could not after ARGV[1] rounds in a row
  (`suspectReadRounds`). Compare-and-set on each id: only ids still pending are moved, one noted meanwhile stays for
  the next job. The `suspects` field goes when no id is left. A round counted is timed (`suspectReadRoundAt`, ARGV[2]):
  the next read of what is left waits for the backoff from that time (policy.ts `suspectRetryAt`), whoever asks for it
  (the ender of the round, a renewal tick, a follow run starting); the time goes with the count.
  KEYS[1] delegation hash
  ARGV[1] rounds in a row a suspect may fail to be read before it is counted lost (the reconcile job's attempts)
  ARGV[2] when the round ended (ms)
  ARGV[3] the token the round was claimed with (claimSuspectRound-1.lua; '' when none): the claim is released if
    still this one (one taken over after it expired stays with its new claimer)
  ARGV[4] n; ARGV[5 .. 4+n]: ids read to a conclusion (or our own task): removed
  ARGV[5+n] m; the m ids after it: could not be read this time (a drop, HTTP 5xx, a timeout): kept, one round counted;
    at ARGV[1] rounds removed and counted lost. A round without any such id ends the count.
  ARGV[6+n+m ..]: ids that cannot be read (an answer we cannot accept): removed and counted lost
  Returns: { ids still pending, suspectsLost, suspectReadRounds } (all 0 when the row is gone)
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return { 0, 0, 0 } end
if ARGV[3] ~= '' and redis.call('HGET', KEYS[1], 'suspectRoundBy') == ARGV[3] then
  redis.call('HDEL', KEYS[1], 'suspectRoundBy', 'suspectRoundUntil')
end
local ids = {}
local raw = redis.call('HGET', KEYS[1], 'suspects')
if raw then
  local ok, decoded = pcall(cjson.decode, raw)
  if ok and type(decoded) == 'table' then ids = decoded end
end
local pending = {}
for _, id in ipairs(ids) do pending[id] = true end
local n = tonumber(ARGV[4])
local m = tonumber(ARGV[5 + n])
local drop, unread, lost = {}, {}, 0
for i = 5, 4 + n do drop[ARGV[i]] = true end
local unreadCount = 0
for i = 6 + n, 5 + n + m do
  if pending[ARGV[i]] and not drop[ARGV[i]] then
    unread[ARGV[i]] = true
    unreadCount = unreadCount + 1
  end
end
for i = 6 + n + m, #ARGV do
  if pending[ARGV[i]] and not drop[ARGV[i]] and not unread[ARGV[i]] then
    drop[ARGV[i]] = true
    lost = lost + 1
  end
end
local rounds = 0
if unreadCount > 0 then
  rounds = redis.call('HINCRBY', KEYS[1], 'suspectReadRounds', '1')
  if rounds >= tonumber(ARGV[1]) then
    for id in pairs(unread) do drop[id] = true end
    lost = lost + unreadCount
    rounds = 0
    redis.call('HDEL', KEYS[1], 'suspectReadRounds', 'suspectReadRoundAt')
  else
    redis.call('HSET', KEYS[1], 'suspectReadRoundAt', ARGV[2])
  end
elseif n > 0 then
  redis.call('HDEL', KEYS[1], 'suspectReadRounds', 'suspectReadRoundAt')
end
local left = {}
for _, id in ipairs(ids) do
  if not drop[id] then left[#left + 1] = id end
end
if #left == 0 then redis.call('HDEL', KEYS[1], 'suspects')
elseif #left ~= #ids then redis.call('HSET', KEYS[1], 'suspects', cjson.encode(left)) end
if lost > 0 then redis.call('HINCRBY', KEYS[1], 'suspectsLost', lost) end
return { #left, tonumber(redis.call('HGET', KEYS[1], 'suspectsLost') or '0'), rounds }
