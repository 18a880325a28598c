--[[
  Counts one more round of a repeated act of a delegation (an auth handler run, a credential refresh) within
  a window that starts at the first round, fleet-wide: bounds what an agent can make us repeat.
  KEYS[1] the act's round counter (a one-time mark key, keys.ts `once`)
  ARGV[1] the window in ms, set on the first round only (PEXPIRE NX: later rounds never extend it)
  Returns: the rounds so far, this one included (1 for the first)
]]
local rounds = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1], 'NX')
return rounds
