/**
 * Workflows, re-delegation and sagas end to end (docs/concepts.md "Workflow states"): the travel
 * scenario against real @a2a-js/sdk agents and the booking service.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer, type WorkflowView } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { rejects, runsSlowly } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { bookingBehaviour, bookingVerifier, startTravelCast, travelWorkflow, type TravelCast } from '../harness/travel.ts';

const redisServer = useRedisServer();
let cast: TravelCast;
let producer: Producer;
let fleet: Fleet | undefined;
let counter = 0;

beforeAll(async () => {
  cast = await startTravelCast();
});
afterAll(async () => {
  await cast.close();
});
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
  await producer?.close();
  cast.flight.setBehaviour(bookingBehaviour(cast.bookings.url, 'flight'));
  cast.car2.setBehaviour(rejects('fleet fully booked'));
});

async function setUp() {
  const prefix = `saga${++counter}`;
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
  for (const agent of [cast.flight, cast.hotel, cast.car1, cast.car2]) await producer.registerAgent(agent.cardUrl);
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, verifiers: { booking: bookingVerifier(cast.bookings.url) } });
}

const until = (id: string, states: string[]) =>
  eventually(async () => {
    const view = await producer.get(id);
    return states.includes(view.state) && view;
  }, `workflow ${id} in ${states.join('/')}`, 30_000);

const answerQuestions = async (id: string) => {
  const [question] = await eventually(async () => {
    const open = await producer.questions(id);
    return open.length > 0 && open;
  }, 'the hotel question');
  expect(question!.text).toBe('two rooms or one?');
  await producer.reply(id, 'two', 'hotel');
};

const attempt = (view: WorkflowView, step: string, index = 0) => view.steps.find((candidate) => candidate.name === step)!.attempts[index]!;

describe('travel saga', () => {
  it('car rejected everywhere: re-delegated with the first task carried forward, then hotel and flight undone in reverse order, verified', async () => {
    await setUp();
    const { id } = await producer.startWorkflow(travelWorkflow('trip-1'));
    await answerQuestions(id);
    const view = await until(id, ['COMPENSATED', 'FAILED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('COMPENSATED');

    const flight = attempt(view, 'flight');
    const hotel = attempt(view, 'hotel');
    expect(flight).toMatchObject({ state: 'COMPLETED', effect: 'present' });
    expect(hotel).toMatchObject({ state: 'COMPLETED', effect: 'present' });
    // Re-delegation: car agent 2 received the first task id and the reason.
    const cars = view.steps.find((step) => step.name === 'car')!.attempts;
    expect(cars.map((car) => [car.agentCardUrl, car.state])).toEqual([
      [cast.car1.cardUrl, 'REJECTED'],
      [cast.car2.cardUrl, 'REJECTED'],
    ]);
    const second = cast.car2.receivedMessages.find((message) => message.messageId === cars[1]!.messageId)!;
    const carried = (second.metadata!.durableA2a as { previousAttempts: { taskId: string; reason: string }[] }).previousAttempts;
    expect(carried[0]!.taskId).toBe(cars[0]!.taskId);
    expect(carried[0]!.reason).toContain('no cars left at this location');
    expect(second.text).toContain(cars[0]!.taskId!);
    // Compensation: hotel then flight, each exactly once, each verified gone.
    expect(cast.bookings.cancelOrder).toEqual([hotel.messageId, flight.messageId]);
    expect(cast.bookings.booking(hotel.messageId)?.status).toBe('cancelled');
    expect(cast.bookings.booking(flight.messageId)?.status).toBe('cancelled');
    for (const step of ['hotel', 'flight']) {
      const undo = view.steps.find((candidate) => candidate.name === step)!.compensations;
      expect(undo).toHaveLength(1);
      expect(undo[0]).toMatchObject({ state: 'COMPLETED', effect: 'absent' });
      expect(undo[0]!.messageId).not.toBe(attempt(view, step).messageId);
    }
    expect(cast.flight.sendMessageCount(flight.messageId)).toBe(1);
  });

  it('the user cancels while the car is being rented: CancelTask, then reverse compensation', async () => {
    await setUp();
    cast.car2.setBehaviour(runsSlowly(30_000));
    const { id } = await producer.startWorkflow(travelWorkflow('trip-cancel'));
    await answerQuestions(id);
    await eventually(async () => {
      const view = await producer.get(id);
      const cars = view.steps.find((step) => step.name === 'car')!.attempts;
      return cars.length === 2 && cars[1]!.state === 'WORKING';
    }, 'car 2 working');
    const cancelsBefore = cast.bookings.cancelOrder.length;
    await producer.cancel(id);
    const view = await until(id, ['COMPENSATED', 'CANCELED', 'FAILED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('COMPENSATED');
    expect(view.cancelRequested).toBe(true);
    expect(attempt(view, 'car', 1).state).toBe('CANCELED');
    expect(cast.bookings.cancelOrder.slice(cancelsBefore)).toEqual([attempt(view, 'hotel').messageId, attempt(view, 'flight').messageId]);
  });

  it('a budget of 3 across 5 failing agents stops at 3, with every reason', async () => {
    await setUp();
    const extra = await Promise.all(
      [1, 2, 3].map((index) => import('../harness/agent.ts').then(({ startDemoAgent }) =>
        startDemoAgent({ name: `Car agent ${index + 2}`, skills: [{ id: 'rent-car', name: 'rent', description: 'rent', tags: [] }], behaviour: rejects(`refusal ${index + 2}`) }),
      )),
    );
    try {
      for (const agent of extra) await producer.registerAgent(agent.cardUrl);
      const carAgents = [cast.car1, cast.car2, ...extra];
      const sentBefore = carAgents.map((agent) => agent.sendMessageCount()).reduce((a, b) => a + b, 0);
      const { id } = await producer.startWorkflow({ workflowId: 'budget', maxAttemptsPerStep: 3, steps: [{ name: 'car', skill: 'rent-car', message: { text: 'Rent a car' } }] });
      const view = await until(id, ['FAILED']);
      expect(view.steps[0]!.attempts).toHaveLength(3);
      expect(view.failure!.join(' ')).toContain('exhausted its budget of 3');
      expect(view.failure!.filter((reason) => reason.includes('REJECTED'))).toHaveLength(3);
      const sent = carAgents.map((agent) => agent.sendMessageCount()).reduce((a, b) => a + b, 0);
      expect(sent - sentBefore).toBe(3);
    } finally {
      await Promise.all(extra.map((agent) => agent.close()));
    }
  });

  it('a step rejected everywhere while another is parked on a question: the parked one is canceled, the workflow ends', async () => {
    await setUp();
    const verifier = { name: 'booking', params: {} };
    const { id } = await producer.startWorkflow({
      workflowId: 'stuck-question',
      maxAttemptsPerStep: 2,
      steps: [
        { name: 'hotel', after: [], skill: 'book-hotel', message: { text: 'Book a hotel' }, verifier, compensation: { skill: 'book-hotel', message: { text: 'Cancel it' }, verifier } },
        { name: 'car', after: [], skill: 'rent-car', message: { text: 'Rent a car' } },
      ],
    });
    const view = await until(id, ['FAILED', 'COMPENSATED', 'NEEDS_ATTENTION', 'CANCELED']);
    expect(attempt(view, 'hotel').state).toBe('CANCELED');
    expect(view.steps.find((step) => step.name === 'car')!.attempts.map((car) => car.state)).toEqual(['REJECTED', 'REJECTED']);
    expect(view.state).toBe('FAILED');
    expect(await producer.questions(id)).toEqual([]);
  });

  it('an agent that claims COMPLETED without booking is caught by verification and the step moves on', async () => {
    await setUp();
    cast.flight.setBehaviour(bookingBehaviour(cast.bookings.url, 'flight', { claimWithoutBooking: true }));
    const { id } = await producer.startWorkflow({ ...travelWorkflow('liar'), steps: travelWorkflow('liar').steps.slice(0, 1), maxAttemptsPerStep: 1 });
    const view = await until(id, ['FAILED', 'COMPENSATED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('FAILED');
    expect(attempt(view, 'flight')).toMatchObject({ state: 'COMPLETED', effect: 'absent' });
    expect(view.failure!.join(' ')).toContain('COMPLETED without effect');
  });

  it('an agent that reports FAILED after booking has its booking compensated', async () => {
    await setUp();
    cast.flight.setBehaviour(bookingBehaviour(cast.bookings.url, 'flight', { bookWithoutClaim: true }));
    const cancelsBefore = cast.bookings.cancelOrder.length;
    const { id } = await producer.startWorkflow({ ...travelWorkflow('half-done'), steps: travelWorkflow('half-done').steps.slice(0, 1), maxAttemptsPerStep: 1 });
    const view = await until(id, ['FAILED', 'COMPENSATED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('COMPENSATED');
    const flight = attempt(view, 'flight');
    expect(flight).toMatchObject({ state: 'FAILED', effect: 'present' });
    expect(cast.bookings.booking(flight.messageId)?.status).toBe('cancelled');
    expect(cast.bookings.cancelOrder.slice(cancelsBefore)).toEqual([flight.messageId]);
  });
});
