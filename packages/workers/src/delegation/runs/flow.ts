/**
 * A send's turn at its agent: this process's share of send slots for the agent (`sendSlotsPerAgent`, no Redis), then
 * the fleet-wide flow control (`AgentFlow`, agentFlow-2.lua: a pause the agent asked for, its `maxInFlight` slots with
 * a lease each, its send rate). A send over any of them waits as a delayed send job (`send-deferred`: the view shows
 * "waiting for a slot at <agent>"), never fails. And the pause an agent asks for (`Retry-After`), bounded by
 * `retryAfterMaxMs`, for the whole fleet. A send to an agent without limits asks Redis only to see a pause: it skips
 * the script while this process found the agent unpaused less than `pauseCheckMs` ago (`pause-checks.ts`).
 */
import { LRUCache } from 'lru-cache';
import { agentKeyOf } from '@durable-a2a/a2a';
import type { AgentLimits, DelegationRecord, FlowAcquired, RegisteredAgent } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';

/** Agent URL spellings whose key `AgentLimitsBook` keeps (the least recently used go first). */
const AGENT_SPELLINGS_KEPT = 1_000;

/**
 * Each agent's fleet-wide limits as this process last read them from the registry (every `agentLabelRefreshMs`, with
 * the metrics' agent labels): a registered agent's own (none: no limit), else the fleet's `defaultAgentLimits`.
 */
export class AgentLimitsBook {
  private byAgent = new Map<string, AgentLimits>();
  /** The key (`agentKeyOf`, a few URL parses) of each spelling asked about: a pure function of the text, kept. */
  private readonly keys = new LRUCache<string, string>({ max: AGENT_SPELLINGS_KEPT });

  constructor(private readonly fallback: AgentLimits) {}

  /** Replaces what is known with the registry's agents. */
  update(agents: readonly RegisteredAgent[]): void {
    this.byAgent = new Map(agents.map((agent) => [agentKeyOf(agent.cardUrl), agent.limits ?? {}]));
  }

  /** The limits of the agent at `agentCardUrl` (any spelling). */
  of(agentCardUrl: string): AgentLimits {
    let key = this.keys.get(agentCardUrl);
    if (key === undefined) this.keys.set(agentCardUrl, (key = agentKeyOf(agentCardUrl)));
    return this.byAgent.get(key) ?? this.fallback;
  }
}

/** The limits ask the acquire nothing beyond the pause: no slot, no rate (agentFlow-2.lua treats 0 as none). */
const pauseOnly = (limits: AgentLimits): boolean => (limits.maxInFlight ?? 0) === 0 && (limits.rate?.sendsPerSecond ?? 0) === 0;

/** Why a send waits (`send-deferred`). */
export type SendWaitReason = 'slots-full' | 'share-full' | 'rate' | 'paused';

/** A send's turn: held until `release` (or, for a held send moved out of its job, `handOver`). */
export interface SendTurn {
  /** Gives the process's share slot and the fleet slot back; a no-op after `handOver` or a second call. */
  release(): void;
  /**
   * The send's job ends while its request goes on (a held send moved out of its job, `held-sends.ts`): the share slot
   * goes back now; the fleet slot (the request is still in flight at the agent) when `settled` settles.
   */
  handOver(settled: Promise<unknown>): void;
}

/** Full jitter over `[baseMs, 2 × baseMs)`: waiting sends do not all come back at once. */
const jittered = (baseMs: number): number => baseMs + Math.floor(Math.random() * Math.max(1, baseMs));

/**
 * Takes a send's turn at its agent: its share of this process's send slots, then the fleet's flow control (one
 * script call, skipped for an agent without limits found unpaused within `pauseCheckMs`: `pause-checks.ts`; renewed
 * every `lockDurationMs / 3` while the agent has a `maxInFlight`). Resolves to the turn, or to
 * the wait (reason and until when, ms since epoch) when the send must wait. Throws what Redis throws (nothing held).
 */
