/**
 * A person's decision on a failed compensation (COMPENSATION_FAILED) ends or moves the workflow, never
 * back to the same attention (the new-user trial's loop: abandon answered RUNNING, then the same
 * NEEDS_ATTENTION again, forever). Real @a2a-js/sdk agents: the flight's undo goes to Car agent 1, which
 * rejects it; then `abandon` (FAILED, the flight knowingly left booked, named in `failure`), or `retry`
 * once the agent is fixed (a new compensation attempt with a new messageId, COMPENSATED). The decision
 * stays visible once the workflow finished and was compacted: in `producer.get`, the HTTP API's view and
 * the CLI (`abandonedCompensations` / `retryApproved`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WorkflowFinishedError, createProducer, type Producer, type WorkflowView } from '@durable-a2a/producer';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { run } from '@durable-a2a/cli';
import { useRedisServer } from '../harness/redis.ts';
import { rejects } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { bookingBehaviour } from '../harness/travel.ts';
import { useTravelCast } from '../harness/travel-suite.ts';
import { TEST_API_TOKEN, authorized, listenOnLoopback, startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
const travel = useTravelCast();
const running: { producer?: Producer; fleet?: Fleet; app?: ApiServer; apiUrl?: string } = {};
let counter = 0;

afterEach(async () => {
  await running.fleet?.close();
  await running.app?.close();
  await running.producer?.close();
  Object.assign(running, { fleet: undefined, producer: undefined, app: undefined, apiUrl: undefined });
  travel().car1.setBehaviour(rejects('no cars left at this location'));
});

/** A producer and a worker fleet on their own key prefix, with the flight and car agents registered. */
async function setUp(): Promise<Producer> {
  const prefix = `attention${++counter}`;
  const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
  running.producer = producer;
  for (const agent of [travel().flight, travel().car1, travel().car2]) await producer.registerAgent(agent.cardUrl);
  running.fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
  running.app = startTestServer({ redisUrl: redisServer().url, prefix, producer });
  return producer;
}

/** The CLI's `show` of workflow `id` against the running API, human and `--json`. */
async function cliShow(id: string): Promise<{ text: string; json: WorkflowView }> {
  running.apiUrl ??= await listenOnLoopback(running.app!);
  const env = { DURABLE_A2A_URL: running.apiUrl, DURABLE_A2A_TOKEN: TEST_API_TOKEN };
  const shown = async (argv: string[]) => {
    let stdout = '';
    const code = await run(argv, { stdout: (text) => (stdout += text), stderr: () => undefined, env });
    expect(code).toBe(0);
    return stdout;
  };
  return { text: await shown(['show', id]), json: JSON.parse(await shown(['--json', 'show', id])) as WorkflowView };
}

/** A finished workflow's view (compacted) carries the person's decision in producer.get, over HTTP and in the CLI. */
async function expectDecisionShown(producer: Producer, id: string, decision: Pick<WorkflowView, 'retryApproved' | 'abandonedCompensations'>, line: string): Promise<void> {
  expect(await producer.journal.isCompacted(id)).toBe(true);
  const view = await producer.get(id);
  expect({ retryApproved: view.retryApproved, abandonedCompensations: view.abandonedCompensations }).toEqual({ retryApproved: undefined, abandonedCompensations: undefined, ...decision });
  const response = await authorized(running.app!, { method: 'GET', url: `/v1/workflows/${id}` });
  expect(response.statusCode, response.body).toBe(200);
  expect(response.json()).toEqual(JSON.parse(JSON.stringify(view)));
  const { text, json } = await cliShow(id);
  expect(text).toContain(line);
  expect(json).toMatchObject(decision);
}

/** The trial's workflow: the flight's undo is sent to Car agent 1 (which rejects everything), then the car fails everywhere. */
const undoRejected = (workflowId: string) => ({
  workflowId,
  maxAttemptsPerStep: 2,
  steps: [
    { name: 'flight', skill: 'book-flight', message: { text: 'Book a flight LHR to JFK' }, compensation: { agent: travel().car1.cardUrl, message: { text: 'Cancel the flight booking' } } },
    { name: 'car', skill: 'rent-car', message: { text: 'Rent a car at JFK' } },
  ],
});

const until = (producer: Producer, id: string, states: string[]) =>
  eventually(async () => {
    const view = await producer.get(id);
    return states.includes(view.state) && view;
  }, `workflow ${id} in ${states.join('/')}`, 30_000);
const flightOf = (view: WorkflowView) => view.steps.find((step) => step.name === 'flight')!;
/** The compensations Car agent 1 was sent (SendMessage calls carrying `durableA2a.compensates`). */
const undosSent = () => travel().car1.receivedMessages.filter((message) => (message.metadata?.durableA2a as { compensates?: unknown } | undefined)?.compensates !== undefined);

