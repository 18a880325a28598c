--[[
  Renews the follow lease of a stream still open (the renewal tick, lease-renewal.ts), or takes it back when it ran
  out and nobody took it since (its holder renewed too late: a stalled event loop; the journal's fence still refuses
  the holder's writes if anyone claimed the delegation meanwhile). One HMGET of the row in the script (no command
  more per tick) says two more things:
  - the delegation is finished, or its row is gone (a finished workflow's rows are compacted into its record): nothing
    is renewed, since a row finished elsewhere (a push, the reconciler, a person's resolve) never changes again, and a
    stream that carries only keep-alive comments would otherwise hold the lease, a job slot and a socket until the
    quiet window (streamQuietMs, 5 min by default) ends it (attack 27);
  - while the lease is ours, whether the row keeps suspect evidence (noteSuspect-1.lua: `suspects` pending, or
    `suspectsLost` above 0): a follower reads only its own task, and a suspect a push route kept without its
    reconcile job (a crash between the two, a failed enqueue) would otherwise wait for the follow to end.
  KEYS[1] delegation hash
  KEYS[2] lease key
  ARGV[1] holder token
  ARGV[2] lease duration in ms
  Returns: {outcome, suspects, rounds, roundAt}: outcome 1 renewed, 2 taken back, 0 held by someone else, 3 the
           delegation is finished or its row gone (nothing renewed: its holder stops the stream and releases the lease);
           suspects 1 when the row keeps suspects pending or counted lost (outcome 1 or 2 only), else 0; with suspects
           1, the failed suspect read rounds in a row and when the last ended (`suspectReadRounds`,
           `suspectReadRoundAt`, clearSuspects-1.lua; 0 when absent): the tick asks for the read no sooner than their
           backoff allows
]]
--- @include "prelude"
--- @include "suspects"
local fields = redis.call('HMGET', KEYS[1], 'state', 'suspects', 'suspectsLost', 'suspectReadRounds', 'suspectReadRoundAt')
if not fields[1] or FINISHED[fields[1]] then return {3, 0, 0, 0} end
local token = ARGV[1]
local outcome
-- The GET first: a lease still ours (every tick but a stalled one's) costs GET + PEXPIRE, not a failed SET NX more.
local holder = redis.call('GET', KEYS[2])
if holder == token then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  outcome = 1
elseif not holder then
  redis.call('SET', KEYS[2], token, 'PX', ARGV[2])
  outcome = 2
else
  return {0, 0, 0, 0}
end
if not keepsSuspects(fields[2], fields[3]) then return {outcome, 0, 0, 0} end
return {outcome, 1, tonumber(fields[4]) or 0, tonumber(fields[5]) or 0}
