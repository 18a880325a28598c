/**
 * When this process last found each agent without a fleet-wide pause (`pauseCheckMs`), so that a send to an agent
 * without limits skips the flow-control script (agentFlow-2.lua `acquire`, which for such an agent only reads the
 * pause). Used by `flow.ts` `takeSendTurn`; docs/flow-control.md "How fast a pause reaches the other workers".
 */
import type { FlowAcquired } from '@durable-a2a/shared';
import { LRUCache } from 'lru-cache';

/** How many agents `PauseChecks` keeps (the least recently looked at is forgotten first; a forgotten agent costs one script call). */
const MOST_AGENTS_KEPT = 10_000;

const GO: FlowAcquired = { go: true };

/**
 * A look that said go holds for `checkMs`: a pause another worker writes reaches this process's sends at most
 * `checkMs` later (an LRUCache entry with `ttl` checkMs, stale once older than that); a pause this process writes
 * (`notePause`) reaches its next send at once. Sends that ask while a look is under way share it (one script call,
 * not one per send). At most MOST_AGENTS_KEPT agents are kept (`max`). `checkMs` 0: every send looks, alone.
 */
export class PauseChecks {
  /** Agents found unpaused, each for `checkMs` (none kept when `checkMs` is 0). */
  private readonly clear: LRUCache<string, true> | undefined;
  private readonly looking = new Map<string, { answer: Promise<FlowAcquired>; pauses: number }>();
  /** Bumped by every pause this process notes: a look that began before it says nothing about after it. */
  private pauses = 0;

  /** `checkMs`: how long a look that found no pause holds, ms. `now`: clock, ms since epoch. */
  constructor(
    private readonly checkMs: number,
    now: () => number,
  ) {
    // `ttlResolution` 0: the clock is read at each look-up (the default 1 ms caches it behind a timer per read).
    this.clear = checkMs > 0 ? new LRUCache({ max: MOST_AGENTS_KEPT, ttl: checkMs, ttlResolution: 0, perf: { now } }) : undefined;
  }

  /** The agent was found unpaused at most `checkMs` ago (and this process has not paused it since). */
  isClear(agent: string): boolean {
    return this.clear?.get(agent) === true;
  }

  /**
   * Go when the agent is clear; else the answer of `look` (the acquire), run now or shared with a look under way that
   * began after this process's last pause. A go is kept for `checkMs`. Rejects with what `look` rejects with.
   */
  async ask(agent: string, look: () => Promise<FlowAcquired>): Promise<FlowAcquired> {
    if (this.isClear(agent)) return GO;
    if (this.checkMs <= 0) return look();
    const running = this.looking.get(agent);
    if (running && running.pauses === this.pauses) return running.answer;
    const pauses = this.pauses;
    const answer = look().then((acquired) => {
      if (acquired.go && pauses === this.pauses) this.clear?.set(agent, true);
      return acquired;
    });
    const entry = { answer, pauses };
    this.looking.set(agent, entry);
    const done = () => {
      if (this.looking.get(agent) === entry) this.looking.delete(agent);
    };
    answer.then(done, done);
    return answer;
  }

  /** This process paused the agent (or is about to): its next send looks again. */
  notePause(agent: string): void {
    this.pauses++;
    this.clear?.delete(agent);
  }
}
