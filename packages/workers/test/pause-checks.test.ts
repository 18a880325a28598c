/**
 * `PauseChecks` (`delegation/runs/pause-checks.ts`): how long a send to an agent without limits trusts this process's
 * last look at the agent's fleet-wide pause (`pauseCheckMs`), that sends asking meanwhile share one look, and that a
 * pause this process writes is seen at once.
 */
import { describe, expect, it } from 'vitest';
import type { FlowAcquired } from '@durable-a2a/shared';
import { PauseChecks } from '../src/delegation/runs/pause-checks.ts';

const clock = () => {
  let now = 1_000_000;
  return { now: () => now, advance: (ms: number) => (now += ms) };
};
const PAUSED: FlowAcquired = { go: false, reason: 'paused', waitMs: 5_000 };

/** A look whose answer the test gives, counting how often it ran. */
const looks = () => {
  const pending: ((answer: FlowAcquired) => void)[] = [];
  return {
    look: () => new Promise<FlowAcquired>((resolve) => pending.push(resolve)),
    get count() {
      return pending.length;
    },
    answer: (index: number, answer: FlowAcquired) => pending[index]!(answer),
  };
};

describe('PauseChecks', () => {
  it('a look that said go holds for checkMs, not a millisecond longer; an agent never looked at is looked at', async () => {
    const time = clock();
    const checks = new PauseChecks(1_000, time.now);
    const lookAt = looks();
    expect(checks.isClear('a')).toBe(false);
    const first = checks.ask('a', lookAt.look);
    lookAt.answer(0, { go: true });
    expect(await first).toEqual({ go: true });
    expect(checks.isClear('a')).toBe(true);
    expect(await checks.ask('a', lookAt.look)).toEqual({ go: true });
    expect(lookAt.count).toBe(1);
    expect(checks.isClear('b')).toBe(false);
    // lru-cache's ttl: an entry is stale once its age exceeds checkMs (age checkMs itself is still fresh).
    time.advance(1_000);
    expect(checks.isClear('a')).toBe(true);
    time.advance(1);
    expect(checks.isClear('a')).toBe(false);
  });

  it('sends asking while a look is under way share it: one look, every one of them gets its answer (a pause too, never kept)', async () => {
    const checks = new PauseChecks(1_000, clock().now);
    const lookAt = looks();
    const asked = [checks.ask('a', lookAt.look), checks.ask('a', lookAt.look), checks.ask('a', lookAt.look)];
    expect(lookAt.count).toBe(1);
    lookAt.answer(0, PAUSED);
    expect(await Promise.all(asked)).toEqual([PAUSED, PAUSED, PAUSED]);
    expect(checks.isClear('a')).toBe(false);
    void checks.ask('a', lookAt.look);
    expect(lookAt.count).toBe(2);
  });

  it('a pause this process notes is seen by its next send at once; a look begun before it is neither shared after it nor kept', async () => {
    const checks = new PauseChecks(1_000, clock().now);
    const lookAt = looks();
    const before = checks.ask('a', lookAt.look);
    checks.notePause('a');
    const after = checks.ask('a', lookAt.look);
    expect(lookAt.count).toBe(2);
    lookAt.answer(0, { go: true });
    expect(await before).toEqual({ go: true });
    expect(checks.isClear('a')).toBe(false);
    lookAt.answer(1, PAUSED);
    expect(await after).toEqual(PAUSED);
    expect(checks.isClear('a')).toBe(false);
  });

  it('a look that fails fails every send that shared it, and the next send looks again', async () => {
    const checks = new PauseChecks(1_000, clock().now);
    let calls = 0;
    const failing = () => (calls++, Promise.reject(new Error('redis down')));
    await expect(Promise.all([checks.ask('a', failing), checks.ask('a', failing)])).rejects.toThrow('redis down');
    expect(calls).toBe(1);
    await expect(checks.ask('a', failing)).rejects.toThrow('redis down');
    expect(calls).toBe(2);
  });

  it('at most 10,000 agents are kept: a new one forgets the least recently looked at, not all of them', async () => {
    const checks = new PauseChecks(60_000, clock().now);
    const go = () => Promise.resolve<FlowAcquired>({ go: true });
    for (let index = 0; index < 10_000; index++) await checks.ask(`agent-${index}`, go);
    expect(checks.isClear('agent-0')).toBe(true); // looked at again: now the most recent
    await checks.ask('one-more', go);
    expect(checks.isClear('one-more')).toBe(true);
    expect(checks.isClear('agent-0')).toBe(true);
    expect(checks.isClear('agent-1')).toBe(false);
    expect(checks.isClear('agent-2')).toBe(true);
    expect(checks.isClear('agent-9999')).toBe(true);
  });

  it('checkMs 0: every send looks, alone', async () => {
    const checks = new PauseChecks(0, clock().now);
    let calls = 0;
    const go = () => (calls++, Promise.resolve<FlowAcquired>({ go: true }));
    await Promise.all([checks.ask('a', go), checks.ask('a', go)]);
    await checks.ask('a', go);
    expect(calls).toBe(3);
    expect(checks.isClear('a')).toBe(false);
  });
});
