/**
 * `PauseChecks` (`delegation/runs/flow.ts`): how long a send to an agent without limits trusts this process's last
 * look at the agent's fleet-wide pause (`pauseCheckMs`), and that a pause this process writes is seen at once.
 */
import { describe, expect, it } from 'vitest';
import { PauseChecks } from '../src/delegation/runs/flow.ts';

const clock = () => {
  let now = 1_000_000;
  return { now: () => now, advance: (ms: number) => (now += ms) };
};

describe('PauseChecks', () => {
  it('a look that found no pause holds for checkMs, not a millisecond longer; an agent never looked at is asked', () => {
    const time = clock();
    const checks = new PauseChecks(1_000, time.now);
    expect(checks.isClear('a')).toBe(false);
    checks.noteClear('a', checks.startCheck());
    expect(checks.isClear('a')).toBe(true);
    expect(checks.isClear('b')).toBe(false);
    time.advance(999);
    expect(checks.isClear('a')).toBe(true);
    time.advance(1);
    expect(checks.isClear('a')).toBe(false);
  });

  it("a pause this process notes is seen by its next send at once, and a look begun before it does not clear the agent again", () => {
    const checks = new PauseChecks(1_000, clock().now);
    checks.noteClear('a', checks.startCheck());
    const before = checks.startCheck();
    checks.notePause('a');
    expect(checks.isClear('a')).toBe(false);
    checks.noteClear('a', before);
    expect(checks.isClear('a')).toBe(false);
    checks.noteClear('a', checks.startCheck());
    expect(checks.isClear('a')).toBe(true);
  });

  it('checkMs 0: every send asks', () => {
    const checks = new PauseChecks(0, clock().now);
    checks.noteClear('a', checks.startCheck());
    expect(checks.isClear('a')).toBe(false);
  });
});
