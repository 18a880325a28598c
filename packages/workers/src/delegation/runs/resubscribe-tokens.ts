/**
 * Slots of the fleet-wide resubscribe rate (`subscribeRateLimit`, takeToken-1.lua) for this process's
 * resubscriptions, several per script call: after a whole-fleet crash a fresh worker reattaches thousands of
 * streams, and each asked for its slot with a call of its own. The resubscriptions that ask before the event
 * loop's next check phase (`setImmediate`) share one call of up to `MOST_SLOTS_PER_CALL` slots; each gets its
 * own slot, in the order it asked. The script reserves them one after the other exactly as that many calls of
 * one slot would at that instant, so the limit is the same whatever the batching.
 */

/** Slots one script call reserves at most (its loop runs on Redis's one thread: a few µs per slot). */
export const MOST_SLOTS_PER_CALL = 500;

/** Reserves `count` slots in one call: per slot, in order, 0 to go now, else the ms until it. */
export type TakeSlots = (count: number) => Promise<number[]>;

interface Waiter {
  resolve: (waitMs: number) => void;
  reject: (error: unknown) => void;
}

/**
 * The resubscriptions of this process waiting for a slot, asked for together. A member of `WorkerContext`
 * (`resubscribeTokens`), created in `fleet.ts` over `journal.takeTokens('resubscribe', …)`.
 */
export class ResubscribeTokens {
  private waiting: Waiter[] = [];
  private scheduled = false;

  /** `takeSlots`: the script call; `mostPerCall`: slots per call at most (default `MOST_SLOTS_PER_CALL`). */
  constructor(
    private readonly takeSlots: TakeSlots,
    private readonly mostPerCall = MOST_SLOTS_PER_CALL,
  ) {}

  /**
   * Reserves one slot. @returns 0 to go now, else the ms until the reserved slot.
   * Rejects with what the script call rejects with (every resubscription of that call does).
   */
  take(): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    this.scheduled = false;
    const waiting = this.waiting;
    this.waiting = [];
    for (let start = 0; start < waiting.length; start += this.mostPerCall) {
      const group = waiting.slice(start, start + this.mostPerCall);
      const fail = (error: unknown) => group.forEach((waiter) => waiter.reject(error));
      this.takeSlots(group.length).then((waits) => {
        if (waits.length !== group.length) return fail(new Error(`takeToken: ${waits.length} slots answered for ${group.length} asked`));
        group.forEach((waiter, index) => waiter.resolve(waits[index]!));
      }, fail);
    }
  }
}
