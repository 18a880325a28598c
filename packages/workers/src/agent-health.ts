/**
 * Each agent's health as this process tells the registry (`AgentRegistry.recordCalls`, recordAgentCall-1.lua): the
 * calls to an agent (card fetches, SendMessages) within `windowMs` of its first unwritten one go to Redis together,
 * one script call per agent per window instead of one per SendMessage. Health is operational: a crash loses at
 * most one window of outcomes, as a failed write always did.
 */
import type { AgentCall, AgentRegistry, TimedAgentCall } from '@durable-a2a/shared';

/** How long the calls to one agent wait to be written together (ms): a health view at most this much behind. */
export const AGENT_HEALTH_WINDOW_MS = 250;

/** Coalesces the health writes of one process; `flush()` writes what is pending now (the fleet's close). */
export class AgentHealthRecorder {
  private readonly pending = new Map<string, TimedAgentCall[]>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly writes = new Set<Promise<void>>();

  /**
   * `registry`: where the calls go; `now`: the clock (ms); `onError`: told of a write that failed (its calls are
   * lost); `windowMs`: default `AGENT_HEALTH_WINDOW_MS`.
   */
  constructor(
    private readonly registry: Pick<AgentRegistry, 'recordCalls'>,
    private readonly now: () => number,
    private readonly onError: (error: unknown, agentCardUrl: string) => void,
    private readonly windowMs = AGENT_HEALTH_WINDOW_MS,
  ) {}

  /** Queues one call to the agent at `agentCardUrl`; written within `windowMs`. Never throws. */
  record(agentCardUrl: string, call: AgentCall): void {
    const calls = this.pending.get(agentCardUrl);
    const timed = { ...call, at: this.now() };
    if (calls) calls.push(timed);
    else this.pending.set(agentCardUrl, [timed]);
    this.timer ??= setTimeout(() => void this.flush(), this.windowMs).unref();
  }

  /** Writes every pending call now (one script call per agent) and waits for the writes under way. Never rejects. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const [agentCardUrl, calls] of this.pending) {
      const write = this.registry.recordCalls(agentCardUrl, calls).then(
        () => undefined,
        (error: unknown) => this.onError(error, agentCardUrl),
      );
      this.writes.add(write);
      void write.finally(() => this.writes.delete(write));
    }
    this.pending.clear();
    await Promise.all(this.writes);
  }
}
