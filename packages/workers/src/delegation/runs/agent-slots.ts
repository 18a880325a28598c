/**
 * Each agent's share of one kind of this process's slots (send, follow, reconcile): one agent that holds SendMessage,
 * keeps streams open or answers searches slowly cannot take all of a process's capacity for that kind (RT6), and an
 * agent alone may use all of it. The members `sendSlots`, `followSlots` and `reconcileSlots` of `WorkerContext`,
 * created in `fleet.ts`. Fleet-wide limits per agent are another layer (`flow.ts`, in Redis); these shares are per
 * process and cost no Redis command.
 *
 * The rule (work-conserving): an agent always gets a slot within its share (half the slots, or the `…SlotsPerAgent`
 * option); beyond it only while no other agent's work waits here for a slot, and, while the agent is slow (a send of
 * it held past `requestTimeoutMs`, for `slowLingerMs` after; every agent for follows, whose streams hold slots by
 * nature), only while a tenth of the slots (at least one) stays free: the free slot is how this process sees another
 * agent's work at all when every job it runs is that agent's. An explicit `…SlotsPerAgent` is a hard cap.
 */
export interface AgentSlotsOptions {
  /** This process's concurrency of that kind: slots in all. */
  concurrency: number;
  /** Explicit share per agent (`sendSlotsPerAgent`, …): a cap. Absent: half the slots (at least one), borrowable. */
  perAgent?: number | undefined;
  /** How long an agent refused a slot within its share counts as waiting, ms (about twice its wait before it asks again). */
  waitingMs: number;
  /** How long an agent stays slow after its last held send ended, ms. */
  slowLingerMs: number;
  /** Every agent counts as slow (follows: streams hold slots for long). Default false. */
  alwaysSlow?: boolean;
  /** Clock, ms since epoch. */
  now: () => number;
}

export class AgentSlots {
  private readonly held = new Map<string, number>();
  /** Agents refused a slot within their share: until when they count as waiting (ms). */
  private readonly waitingUntil = new Map<string, number>();
  /** Agents with held sends now (count) and when the last one ended (ms). */
  private readonly slow = new Map<string, { holding: number; endedAt: number }>();
  private inUse = 0;
  private readonly share: number;
  private readonly cap: number;
  private readonly reserve: number;

  constructor(private readonly options: AgentSlotsOptions) {
    const { concurrency, perAgent } = options;
    this.share = perAgent ?? Math.max(1, Math.floor(concurrency / 2));
    this.cap = perAgent ?? concurrency;
    this.reserve = Math.max(1, Math.floor(concurrency / 10));
  }

  /** Takes one of the agent's slots under the rule above. False when the agent must wait. */
  take(agent: string): boolean {
    const held = this.held.get(agent) ?? 0;
    const now = this.options.now();
    if (held >= this.cap) return false;
    if (this.inUse >= this.options.concurrency) {
      if (held < this.share) this.waitingUntil.set(agent, now + this.options.waitingMs);
      return false;
    }
    if (held >= this.share) {
      if (this.othersWaiting(agent, now)) return false;
      if (this.isSlow(agent, now) && this.options.concurrency - this.inUse - 1 < this.reserve) return false;
    }
    this.held.set(agent, held + 1);
    this.inUse++;
    return true;
  }

  /** Gives back a slot taken with `take`. */
  release(agent: string): void {
    const held = this.held.get(agent) ?? 0;
    if (held === 0) return;
    this.inUse--;
    if (held <= 1) this.held.delete(agent);
    else this.held.set(agent, held - 1);
  }

  /** Notes that one of the agent's requests is held (past `requestTimeoutMs`); the returned function notes its end (once). */
  noteHeld(agent: string): () => void {
    const entry = this.slow.get(agent) ?? { holding: 0, endedAt: 0 };
    entry.holding++;
    this.slow.set(agent, entry);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      entry.holding--;
      entry.endedAt = this.options.now();
    };
  }

  /** Slots the agent holds now (tests and logs). */
  heldBy(agent: string): number {
    return this.held.get(agent) ?? 0;
  }

  /** Whether the agent counts as slow now (tests and logs). */
  isSlow(agent: string, now = this.options.now()): boolean {
    if (this.options.alwaysSlow) return true;
    const entry = this.slow.get(agent);
    if (!entry) return false;
    if (entry.holding > 0 || now - entry.endedAt < this.options.slowLingerMs) return true;
    this.slow.delete(agent);
    return false;
  }

  private othersWaiting(agent: string, now: number): boolean {
    for (const [other, until] of this.waitingUntil) {
      if (until <= now) this.waitingUntil.delete(other);
      else if (other !== agent) return true;
    }
    return false;
  }
}

/** How long an agent counts as slow after its last held send ended, ms. */
const SLOW_LINGER_MS = 60_000;

/** The three shares of a process (`WorkerContext.sendSlots`, `followSlots`, `reconcileSlots`) from its compiled options. */
export function agentShares(options: {
  concurrency: { send: number; follow: number; reconcile: number };
  sendSlotsPerAgent: number | undefined;
  followSlotsPerAgent: number | undefined;
  reconcileSlotsPerAgent: number | undefined;
  slotWaitMs: number;
  followBackoff: { baseMs: number; capMs: number };
  now: () => number;
}): { sendSlots: AgentSlots; followSlots: AgentSlots; reconcileSlots: AgentSlots } {
  // A refused send, follow or reconcile asks again within 2 × slotWaitMs (full jitter): waiting that long, and a bit more.
  const common = { waitingMs: 3 * options.slotWaitMs, slowLingerMs: SLOW_LINGER_MS, now: options.now };
  return {
    sendSlots: new AgentSlots({ ...common, concurrency: options.concurrency.send, perAgent: options.sendSlotsPerAgent }),
    // A refused follow waits its base backoff plus up to min(cap, 5 s) (`follow.ts`).
    followSlots: new AgentSlots({
      ...common,
      concurrency: options.concurrency.follow,
      perAgent: options.followSlotsPerAgent,
      alwaysSlow: true,
      waitingMs: 2 * (options.followBackoff.baseMs + Math.min(options.followBackoff.capMs, 5_000)),
    }),
    reconcileSlots: new AgentSlots({ ...common, concurrency: options.concurrency.reconcile, perAgent: options.reconcileSlotsPerAgent }),
  };
}
