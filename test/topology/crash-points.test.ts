/**
 * Every named crash point (the `CrashPoint` union of packages/workers/src/options.ts),
 * one at a time: a worker process is SIGKILLed there while it runs the travel
 * saga (verified bookings, a question, a rejected car, compensation in reverse
 * order), then fresh workers recover from the journal alone. The same
 * invariants hold after every point: the workflow ends COMPENSATED, every
 * journaled message reached its agent exactly once, each booking was created
 * once and cancelled once (hotel before flight), and the unfinished index
 * holds nothing of the workflow.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Producer } from '@durable-a2a/producer';
import type { CrashPoint } from '@durable-a2a/workers';
import type { WorkerProcess } from '../harness/fleet.ts';
import { useTravelCrashScene } from '../harness/crash-scene.ts';
import { deliveriesOf, duplicateDeliveries, settleWorkflow, stuckIndexEntries, summary } from '../harness/invariants.ts';
import { registerTravelCast, travelWorkflow } from '../harness/travel.ts';

interface Scenario {
  /** `DA2A_CRASH_AT` of the first worker; `point@step` to hit one step only. */
  crashAt: string;
  /** Crash points of the workers that follow, before a clean one (to reach points only recovery runs). */
  then?: string[];
  why: string;
}

/**
 * Every crash point with the scenario that reaches it. `satisfies` makes the
 * compiler reject a key that is not a CrashPoint; the test below rejects a
 * CrashPoint that has no scenario.
 */
const SCENARIOS = {
  'send.before-mark': { crashAt: 'send.before-mark@flight', why: 'the card read, nothing marked or sent: another worker claims and sends once' },
  'send.after-mark': { crashAt: 'send.after-mark@flight', why: 'crash window 1: marked sending, never left: search finds nothing, resend same messageId once' },
  'send.after-request': { crashAt: 'send.after-request@flight', why: 'crash window 2: the agent accepted, no taskId journaled: adopt by messageId, no second send' },
  'follow.before-stream': {
    crashAt: 'follow.before-stream@flight',
    why: 'the send answered, its lease handed to the follow, no stream yet: the lease runs out, the reconciler reattaches, one send',
  },
  'follow.after-terminal-seen': { crashAt: 'follow.after-terminal-seen@flight', why: 'crash window 4: terminal seen, not recorded: re-read, record once' },
  'reconcile.after-search': {
    crashAt: 'send.after-request@flight',
    then: ['reconcile.after-search@flight'],
    why: 'the search found the task, the adoption was not written: search again, adopt once',
  },
  'advance.after-outcome': { crashAt: 'advance.after-outcome@flight', why: 'crash window 6: outcome recorded, next intent not written: decide again, one next intent' },
  'verify.after-check': { crashAt: 'verify.after-check@flight', why: 'verifier ran, finding not journaled: verify again, record once' },
  'compensate.after-intent': { crashAt: 'compensate.after-intent@hotel', why: 'crash window 7: undo journaled, not sent: send it once, still in reverse order' },
} satisfies Partial<Record<CrashPoint, Scenario>>;

/** Crash points the travel saga cannot reach (it registers no push config), each with the test that covers it. */
const COVERED_ELSEWHERE = {
  'send.after-give-back': 'test/topology/crash-give-back.test.ts: a worker stalled past the guard, killed after giving its mark back, before its lease release (attack33b)',
  'push.after-create': 'test/api/push-lifecycle.test.ts, P31 (c): killed after Create, before the id was journaled',
  'follow.before-finish-step': 'test/topology/crash-finish-step.test.ts: a one-step workflow, killed before its terminal status and settle (one script)',
  'follow.after-finish-step': 'test/topology/crash-finish-step.test.ts: a one-step workflow, killed right after its terminal status and settle',
  'advance.after-finish': 'test/workflow/notify-webhooks.test.ts: killed between the finishing write and workflow.finished, which the reconciler emits',
} satisfies Partial<Record<CrashPoint, string>>;

/** The union's members, read from the source (the type has no runtime list). */
function crashPointsInSource(): string[] {
  const source = readFileSync(new URL('../../packages/workers/src/options.ts', import.meta.url), 'utf8');
  const union = /export type CrashPoint\s*=([^;]+);/.exec(source);
  if (!union) throw new Error('export type CrashPoint not found in packages/workers/src/options.ts');
  return [...union[1]!.matchAll(/'([^']+)'/g)].map((match) => match[1]!).sort();
}

