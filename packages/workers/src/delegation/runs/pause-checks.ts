/**
 * When this process last found each agent without a fleet-wide pause (`pauseCheckMs`), so that a send to an agent
 * without limits skips the flow-control script (agentFlow-2.lua `acquire`, which for such an agent only reads the
 * pause). Used by `flow.ts` `takeSendTurn`; docs/flow-control.md "How fast a pause reaches the other workers".
 */
import type { FlowAcquired } from '@durable-a2a/shared';

/** How many agents `PauseChecks` keeps before starting again (a forgotten agent costs one script call). */
const MOST_AGENTS_KEPT = 10_000;

const GO: FlowAcquired = { go: true };

/**
 * A look that said go holds for `checkMs`: a pause another worker writes reaches this process's sends at most
 * `checkMs` later; a pause this process writes (`notePause`) reaches its next send at once. Sends that ask while a
 * look is under way share it (one script call, not one per send). `checkMs` 0: every send looks, alone.
 */
export class PauseChecks {
  private readonly clearUntil = new Map<string, number>();
  private readonly looking = new Map<string, { answer: Promise<FlowAcquired>; pauses: number }>();
  /** Bumped by every pause this process notes: a look that began before it says nothing about after it. */
  private pauses = 0;

  /** `checkMs`: how long a look that found no pause holds, ms. `now`: clock, ms since epoch. */
  constructor(
    private readonly checkMs: number,
    private readonly now: () => number,
  ) {}

  /** The agent was found unpaused less than `checkMs` ago (and this process has not paused it since). */
  isClear(agent: string): boolean {
    const until = this.clearUntil.get(agent);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.clearUntil.delete(agent);
    return false;
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
      if (acquired.go && pauses === this.pauses) this.keepClear(agent);
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
    this.clearUntil.delete(agent);
  }

  private keepClear(agent: string): void {
    if (this.clearUntil.size >= MOST_AGENTS_KEPT) this.clearUntil.clear();
    this.clearUntil.set(agent, this.now() + this.checkMs);
  }
}
