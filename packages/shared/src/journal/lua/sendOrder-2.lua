--[[
  A message send's place among the sends its tenant enqueued in the current window: the send queue orders sends of
  one priority by place (BullMQ priority), so a tenant's burst takes places 0, 1, 2, … and another tenant's next
  send takes place 0 again, ahead of the burst's tail (weighted fair queueing between tenants, send-order.ts).
  KEYS[1] hash of the current window's counts: field `window` (the window's number: Redis's clock (ms) / window
          length) and, per tenant, `t:<tenant>` (sends enqueued in that window); a newer window empties it first
  KEYS[2] hash of tenant weights (the registry's: tenant → whole number ≥ 1; absent: 1)
  ARGV[1] tenant, ARGV[2] window length (ms): the counts go two windows after the window's first send
  Returns the place: floor(sends of the tenant in this window before this one / its weight)
  Why Redis's clock (TIME, inside the script: no round trip of its own): every process that enqueues numbers the
  window alike whatever its own clock says, so a tenant enqueuing through producers whose clocks differ is counted
  once. One declared key for every window (not a key per window named here): a script may only touch the keys it
  is given (a Cluster slot being migrated answers -ASK for a declared key only).
  Why windows: counts that only ever grow would put a tenant that was busy an hour ago behind one that was not;
  counts that go down would need one more write per send when it starts. Four commands per call (TIME, HGET,
  HINCRBY, HGET), and a DEL, HSET and PEXPIRE at a window's first send (includes/sendPlaces.lua; on one server the
  create script takes a new workflow's places with the same include, createWorkflow-11.lua). A window one window older than the stored
  one (a clock stepped back a little) counts into the stored one; a stored window further ahead (a replica promoted
  with its clock behind the old primary's: the hash's expiry, an absolute time, is then that much further away) is
  stale and emptied, so the counts never outlive two windows of this clock.
  A weight that is not a number from 1 to 100 (written by hand: the registry refuses it) counts as the nearest of
  1 and 100 (NaN as 1), so no tenant takes place 0 for every send.
]]
--- @include "sendPlaces"
return sendPlaces(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), 1)[1]
