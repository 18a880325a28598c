/**
 * Fairness between tenants on the send queue: each message send gets a place on a virtual clock that moves one place
 * every `windowMs` of Redis's time (sendOrder-2.lua): its tenant's last place, or the clock's if that is behind, taken
 * by `weight` sends each; the send queue serves sends of one priority by place (`send-priority.ts`), so a tenant's
 * sends go in the order it enqueued them and a waiting send is behind no send enqueued once the clock reached its place. One script call per message send enqueued, but a new workflow's first sends on one
 * server: the create script takes their places (`JournalWorkflows.createWorkflowPlaced`). Weights are the registry's to write
 * (`AgentRegistry.setTenantWeight`); this reads them inside the script.
 */
import type { Cluster, Redis } from 'ioredis';
import { journalKeys, type JournalKeys } from './keys.ts';
import { callScript, defineScript, integerReply, ScriptReplyError } from './scripts.ts';

/** Default Redis time one place of the send order's clock lasts, ms (the clock starts at 0 when its hash is made). */
export const SEND_ORDER_WINDOW_MS = 60_000;

/**
 * The clock's place from which a rebase to 0 is due (`SendOrder.rebase`): a quarter of a priority's band of 200,000
 * places (35 days at the 60 s default), so a rebase, which forgives every tenant's lead, is rare, and 130,000 places
 * (90 days) are left to find an idle send queue before places reach the band's end.
 */
export const SEND_ORDER_REBASE_FROM = 50_000;

/**
 * How long no send may have been placed before a rebase, ms of Redis time (`SendOrder.rebase`): a send placed and not
 * yet added when the queue was counted is one held longer than this between its place and its add.
 */
export const SEND_ORDER_REBASE_QUIET_MS = 5_000;

/** What `SendOrder.rebase` did: `rebased`; `not-due` (the clock before `SEND_ORDER_REBASE_FROM`, or no clock); `recent` (a send placed within the quiet time). */
export type SendOrderRebase = 'rebased' | 'not-due' | 'recent';

const sendOrderScript = defineScript({
  name: 'sendOrder',
  keys: ['clock', 'weights'],
  encode: (input: { tenant: string; windowMs: number }) => [input.tenant, input.windowMs],
  decode: integerReply,
});

const rebaseScript = defineScript({
  name: 'rebaseSendOrder',
  keys: ['clock'],
  encode: (input: { from: number; quietMs: number; windowMs: number }) => [input.from, input.quietMs, input.windowMs],
  decode: (reply: unknown, script): SendOrderRebase => {
    const code = integerReply(reply, script);
    if (code === 1) return 'rebased';
    if (code === 2) return 'recent';
    if (code === 0) return 'not-due';
    throw new ScriptReplyError(script, reply);
  },
});

const keepPlaceScript = defineScript({
  name: 'keepSendPlace',
  keys: ['clock'],
  encode: (input: { place: number }) => [input.place],
  decode: integerReply,
});

/**
 * The places of `wanted.count` sends of `tenant`, one sendOrder-2.lua call each, all sent now (in order, so in the
 * same socket write as the caller's next command). Each promise is handled here too, so one left unawaited (the
 * caller's create failed) is no unhandled rejection. For a Cluster, where the send order is in another slot than a
 * workflow's keys; on one server the create script takes them (createWorkflow-11.lua).
 */
export function placeSendsApart(redis: Redis | Cluster, keys: JournalKeys, tenant: string, wanted: { count: number; windowMs: number }): Promise<number>[] {
  return Array.from({ length: wanted.count }, () => {
    const place = callScript(redis, sendOrderScript, keys.sendOrder(), { tenant, windowMs: wanted.windowMs });
    place.catch(() => undefined);
    return place;
  });
}

/** Places of message sends among their tenants' recent sends (one per process, on the journal's connection). */
export class SendOrder {
  private readonly keys: JournalKeys;

  /**
   * `windowMs`: the Redis time one place of the clock lasts (default `SEND_ORDER_WINDOW_MS`): how fast a waiting send
   * ages (it is behind no send enqueued once the clock reached its place). Throws RangeError for a length that is not
   * a whole number of ms ≥ 1 (0 would never move the clock, without expiry).
   */
  constructor(
    private readonly redis: Redis | Cluster,
    prefix?: string,
    /** One place's length, ms (what a creation asking its places passes on: `SendPlacesWanted.windowMs`). */
    readonly windowMs: number = SEND_ORDER_WINDOW_MS,
  ) {
    if (!Number.isSafeInteger(windowMs) || windowMs < 1) throw new RangeError(`SendOrder: windowMs must be a whole number of ms >= 1, got ${windowMs}`);
    this.keys = journalKeys(prefix);
  }

  /**
   * The next send's place for `tenant`: a whole number ≥ 0, never below its tenant's last one (first in, first out)
   * nor below the clock, nor more than 20,000 ahead of the clock. Throws what Redis throws.
   */
  place(tenant: string): Promise<number> {
    // The clock is Redis's (TIME in the script): processes whose clocks differ place a tenant's sends on one clock
    // (test/flow/send-order-skew.test.ts).
    return callScript(this.redis, sendOrderScript, this.keys.sendOrder(), { tenant, windowMs: this.windowMs });
  }

  /**
   * The place a send's next try is added at, given the `place` its job had (a whole number ≥ 0): kept, unless it is
   * more than 20,000 places ahead of the clock, which no place given since the clock's last rebase is: it is then the
   * clock's place (keepSendPlace-1.lua, one read). Throws RangeError for a place that is not a whole number ≥ 0, and
   * what Redis throws.
   */
  keep(place: number): Promise<number> {
    if (!Number.isSafeInteger(place) || place < 0) throw new RangeError(`SendOrder.keep: place must be a whole number >= 0, got ${place}`);
    return callScript(this.redis, keepPlaceScript, this.keys.sendOrder(), { place });
  }

  /**
   * Rebases the clock to place 0, every tenant's entry dropped (rebaseSendOrder-1.lua, one compare-and-set: of workers
   * calling at once one rebases): only when the clock is at `SEND_ORDER_REBASE_FROM` or beyond and no send was placed
   * for `quietMs` (default `SEND_ORDER_REBASE_QUIET_MS`) of Redis's time. For a caller that saw the send queue hold no
   * job (`FairSendQueue.rebaseOrderWhenIdle`): anywhere else it puts the waiting sends behind newer ones. Throws
   * RangeError for a quiet time that is not a whole number of ms ≥ 0, and what Redis throws.
   */
  rebase(quietMs: number = SEND_ORDER_REBASE_QUIET_MS): Promise<SendOrderRebase> {
    if (!Number.isSafeInteger(quietMs) || quietMs < 0) throw new RangeError(`SendOrder.rebase: quietMs must be a whole number of ms >= 0, got ${quietMs}`);
    return callScript(this.redis, rebaseScript, this.keys.sendOrder(), { from: SEND_ORDER_REBASE_FROM, quietMs, windowMs: this.windowMs });
  }
}
