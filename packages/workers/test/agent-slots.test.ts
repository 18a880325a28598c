/**
 * The per-process agent shares (`delegation/runs/agent-slots.ts`): work-conserving by default (an agent alone uses
 * every slot), within its share while another agent waits, a tenth kept free while it is slow, an explicit share a cap.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AgentSlots } from '../src/delegation/runs/agent-slots.ts';

const clock = () => {
  let now = 1_000_000;
  return { now: () => now, advance: (ms: number) => (now += ms) };
};
const slotsOf = (concurrency: number, time = clock(), perAgent?: number) =>
  new AgentSlots({ concurrency, perAgent, waitingMs: 3_000, slowLingerMs: 60_000, now: time.now });
const takeAll = (slots: AgentSlots, agent: string, most: number) => {
  let taken = 0;
  while (taken < most && slots.take(agent)) taken++;
  return taken;
};

describe('AgentSlots', () => {
  it('an agent alone takes every slot (no needless cap), never more', () => {
    for (const concurrency of [1, 2, 4, 20]) expect(takeAll(slotsOf(concurrency), 'a', 100)).toBe(concurrency);
  });

  it('an explicit share caps even when nobody else waits', () => {
    expect(takeAll(slotsOf(20, clock(), 3), 'a', 100)).toBe(3);
  });

  it('while another agent waits (refused within its share), an agent beyond its share gets nothing more; within its share it still does', () => {
    const time = clock();
    const slots = slotsOf(10, time);
    expect(takeAll(slots, 'a', 100)).toBe(10);
    expect(slots.take('b')).toBe(false); // full: b waits
    for (let index = 0; index < 6; index++) slots.release('a'); // a holds 4, under its share of 5
    expect(slots.take('a')).toBe(true); // 5: its share
    expect(slots.take('a')).toBe(false); // beyond it while b waits
    expect(takeAll(slots, 'b', 100)).toBe(5);
    time.advance(3_001); // b no longer waits
    slots.release('b');
    expect(slots.take('a')).toBe(true);
  });

  it('a slow agent (a send held) leaves a tenth free beyond its share, and again after its held send ended, for a while', () => {
    const time = clock();
    const slots = slotsOf(20, time);
    const ended = slots.noteHeld('a');
    expect(takeAll(slots, 'a', 100)).toBe(18);
    expect(slots.take('b')).toBe(true);
    ended();
    expect(slots.isSlow('a')).toBe(true);
    time.advance(60_001);
    expect(slots.isSlow('a')).toBe(false);
    expect(slots.take('a')).toBe(true);
  });

  it('property: any sequence of takes and releases never exceeds the concurrency or a cap, and never grants beyond the share while another agent waits', () => {
    const step = fc.oneof(
      fc.record({ op: fc.constant('take' as const), agent: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ op: fc.constant('release' as const), agent: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ op: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 4_000 }) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }), fc.array(step, { maxLength: 80 }), (concurrency, perAgent, steps) => {
        const time = clock();
        const slots = slotsOf(concurrency, time, perAgent);
        const share = perAgent ?? Math.max(1, Math.floor(concurrency / 2));
        const waitingUntil = new Map<number, number>();
        let inUse = 0;
        for (const move of steps) {
          if (move.op === 'wait') time.advance(move.ms);
          else if (move.op === 'release') {
            if (slots.heldBy(`${move.agent}`) > 0) inUse--;
            slots.release(`${move.agent}`);
          } else {
            const before = slots.heldBy(`${move.agent}`);
            const othersWait = [...waitingUntil].some(([other, until]) => other !== move.agent && until > time.now());
            const granted = slots.take(`${move.agent}`);
            if (granted) inUse++;
            else if (inUse >= concurrency && before < share) waitingUntil.set(move.agent, time.now() + 3_000);
            if (granted && before >= share) expect(othersWait).toBe(false);
            expect(inUse).toBeLessThanOrEqual(concurrency);
            if (perAgent !== undefined) expect(slots.heldBy(`${move.agent}`)).toBeLessThanOrEqual(perAgent);
            // Work-conserving: refused only when full, at a cap, or beyond the share while another waits.
            if (!granted) expect(inUse >= concurrency || before >= (perAgent ?? concurrency) || (before >= share && othersWait)).toBe(true);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