async function compensationFailed(producer: Producer, id: string): Promise<WorkflowView> {
  const view = await until(producer, id, ['NEEDS_ATTENTION', 'COMPENSATED', 'FAILED']);
  expect(view.state).toBe('NEEDS_ATTENTION');
  expect(view.attention).toMatchObject({ code: 'COMPENSATION_FAILED', delegationId: 'flight.1.undo' });
  expect(flightOf(view).compensations.map((undo) => [undo.delegationId, undo.state])).toEqual([['flight.1.undo', 'REJECTED']]);
  return view;
}

describe('a person resolves a failed compensation (COMPENSATION_FAILED)', () => {
  it('abandon: FAILED naming the undo that failed and the effect left in place; a second abandon is refused, nothing sent again', async () => {
    const producer = await setUp();
    const sentBefore = undosSent().length;
    const { id } = await producer.startWorkflow(undoRejected('undo-abandon'));
    const attention = await compensationFailed(producer, id);
    const flight = flightOf(attention).attempts[0]!;
    expect(undosSent().length - sentBefore).toBe(1);

    expect(await producer.resolve(id, 'abandon')).toEqual({ state: 'RUNNING' });
    const view = await until(producer, id, ['FAILED', 'COMPENSATED', 'CANCELED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('FAILED');
    expect(view.attention).toBeUndefined();
    const failure = view.failure!.join('\n');
    expect(failure).toContain('abandoned by a person (COMPENSATION_FAILED): flight.1.undo ended REJECTED: no cars left at this location');
    expect(failure).toContain('flight.1 left in place: a person abandoned its compensation flight.1.undo (REJECTED');
    expect(failure).toContain('step car exhausted its budget of 2'); // why it was compensating in the first place
    // The journal: the flight booked once, its one undo rejected, nothing retried behind the person's back.
    expect(flightOf(view).attempts.map((attempt) => attempt.state)).toEqual(['COMPLETED']);
    expect(flightOf(view).compensations.map((undo) => [undo.delegationId, undo.state])).toEqual([['flight.1.undo', 'REJECTED']]);
    expect(travel().flight.sendMessageCount(flight.messageId)).toBe(1);
    expect(travel().bookings.booking(flight.messageId)?.status).toBe('booked');
    expect(undosSent().length - sentBefore).toBe(1);
    // The journal's workflow row (compacted once finished) keeps which compensation the person gave up.
    expect((await producer.journal.getWorkflow(id))!.abandonedCompensations).toEqual(['flight.1.undo']);
    // The views show it too, after the workflow finished and was compacted: the undo that will never happen.
    await expectDecisionShown(producer, id, { abandonedCompensations: ['flight.1.undo'] }, '  compensation given up by a person: flight.1.undo');
    expect(flightOf(await producer.get(id)).compensations.map((undo) => [undo.delegationId, undo.abandoned])).toEqual([['flight.1.undo', true]]);
    expect((await cliShow(id)).text).toMatch(/compensation flight\.1\.undo {2}REJECTED[^\n]*\n(?: {6}[^\n]*\n)* {6}given up by a person: this undo will never happen/);

    // A second abandon: refused (the workflow is finished), not another round of the loop.
    await expect(producer.resolve(id, 'abandon')).rejects.toBeInstanceOf(WorkflowFinishedError);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = await producer.get(id);
    expect(after.state).toBe('FAILED');
    expect(after.failure).toEqual(view.failure);
    expect(undosSent().length - sentBefore).toBe(1);
  });

  it('retry after the agent is fixed: a new compensation attempt (new messageId) undoes the flight, COMPENSATED', async () => {
    const producer = await setUp();
    const { id } = await producer.startWorkflow(undoRejected('undo-retry'));
    const attention = await compensationFailed(producer, id);
    const flight = flightOf(attention).attempts[0]!;
    travel().car1.setBehaviour(bookingBehaviour(travel().bookings.url, 'flight'));
    const sentBefore = undosSent().length;

    expect(await producer.resolve(id, 'retry')).toEqual({ state: 'RUNNING' });
    const view = await until(producer, id, ['COMPENSATED', 'FAILED', 'CANCELED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('COMPENSATED');
    const undos = flightOf(view).compensations;
    expect(undos.map((undo) => [undo.delegationId, undo.state])).toEqual([
      ['flight.1.undo', 'REJECTED'],
      ['flight.1.undo-2', 'COMPLETED'],
    ]);
    expect(undos[1]!.messageId).not.toBe(undos[0]!.messageId);
    const sent = undosSent().slice(sentBefore);
    expect(sent.map((message) => message.messageId)).toEqual([undos[1]!.messageId]);
    expect(travel().car1.sendMessageCount(undos[1]!.messageId)).toBe(1);
    expect(travel().flight.sendMessageCount(flight.messageId)).toBe(1);
    expect(travel().bookings.booking(flight.messageId)?.status).toBe('cancelled');
    await expectDecisionShown(producer, id, { retryApproved: ['flight.1.undo'] }, '  sent again by a person: flight.1.undo');
    expect(undos.map((undo) => undo.abandoned)).toEqual([undefined, undefined]);
    await expect(producer.resolve(id, 'retry')).rejects.toBeInstanceOf(WorkflowFinishedError);
  });
});