export async function takeSendTurn(ctx: WorkerContext, record: DelegationRecord, holder: string): Promise<SendTurn | { reason: SendWaitReason; untilMs: number }> {
  const agent = record.agentCardUrl;
  if (!ctx.sendSlots.take(agent)) return { reason: 'share-full', untilMs: ctx.options.now() + jittered(ctx.options.slotWaitMs) };
  const limits = ctx.agentLimits.of(agent);
  const leaseMs = ctx.options.lockDurationMs;
  const look = () => ctx.flow.acquire(agent, holder, limits, leaseMs);
  let acquired: FlowAcquired;
  try {
    // Without limits the acquire only reads the pause: one look per agent and `pauseCheckMs` (the holder is not kept).
    acquired = await (pauseOnly(limits) ? ctx.pauseChecks.ask(agent, look) : look());
  } catch (error) {
    ctx.sendSlots.release(agent);
    throw error;
  }
  if (!acquired.go) {
    ctx.sendSlots.release(agent);
    // Every slot held: ask again within `slotWaitMs` (a slot may come back any time), never later than the first lease end.
    const waitMs = acquired.reason === 'slots-full' ? Math.min(acquired.waitMs, ctx.options.slotWaitMs) : acquired.waitMs;
    return { reason: acquired.reason, untilMs: ctx.options.now() + jittered(Math.max(waitMs, 50)) };
  }
  const slot = limits.maxInFlight !== undefined;
  // A send still unanswered after requestTimeoutMs makes its agent slow here (`agent-slots.ts`) until it ends.
  let heldEnded: (() => void) | undefined;
  const slowTimer = setTimeout(() => (heldEnded = ctx.sendSlots.noteHeld(agent)), ctx.options.requestTimeoutMs);
  slowTimer.unref?.();
  const endHeld = () => {
    clearTimeout(slowTimer);
    heldEnded?.();
  };
  const renewal = slot ? setInterval(() => void ctx.flow.renew(agent, holder, leaseMs).catch(() => undefined), leaseMs / 3) : undefined;
  let shareHeld = true;
  let slotHeld = slot;
  const releaseShare = () => {
    if (shareHeld) ctx.sendSlots.release(agent);
    shareHeld = false;
  };
  const releaseSlot = () => {
    clearInterval(renewal);
    endHeld();
    // Not waited for: a failed release only lets the slot's lease run out (lockDurationMs).
    if (slotHeld) void ctx.flow.release(agent, holder).catch(() => undefined);
    slotHeld = false;
  };
  let handedOver = false;
  return {
    release() {
      if (handedOver) return;
      releaseShare();
      releaseSlot();
    },
    handOver(settled) {
      handedOver = true;
      releaseShare();
      void settled.finally(releaseSlot).catch(() => undefined);
    },
  };
}

/**
 * Pauses every send to the agent, fleet-wide, for the wait its answer asked for (`retryAfterMs` of an A2A error:
 * `Retry-After` on 429/503, JSON-RPC or gRPC RetryInfo), at most `retryAfterMaxMs`. Nothing when the error asks for
 * none. Never rejects (a pause not written costs one more refused request, not the send).
 */
export async function pauseForRetryAfter(ctx: WorkerContext, agentCardUrl: string, error: unknown, log: WorkerContext['logger']): Promise<void> {
  const retryAfterMs = (error as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
  if (typeof retryAfterMs !== 'number' || !(retryAfterMs > 0)) return;
  const pauseMs = Math.min(retryAfterMs, ctx.options.retryAfterMaxMs);
  ctx.pauseChecks.notePause(agentCardUrl);
  await ctx.flow.pause(agentCardUrl, pauseMs).then(
    (lastsMs) => log.warn({ agent: agentCardUrl, retryAfterMs, pauseMs: lastsMs }, 'the agent asked us to wait (Retry-After): no request goes to it from any worker until then'),
    (failure: unknown) => log.warn({ err: failure, agent: agentCardUrl }, 'the pause the agent asked for was not written'),
  );
}
