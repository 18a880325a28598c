--[[
  Renews the follow lease of a stream still open (the renewal tick, lease-renewal.ts), or takes it back when it ran
  out and nobody took it since (its holder renewed too late: a stalled event loop; the journal's fence still refuses
  the holder's writes if anyone claimed the delegation meanwhile). While the lease is ours, also says whether the
  delegation's row keeps suspect evidence (noteSuspect-1.lua: `suspects` pending, or `suspectsLost` above 0): a
  follower reads only its own task, and a suspect a push route kept without its reconcile job (a crash between the
  two, a failed enqueue) would otherwise wait for the follow to end. One HMGET in the script: no command more per tick.
  KEYS[1] delegation hash
  KEYS[2] lease key
  ARGV[1] holder token
  ARGV[2] lease duration in ms
  Returns: {outcome, suspects}: outcome 1 renewed, 2 taken back, 0 held by someone else (suspects then 0);
           suspects 1 when the row keeps suspects pending or counted lost, else 0 (a missing row keeps none)
]]
local token = ARGV[1]
local outcome
if redis.call('SET', KEYS[2], token, 'NX', 'PX', ARGV[2]) then
  outcome = 2
elseif redis.call('GET', KEYS[2]) == token then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  outcome = 1
else
  return {0, 0}
end
local fields = redis.call('HMGET', KEYS[1], 'suspects', 'suspectsLost')
local keeps = 0
if fields[1] or (tonumber(fields[2]) or 0) > 0 then keeps = 1 end
return {outcome, keeps}
