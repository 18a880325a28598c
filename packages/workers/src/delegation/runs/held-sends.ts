/**
 * Held sends moved out of their send jobs: an agent that holds SendMessage (it ignores `returnImmediately`, V2) would
 * otherwise keep a send slot of this process (a BullMQ job of the send queue's concurrency) until it answers or the
 * attempt's deadline (24 h by default). After `requestTimeoutMs` without an answer the request goes on here, in a
 * bounded pool (`heldSendSlots`; each agent at most half of it, at least one), and its job ends, freeing the slot for
 * other agents' sends. The request keeps its send lease (renewed), its fleet-wide slot and its search for our task
 * (`io/send-held.ts`); its answer is applied as in the job. Why a pool of its own rather than a slot given back to
 * the share accounting only: a slot counted free while its job still runs frees nothing, the BullMQ worker still
 * fetches no more than its concurrency. A crash loses nothing: the send lease runs out and the reconciler searches.
 */
export class HeldSends {
  private readonly byAgent = new Map<string, number>();
  private readonly running = new Set<Promise<unknown>>();
  private readonly stop = new AbortController();
  private inUse = 0;

  /** `slots`: held sends this process keeps at once (`heldSendSlots`; 0: none, a held send keeps its job). */
  constructor(private readonly slots: number) {}

  /** Aborted when the fleet closes: every held send in the pool stops waiting (its send lease left to its TTL; the reconciler searches for it). */
  get signal(): AbortSignal {
    return this.stop.signal;
  }

  /** True when a held send of `agent` could be taken now (the pool and the agent's share have room). */
  hasRoom(agent: string): boolean {
    const share = Math.max(1, Math.floor(this.slots / 2));
    return !this.stop.signal.aborted && this.inUse < this.slots && (this.byAgent.get(agent) ?? 0) < share;
  }

  /** Takes `held` (a held send's whole remaining run, never rejecting) into the pool; false when there is no room. */
  adopt(agent: string, held: Promise<unknown>): boolean {
    if (!this.hasRoom(agent)) return false;
    this.inUse++;
    this.byAgent.set(agent, (this.byAgent.get(agent) ?? 0) + 1);
    const tracked = held.finally(() => {
      this.inUse--;
      const left = (this.byAgent.get(agent) ?? 1) - 1;
      if (left <= 0) this.byAgent.delete(agent);
      else this.byAgent.set(agent, left);
      this.running.delete(tracked);
    });
    this.running.add(tracked);
    return true;
  }

  /** Held sends of `agent` in the pool now (tests and logs). */
  heldBy(agent: string): number {
    return this.byAgent.get(agent) ?? 0;
  }

  /** Stops every held send in the pool and waits for them to end. */
  async drain(): Promise<void> {
    this.stop.abort();
    await Promise.allSettled([...this.running]);
  }
}
