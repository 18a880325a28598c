/**
 * Fairness between tenants on the send queue: each message send gets a place among the sends its tenant enqueued in
 * the current window (sendOrder-2.lua, windows numbered by Redis's clock), divided by the tenant's weight; the send queue serves sends of one priority
 * by place (`send-priority.ts`). One script call per message send enqueued, but a new workflow's first sends on one
 * server: the create script takes their places (`JournalWorkflows.createWorkflowPlaced`). Weights are the registry's to write
 * (`AgentRegistry.setTenantWeight`); this reads them inside the script.
 */
import type { Cluster, Redis } from 'ioredis';
import { journalKeys, type JournalKeys } from './keys.ts';
import { callScript, defineScript, integerReply } from './scripts.ts';

/** Default length of the window a tenant's sends are counted in, ms (windows are numbered from the epoch, on Redis's clock). */
export const SEND_ORDER_WINDOW_MS = 60_000;

const sendOrderScript = defineScript({
  name: 'sendOrder',
  keys: ['counts', 'weights'],
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
   * `windowMs`: how long a tenant's sends are counted before its count starts again (default `SEND_ORDER_WINDOW_MS`).
   * Throws RangeError for a window that is not a whole number of ms ≥ 1 (0 would count for ever, without expiry).
   */
  constructor(
    private readonly redis: Redis | Cluster,
    prefix?: string,
    /** The window's length, ms (what a creation asking its places passes on: `SendPlacesWanted.windowMs`). */
    readonly windowMs: number = SEND_ORDER_WINDOW_MS,
  ) {
    if (!Number.isSafeInteger(windowMs) || windowMs < 1) throw new RangeError(`SendOrder: windowMs must be a whole number of ms >= 1, got ${windowMs}`);
    this.keys = journalKeys(prefix);
  }

  /** The next send's place for `tenant` (0, 1, …: sends before it in this window / the tenant's weight). Throws what Redis throws. */
  place(tenant: string): Promise<number> {
    // The window is Redis's (TIME in the script): processes whose clocks differ count a tenant's sends in one window
    // (test/flow/send-order-skew.test.ts).
    return callScript(this.redis, sendOrderScript, this.keys.sendOrder(), { tenant, windowMs: this.windowMs });
  }
}
