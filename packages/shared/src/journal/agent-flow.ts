/**
 * Per-agent flow control shared by every worker (agentFlow-2.lua): a cap on SendMessage calls in flight at an agent
 * (`maxInFlight`, a slot per send with a lease, so a killed worker's slots come back when their leases end), smooth
 * rates of sends and resubscriptions, and a pause when the agent asks for one (`Retry-After`). Kept beside the journal
 * (its keys, its script mechanics); the limits themselves are the registry's (`AgentLimits`) or the fleet's default.
 */
import type { Cluster, Redis } from 'ioredis';
import { agentKeyOf } from '@durable-a2a/a2a/pure';
import { journalKeys, type JournalKeys } from './keys.ts';
import { arrayReply, callScript, defineScript } from './scripts.ts';

/**
 * How much one agent may be asked, fleet-wide. Every field optional: absent means no limit of that kind.
 * - `maxInFlight`: SendMessage calls in flight at the agent at once, across every worker (a whole number ≥ 1);
 * - `rate.sendsPerSecond`: SendMessage calls started per second, spaced evenly;
 * - `rate.resubscribesPerSecond`: SubscribeToTask resubscriptions per second (first subscriptions of new work are not held back).
 */
export interface AgentLimits {
  maxInFlight?: number;
  rate?: { sendsPerSecond?: number; resubscribesPerSecond?: number };
}

/** Why a send must wait: the agent asked for a pause, every slot is held, or its send rate allows no send yet. */
export type FlowWaitReason = 'paused' | 'slots-full' | 'rate';

/** An acquire's answer: go (the slot, if the agent has a cap, is the holder's), or wait `waitMs` for `reason`. */
export type FlowAcquired = { go: true } | { go: false; reason: FlowWaitReason; waitMs: number };

const WAIT_REASONS: Readonly<Record<number, FlowWaitReason>> = { 1: 'paused', 2: 'slots-full', 3: 'rate' };

type FlowInput =
  | { op: 'acquire'; holder: string; leaseMs: number; maxInFlight: number; sendsPerSecond: number }
  | { op: 'renew'; holder: string; leaseMs: number }
  | { op: 'release'; holder: string }
  | { op: 'pause'; pauseMs: number }
  | { op: 'resubscribe'; perSecond: number };

/** agentFlow-2.lua (see its header): `{code, ms}`. */
const agentFlowScript = defineScript({
  name: 'agentFlow',
  keys: ['slots', 'state'],
  encode: (input: FlowInput): (string | number)[] => {
    switch (input.op) {
      case 'acquire':
        return [input.op, input.holder, input.leaseMs, input.maxInFlight, input.sendsPerSecond];
      case 'renew':
        return [input.op, input.holder, input.leaseMs];
      case 'release':
        return [input.op, input.holder];
      case 'pause':
        return [input.op, Math.max(0, Math.ceil(input.pauseMs))];
      case 'resubscribe':
        return [input.op, input.perSecond];
    }
  },
  decode: (reply, script) => {
    const [code, ms] = arrayReply(reply, script).map(Number);
    return { code: code ?? 0, ms: ms ?? 0 };
  },
});

/** The fleet-wide flow control of every agent (one per process, on the journal's connection). */
export class AgentFlow {
  private readonly keys: JournalKeys;

  constructor(
    private readonly redis: Redis | Cluster,
    prefix?: string,
  ) {
    this.keys = journalKeys(prefix);
  }

  private call(agentCardUrl: string, input: FlowInput) {
    return callScript(this.redis, agentFlowScript, this.keys.agentFlow(agentKeyOf(agentCardUrl)), input);
  }

  /**
   * Asks to send to `agentCardUrl` now: one script call. Without limits it only checks the agent's pause (one HMGET);
   * with `maxInFlight` the slot taken is `holder`'s until `release`, or until its lease (`leaseMs`) ends unrenewed.
   * A holder that already holds a slot keeps it (its lease renewed). Nothing is taken when the answer is a wait.
   */
  async acquire(agentCardUrl: string, holder: string, limits: AgentLimits, leaseMs: number): Promise<FlowAcquired> {
    const { code, ms } = await this.call(agentCardUrl, {
      op: 'acquire',
      holder,
      leaseMs,
      maxInFlight: limits.maxInFlight ?? 0,
      sendsPerSecond: limits.rate?.sendsPerSecond ?? 0,
    });
    const reason = WAIT_REASONS[code];
    return reason ? { go: false, reason, waitMs: ms } : { go: true };
  }

  /** Extends `holder`'s slot lease by `leaseMs`. False when it is not held (its lease ran out: the slot went back). */
  async renew(agentCardUrl: string, holder: string, leaseMs: number): Promise<boolean> {
    return (await this.call(agentCardUrl, { op: 'renew', holder, leaseMs })).code === 1;
  }

  /** Gives `holder`'s slot back. False when it held none. */
  async release(agentCardUrl: string, holder: string): Promise<boolean> {
    return (await this.call(agentCardUrl, { op: 'release', holder })).code === 1;
  }

  /** Pauses every send to the agent for `pauseMs` (never shortens a longer pause). Resolves to the ms the pause lasts. */
  async pause(agentCardUrl: string, pauseMs: number): Promise<number> {
    return (await this.call(agentCardUrl, { op: 'pause', pauseMs })).ms;
  }

  /**
   * Reserves the agent's next resubscription turn (after any pause; spaced `1000 / perSecond` ms apart; 0: only the
   * pause). Resolves to the ms to wait for it (0: now).
   */
  async resubscribeTurn(agentCardUrl: string, perSecond: number): Promise<number> {
    return (await this.call(agentCardUrl, { op: 'resubscribe', perSecond })).ms;
  }
}
