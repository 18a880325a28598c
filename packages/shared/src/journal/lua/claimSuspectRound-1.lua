--[[
  Claims the next round of suspect reads of a delegation (suspect-reads.ts; a finished one's, finished-suspects.ts, when
  ARGV[7] says the claimer read it finished), compare-and-set, before its
  first GetTask: a round in flight is in the row (`suspectRoundBy`, `suspectRoundUntil`) from its claim until its end
  (clearSuspects-1.lua releases it), so a job that looks at the row meanwhile sees it and does not read (policy.ts
  `suspectReadTurn`). The claimer decided from the row's round fields; the claim is taken only while they are still as
  it saw them: no other round claimed or ended since. A claim whose round never ended (its worker died) holds until
  its time and may then be taken over by the one who saw it expired.
  KEYS[1] delegation hash
  ARGV[1] the claimer's token (one per job run)
  ARGV[2] now (ms)
  ARGV[3] how long the claim holds (ms)
  ARGV[4] `suspectReadRounds` as the claimer saw it ('0' when absent)
  ARGV[5] `suspectReadRoundAt` as the claimer saw it ('' when absent)
  ARGV[6] `suspectRoundBy` as the claimer saw it ('' when absent; present: an expired claim it takes over)
  ARGV[7] '1' when the claimer reads a finished row's suspects (a finished row never regresses: its suspects are read
    under the same claim and backoff); absent or '0': an unfinished row's, and a row finished since is not claimed
  Returns: {1} claimed; {0} the row is gone, or finished and ARGV[7] is not '1' (nothing claimed); {2, rounds, roundAt, by, until} the row's
  round moved since (claimed by another, or ended), or its claim still holds: nothing claimed, the row's four fields
  (0 or '' when absent) for the claimer to decide again
]]
--- @include "prelude"
local f = redis.call('HMGET', KEYS[1], 'state', 'suspectReadRounds', 'suspectReadRoundAt', 'suspectRoundBy', 'suspectRoundUntil')
if not f[1] or (FINISHED[f[1]] and ARGV[7] ~= '1') then return {0} end
local now = tonumber(ARGV[2])
local rounds = tonumber(f[2]) or 0
local roundAt = f[3] or ''
local by = f[4] or ''
local untilMs = tonumber(f[5]) or 0
local moved = rounds ~= (tonumber(ARGV[4]) or 0) or roundAt ~= ARGV[5] or by ~= ARGV[6] or (by ~= '' and untilMs > now)
if moved then return {2, rounds, tonumber(roundAt) or 0, by, untilMs} end
redis.call('HSET', KEYS[1], 'suspectRoundBy', ARGV[1], 'suspectRoundUntil', now + tonumber(ARGV[3]))
return {1}
