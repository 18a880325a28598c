--[[
  Renews the follow lease of a stream still open (lease-1.lua 'keep'), unless the delegation it follows is finished:
  a row finished elsewhere (a push, the reconciler, a person's resolve) never changes again, so nothing its stream
  could still carry matters, and a stream that carries only keep-alive comments would otherwise hold the lease, a job
  slot and a socket until the quiet window (streamQuietMs, 5 min by default) ends it (attack 27).
  KEYS[1] lease key
  KEYS[2] delegation hash
  ARGV[1] holder token
  ARGV[2] lease duration in ms
  Returns: 1 renewed; 2 taken back (it had run out and nobody took it since: a stalled event loop); 0 held by
           someone else; 3 the delegation is finished, or its row is gone (a finished workflow's rows are
           compacted into its record; an expired one is gone too): nothing renewed (its holder stops the stream
           and releases the lease)
]]
--- @include "prelude"
local state = redis.call('HGET', KEYS[2], 'state')
if not state or FINISHED[state] then return 3 end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 2 end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
