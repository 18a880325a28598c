--[[
  A message send's place on the send order's virtual clock (start-time fair queueing between tenants, send-order.ts):
  the send queue orders sends of one priority by place (BullMQ priority), then in the order they were added.
  KEYS[1] the clock hash: `v` (the clock: places since the hash was made or last rebased), `ms` (Redis's time, ms,
          when place `v` began), `at` (Redis's time, ms, of the last place given) and, per tenant, `t:<tenant>` =
          `<place>:<sends>` (its last send's place, and how many of its sends took that place)
  KEYS[2] hash of tenant weights (the registry's: tenant → whole number ≥ 1; absent: 1)
  ARGV[1] tenant, ARGV[2] the Redis time one place of the clock lasts (ms, `SendOrder.windowMs`)
  Returns the place: the tenant's last place, or the clock's if that is behind it, taken by `weight` sends each, then
  the next place; never more than PLACE_LEAD (20,000) places ahead of the clock: further sends of a tenant that far
  ahead share its last place (they go in the order they were added, after the ones before).
  What holds, whatever the arrivals: (1) a tenant's places never go down, so its sends go in the order it enqueued
  them (one priority); (2) aging: a send at place P is behind no send enqueued once the clock has reached P, at most
  PLACE_LEAD places (PLACE_LEAD × placeMs of Redis time) after it was enqueued, and each other tenant puts at most
  weight × (P − clock) + 1 sends ahead of it before that; (3) weighted shares: while tenants have sends waiting, each
  takes `weight` sends a place, and a tenant that starts now (or whose last place is behind the clock) starts at the
  clock, not behind another tenant's burst. The counts of an earlier design restarted at 0 every window: a tenant's
  new sends and every other tenant's passed its older backlog each window, for ever (test/flow/send-order-aging.test.ts).
  Why a clock of Redis's (TIME, inside the script: no round trip of its own): every process that enqueues reads the
  same clock whatever its own says. Redis's clock going back (stepped back, or a replica promoted with a slower clock)
  never takes the clock back: it waits and moves on from the new now, so no send placed after goes ahead of one placed
  before. A clock going forward (a faster replica) moves the clock on: newer sends go behind older ones (safe side),
  by PLACE_LEAD + 2 places at most in one step (an idle hash expires before that: a longer step is a clock leaping
  ahead, which would use up the band for good).
  Why bounded: BullMQ's priorities end at 2^21 - 1 and each delegation priority owns a band of 200,000 (send-priority.ts);
  a place past the band's end stays at its end, where sends go in the order they were added (first in, first out: no
  send overtaken, only the fairness between tenants lost). Places ahead of the clock stay within the band while the
  clock is below 200,000 − PLACE_LEAD: 125 days of Redis time at the 60 s default. So the clock is rebased to 0
  (rebaseSendOrder-1.lua) from a quarter of the band on, when the workers' sweep finds the send queue holding no job
  and no place was given for a few seconds (`at`, written here in the same HSET); a next try at a place from before a
  rebase goes at the clock's place (keepSendPlace-1.lua). The hash also expires (PEXPIRE, renewed as the clock moves)
  once no send was placed for PLACE_LEAD + 2 places (2 weeks at 60 s): every place given is then behind where the
  clock would be, so a new clock starting at 0 passes only sends that waited that long with not one send enqueued
  meanwhile.
  Why not wrap the places round: BullMQ serves the lowest first, so a wrap would put every new send ahead of every
  waiting one, the fault above.
  State: the clock's three fields and one field per tenant; a tenant whose place is behind the clock is as good as
  absent, and each tenant that starts at the clock samples two fields (HRANDFIELD) and removes such entries, so the
  hash holds about twice the tenants at or ahead of the clock at most. One declared key (a script may only touch the
  keys it is given; a Cluster slot being migrated answers -ASK for a declared key only). Commands: TIME, HMGET, HGET,
  HSET (as many as the windows' counts: TIME, HGET, HINCRBY, HGET); an HRANDFIELD, and an HDEL when the sample holds
  a stale tenant, when the tenant starts at the clock; a PEXPIRE when the clock starts or moves on a place (once a
  place, as the windows' DEL, HSET and PEXPIRE were once a window) (includes/sendPlaces.lua; on one server the create
  script takes a new workflow's places with the same include, createWorkflow-11.lua).
  A weight that is not a number from 1 to 100 (written by hand: the registry refuses it) counts as the nearest of
  1 and 100 (NaN as 1), so no tenant takes the clock's place for every send.
]]
--- @include "sendPlaces"
return sendPlaces(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), 1)[1]
