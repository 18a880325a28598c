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
import { callScript, defineScript, integerReply } from './scripts.ts';

/** Default Redis time one place of the send order's clock lasts, ms (the clock starts at 0 when its hash is made). */
export const SEND_ORDER_WINDOW_MS = 60_000;

const sendOrderScript = defineScript({
  name: 'sendOrder',
  keys: ['clock', 'weights'],
  encode: (input: { tenant: string; windowMs: number }) => [input.tenant, input.windowMs],
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
}