const scene = useTravelCrashScene('cp-');

/** A worker process on the current prefix, killed at `crashAt` when given. */
const spawn = (crashAt?: string): WorkerProcess => scene.spawn(crashAt ? { DA2A_CRASH_AT: crashAt } : {});

/** Waits for a worker to SIGKILL itself at its crash point, answering the hotel question meanwhile. */
async function crashed(worker: WorkerProcess, producer: Producer, workflowId: string, point: string): Promise<void> {
  const deadline = Date.now() + 25_000;
  let exit: { signal: NodeJS.Signals | null } | undefined;
  void worker.exited.then((value) => (exit = value));
  while (!exit) {
    if (Date.now() > deadline) throw new Error(`the worker never reached ${point}: ${JSON.stringify(summary(await producer.get(workflowId)))}`);
    const view = await producer.get(workflowId).catch(() => undefined);
    if (view && view.openQuestions.length > 0) await producer.reply(workflowId, 'two', 'hotel').catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect(exit.signal, `worker with DA2A_CRASH_AT=${point}`).toBe('SIGKILL');
}

describe('crash points', () => {
  it('covers every member of the CrashPoint union in packages/workers/src/options.ts', () => {
    expect([...Object.keys(SCENARIOS), ...Object.keys(COVERED_ELSEWHERE)].sort()).toEqual(crashPointsInSource());
  });

  for (const [point, scenario] of Object.entries(SCENARIOS) as [CrashPoint, Scenario][]) {
    it(`${point}: ${scenario.why}`, async () => {
      const { prefix, producer } = scene.setUp(`cp-${point.replace(/[^a-z]/g, '')}`);
      const cast = scene.agents();
      await registerTravelCast(producer, cast);
      const workflowId = `trip-${prefix}`;
      const first = spawn(scenario.crashAt);
      await first.ready;
      await producer.startWorkflow(travelWorkflow(workflowId));
      await crashed(first, producer, workflowId, scenario.crashAt);
      for (const next of scenario.then ?? []) {
        const worker = spawn(next);
        await worker.ready;
        await crashed(worker, producer, workflowId, next);
      }
      const cancelsBefore = cast.bookings.cancelOrder.length;
      spawn();
      const view = await settleWorkflow(producer, workflowId, 40_000);

      expect(view.state, JSON.stringify(summary(view))).toBe('COMPENSATED');
      const flight = view.steps.find((step) => step.name === 'flight')!;
      const hotel = view.steps.find((step) => step.name === 'hotel')!;
      expect(flight.attempts.map((attempt) => [attempt.state, attempt.effect])).toEqual([['COMPLETED', 'present']]);
      expect(hotel.attempts.map((attempt) => [attempt.state, attempt.effect])).toEqual([['COMPLETED', 'present']]);
      expect([...hotel.compensations, ...flight.compensations].map((undo) => [undo.state, undo.effect])).toEqual([
        ['COMPLETED', 'absent'],
        ['COMPLETED', 'absent'],
      ]);
      // Each message executed once by its agent (the crash never caused a second SendMessage).
      const agents = [cast.flight, cast.hotel, cast.car1, cast.car2];
      expect(duplicateDeliveries(deliveriesOf(view), agents)).toEqual([]);
      for (const delivery of deliveriesOf(view)) {
        const agent = agents.find((candidate) => candidate.cardUrl === delivery.agentCardUrl)!;
        expect(agent.sendMessageCount(delivery.messageId), `${delivery.delegationId} ${delivery.kind}`).toBe(1);
      }
      // Booked once, cancelled once, hotel before flight.
      const bookingKeys = [hotel.attempts[0]!.messageId, flight.attempts[0]!.messageId];
      const counts = cast.bookings.counts();
      for (const key of bookingKeys) {
        expect(counts.creates.get(key), `creates of ${key}`).toBe(1);
        expect(counts.cancels.get(key), `cancels of ${key}`).toBe(1);
        expect(cast.bookings.booking(key)?.status).toBe('cancelled');
      }
      const order = cast.bookings.cancelOrder.filter((key) => bookingKeys.includes(key));
      expect(order).toEqual(bookingKeys);
      expect(cast.bookings.cancelOrder.length - cancelsBefore).toBe(2);
      // Nothing of this workflow left for the reconciler.
      await expect.poll(() => stuckIndexEntries(producer, new Set([workflowId])), { timeout: 10_000 }).toEqual([]);
    });
  }
});
