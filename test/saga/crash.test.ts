/**
 * Workflows and sagas across worker process crashes (crash windows 5, 6, 7):
 * a parked question survives a restart; compensation killed halfway runs each
 * undo exactly once, in reverse order; field case R24.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowView } from '@durable-a2a/producer';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { rejects } from '../harness/agent-behaviours.ts';
import { eventually } from '../harness/fleet.ts';
import { useTravelCrashScene } from '../harness/crash-scene.ts';
import { bookingBehaviour, registerTravelCast, travelWorkflow } from '../harness/travel.ts';

const scene = useTravelCrashScene('sagacrash');

/** A producer under a fresh prefix, the cast registered with it. */
async function setUp() {
  const { producer } = scene.setUp();
  await registerTravelCast(producer, scene.agents());
  return { producer, cast: scene.agents() };
}

/** A worker process on the current prefix, once it is ready. */
async function spawn(environment: Record<string, string> = {}) {
  const worker = scene.spawn(environment);
  await worker.ready;
  return worker;
}

const until = (id: string, states: string[]) => scene.reached(id, (view) => states.includes(view.state), 40_000);

const stepAttempt = (view: WorkflowView, step: string, index = 0) => view.steps.find((candidate) => candidate.name === step)!.attempts[index]!;

describe('workflows across crashes', () => {
  it('the hotel question survives a killed fleet; the reply goes out on the same task and the step completes', async () => {
    const { producer, cast } = await setUp();
    const first = await spawn();
    const { id } = await producer.startWorkflow({ ...travelWorkflow('hotel-crash'), steps: travelWorkflow('hotel-crash').steps.slice(0, 2) });
    const [question] = await eventually(async () => {
      const open = await producer.questions(id);
      return open.length > 0 && open;
    }, 'question');
    await first.kill('SIGKILL');
    const stillOpen = await producer.questions(id);
    expect(stillOpen).toEqual([question]);
    expect(question!.text).toBe('two rooms or one?');
    await spawn();
    const reply = await producer.reply(id, 'one', 'hotel');
    const view = await until(id, ['COMPLETED']);
    const hotel = stepAttempt(view, 'hotel');
    expect(hotel.taskId).toBe(question!.taskId);
    const followUp = cast.hotel.receivedMessages.find((message) => message.messageId === reply.messageId)!;
    expect(followUp).toMatchObject({ taskId: question!.taskId, contextId: question!.contextId, text: 'one' });
    expect(cast.hotel.sendMessageCount(hotel.messageId)).toBe(1);
    expect(cast.bookings.booking(hotel.messageId)?.details).toEqual({ rooms: 'one' });
  });

  it('a worker killed in the middle of compensation: each undo runs exactly once, in reverse order', async () => {
    const { producer, cast } = await setUp();
    const crashing = await spawn({ DA2A_CRASH_AT: 'compensate.after-intent@hotel' });
    const { id } = await producer.startWorkflow(travelWorkflow('undo-crash'));
    const [question] = await eventually(async () => {
      const open = await producer.questions(id);
      return open.length > 0 && open;
    }, 'question');
    await producer.reply(id, 'two', question!.step);
    expect((await crashing.exited).signal).toBe('SIGKILL');
    const halfway = await producer.get(id);
    expect(halfway.state).toBe('COMPENSATING');
    expect(halfway.steps.find((step) => step.name === 'hotel')!.compensations.map((undo) => undo.state)).toEqual(['INTENT']);
    const cancelsBefore = cast.bookings.cancelOrder.length;

    await spawn();
    const view = await until(id, ['COMPENSATED', 'NEEDS_ATTENTION', 'FAILED']);
    expect(view.state).toBe('COMPENSATED');
    const hotel = stepAttempt(view, 'hotel');
    const flight = stepAttempt(view, 'flight');
    expect(cast.bookings.cancelOrder.slice(cancelsBefore)).toEqual([hotel.messageId, flight.messageId]);
    const cancels = cast.bookings.counts().cancels;
    expect(cancels.get(hotel.messageId)).toBe(1);
    expect(cancels.get(flight.messageId)).toBe(1);
    for (const step of ['hotel', 'flight']) {
      const [undo] = view.steps.find((candidate) => candidate.name === step)!.compensations;
      const agent = step === 'hotel' ? cast.hotel : cast.flight;
      expect(agent.sendMessageCount(undo!.messageId)).toBe(1);
    }
  });
});

describe('R24: compensation for a step whose outcome is unknown', () => {
  let reserve: DemoAgentHandle;
  let charge: DemoAgentHandle;
  let ship: DemoAgentHandle;
  beforeAll(async () => {
    const cast = scene.agents();
    reserve = await startDemoAgent({ name: 'reserve', behaviour: bookingBehaviour(cast.bookings.url, 'reserve') });
    charge = await startDemoAgent({ name: 'charge', behaviour: bookingBehaviour(cast.bookings.url, 'charge') });
    ship = await startDemoAgent({ name: 'ship', behaviour: rejects('address not deliverable') });
  });
  afterAll(async () => {
    await Promise.all([reserve.close(), charge.close(), ship.close()]);
  });

  it('S2 is reconciled first (found by messageId), then S2 and S1 are undone in reverse order, each undo sent once across a crash', async () => {
    const { producer, cast } = await setUp();
    const step = (name: string, agent: DemoAgentHandle) => ({
      name,
      agent: agent.cardUrl,
      message: { text: `${name} order 42` },
      compensation: { agent: agent.cardUrl, message: { text: `undo ${name} of order 42` } },
    });
    // First fleet: S2's SendMessage reaches the agent, the answer is lost (crash before recording).
    const first = await spawn({ DA2A_CRASH_AT: 'send.after-request@charge' });
    const { id } = await producer.startWorkflow({
      workflowId: 'r24',
      maxAttemptsPerStep: 1,
      steps: [step('reserve', reserve), step('charge', charge), { name: 'ship', agent: ship.cardUrl, message: { text: 'ship order 42' } }],
    });
    expect((await first.exited).signal).toBe('SIGKILL');
    const lost = (await producer.get(id)).steps[1]!.attempts[0]!;
    expect(lost.state).toBe('INTENT');
    expect(lost.taskId).toBeUndefined();
    // Second fleet: adopts S2, S3 fails, compensation starts with S2 and crashes right after its intent.
    const second = await spawn({ DA2A_CRASH_AT: 'compensate.after-intent@charge' });
    expect((await second.exited).signal).toBe('SIGKILL');
    const cancelsBefore = cast.bookings.cancelOrder.length;
    // Third fleet finishes.
    await spawn();
    const view = await until(id, ['COMPENSATED', 'NEEDS_ATTENTION', 'FAILED']);
    expect(view.state).toBe('COMPENSATED');
    const s1 = stepAttempt(view, 'reserve');
    const s2 = stepAttempt(view, 'charge');
    expect(s2).toMatchObject({ state: 'COMPLETED', resendCount: 0 });
    expect(charge.sendMessageCount(s2.messageId)).toBe(1);
    expect(cast.bookings.cancelOrder.slice(cancelsBefore)).toEqual([s2.messageId, s1.messageId]);
    const undo2 = view.steps[1]!.compensations[0]!;
    const undo1 = view.steps[0]!.compensations[0]!;
    expect(new Set([undo1.messageId, undo2.messageId, s1.messageId, s2.messageId]).size).toBe(4);
    expect(charge.sendMessageCount(undo2.messageId)).toBe(1);
    expect(reserve.sendMessageCount(undo1.messageId)).toBe(1);
  });
});
