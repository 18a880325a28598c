/**
 * Outbound notifications (docs/people.md "Notifications"): signed, stable ids, at least once through the notify queue,
 * never in the way of delegation work, nothing lost across a worker SIGKILL.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Producer } from '@durable-a2a/producer';
import { notificationEventId } from '@durable-a2a/shared';
import { startDemoAgent } from '../harness/agent.ts';
import { asksForInput, completionSteps } from '../harness/agent-behaviours.ts';
import { eventually } from '../harness/fleet.ts';
import { useCrashScene } from '../harness/crash-scene.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const RETRY = { attempts: 6, backoffMs: 100 };
// Registered before the scene's hooks, so it runs after them (after-hooks run last-registered first): the
// receiver closes once the fleet and the workers are gone.
let receiver: WebhookReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});
const scene = useCrashScene({
  prefix: 'notify',
  startAgents: () => startDemoAgent({ behaviour: asksForInput('Which city?', (answer) => completionSteps(`booked ${answer}`)) }),
  stopAgents: (agent) => agent.close(),
});

/** A producer under a fresh prefix and a webhook receiver; `notify` options go to an in-process fleet unless `fleet: false`. */
async function setUp(notify: { requestTimeoutMs?: number } = {}, { fleet = true } = {}) {
  const { producer } = scene.setUp();
  const started = await startWebhookReceiver(SECRET);
  receiver = started;
  return { producer, receiver: started, agent: scene.agents(), fleet: fleet ? await scene.startFleet({ notify: { secret: SECRET, retry: RETRY, ...notify } }) : undefined };
}

/** The open question of `id` once it is asked, with the journal's question key. */
async function questionOf(producer: Producer, id: string) {
  return eventually(async () => {
    const record = await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
    return record?.state === 'INPUT_REQUIRED' && record.questionKey ? record : undefined;
  }, `question of ${id}`);
}

describe('outbound notifications', () => {
  it('a receiver that fails twice, then accepts: every event arrives, verified, once per id after dedup', async () => {
    const { producer, fleet, receiver, agent } = await setUp();
    receiver.answerWith((_id, tries) => (tries <= 2 ? { kind: 'fail', status: 503 } : { kind: 'accept' }));
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a table', idempotencyKey: 'fails-twice', notify: { url: receiver.url } });
    const question = await questionOf(producer, id);
    await producer.reply(id, 'Lyon');
    await producer.waitFor(id, { timeoutMs: 30_000 });
    const expected = [
      notificationEventId({ kind: 'question.opened', workflowId: id, delegationId: 'main.1', occasion: question.questionKey! }),
      notificationEventId({ kind: 'workflow.finished', workflowId: id, occasion: 'COMPLETED' }),
    ];
    await eventually(async () => expected.every((eventId) => receiver.acceptedIds().has(eventId)), 'every event accepted', 30_000);
    // Every request was signed as documented; each id was tried until accepted (at least three times), and the
    // ids the receiver accepted are exactly the expected ones: none missing, none unexpected.
    expect(receiver.received.every((request) => request.verified)).toBe(true);
    expect([...receiver.acceptedIds()].sort()).toEqual([...expected].sort());
    for (const eventId of expected) expect(receiver.received.filter((request) => request.id === eventId).length).toBeGreaterThanOrEqual(3);
    // Retries send the same body (same id, same createdAt).
    for (const eventId of expected) expect(new Set(receiver.received.filter((request) => request.id === eventId).map((request) => request.body)).size).toBe(1);
    const opened = JSON.parse(receiver.received.find((request) => request.id === expected[0])!.body);
    expect(opened).toMatchObject({ type: 'question.opened', workflowId: id, delegationId: 'main.1', data: { question: 'Which city?', step: 'main' } });
    // Journaled delivered, then counted: the worker writes the stage once the receiver's answer reaches it (after the
    // receiver counted the request) and counts it after the write, so wait for both.
    const counted = async () => (await fleet!.metrics.notifications.get()).values.filter((value) => value.labels.outcome === 'delivered').reduce((sum, value) => sum + value.value, 0);
    await eventually(async () => (await counted()) >= 2, 'both deliveries journaled and counted');
    const journaled = await producer.journal.notifications(id);
    expect(Object.values(journaled).map((entry) => entry.stage)).toEqual(['delivered', 'delivered']);
    expect(await counted()).toBe(2);
  });

  it('a question that expires unanswered: question.expired arrives once, with what was done', async () => {
    const { producer, receiver, agent } = await setUp();
    receiver.answerWith(() => ({ kind: 'accept' }));
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a table', idempotencyKey: 'expires', notify: { url: receiver.url }, question: { expiresAfterMs: 1_000, onExpiry: 'cancel' } });
    const question = await questionOf(producer, id);
    const eventId = notificationEventId({ kind: 'question.expired', workflowId: id, delegationId: 'main.1', occasion: question.questionKey! });
    await eventually(async () => receiver.acceptedIds().has(eventId), 'question.expired accepted', 30_000);
    const expired = receiver.received.filter((request) => request.id === eventId);
    expect(expired.every((request) => request.verified)).toBe(true);
    expect(new Set(expired.map((request) => request.body)).size).toBe(1);
    expect(JSON.parse(expired[0]!.body)).toMatchObject({ type: 'question.expired', workflowId: id, delegationId: 'main.1', data: { step: 'main', questionKey: question.questionKey, action: 'cancel' } });
    // The worker journals the delivery once the receiver's answer reached it: after the receiver counted it.
    await eventually(async () => (await producer.journal.notification(id, eventId))?.stage === 'delivered', 'question.expired journaled delivered');
  });

  it('a receiver that hangs does not hold the delegation: it completes while the request is still open', async () => {
    const { producer, receiver, agent } = await setUp({ requestTimeoutMs: 15_000 });
    receiver.answerWith(() => ({ kind: 'hang' }));
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a table', idempotencyKey: 'hangs', notify: { url: receiver.url } });
    await questionOf(producer, id);
    // The question's notification is being delivered, and hangs (10 s and more).
    await eventually(async () => receiver.hanging() > 0, 'the receiver holds a request');
    await producer.reply(id, 'Paris');
    const view = await producer.waitFor(id, { timeoutMs: 30_000 });
    expect(view.state).toBe('COMPLETED');
    expect(receiver.hanging()).toBeGreaterThan(0);
    expect(receiver.acceptedIds().size).toBe(0);
  });

  it('a worker SIGKILLed between the finishing write and workflow.finished: the workflow kept its index entry, the reconciler emits it', async () => {
    const { producer, receiver, agent } = await setUp({}, { fleet: false });
    receiver.answerWith(() => ({ kind: 'accept' }));
    const worker = scene.spawn({ DA2A_NOTIFY_URL: receiver.url, DA2A_NOTIFY_SECRET: SECRET, DA2A_CRASH_AT: 'advance.after-finish' });
    await worker.ready;
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a table', idempotencyKey: 'killed-at-finish' });
    await questionOf(producer, id);
    await producer.reply(id, 'Lyon');
    // The workflow's finishing write happened, then the process died before the emit.
    await worker.exited;
    expect((await producer.get(id)).state).toBe('COMPLETED');
    const eventId = notificationEventId({ kind: 'workflow.finished', workflowId: id, occasion: 'COMPLETED' });
    expect(receiver.acceptedIds().has(eventId)).toBe(false);
    expect(await producer.journal.notification(id, eventId)).toBeUndefined();
    // The outbox: the workflow's entry is still in the unfinished index.
    expect(await producer.journal.nextCheckAt({ workflowId: id, delegationId: '*' })).toBeDefined();
    await scene.startFleet({ notify: { secret: SECRET, url: receiver.url, retry: RETRY } });
    await eventually(async () => receiver.acceptedIds().has(eventId), 'workflow.finished delivered by the new worker', 30_000);
    const finished = receiver.received.filter((request) => request.id === eventId);
    expect(finished.every((request) => request.verified)).toBe(true);
    expect(JSON.parse(finished[0]!.body)).toMatchObject({ type: 'workflow.finished', workflowId: id, data: { state: 'COMPLETED' } });
    await eventually(async () => (await producer.journal.unfinishedCount()) === 0, 'the entry dropped once emitted', 30_000);
    await eventually(async () => (await producer.journal.notification(id, eventId))?.stage === 'delivered', 'journaled delivered');
  });

  it('events enqueued before a worker SIGKILL are delivered after a new worker starts', async () => {
    const { producer, receiver, agent } = await setUp({}, { fleet: false });
    receiver.answerWith(() => ({ kind: 'hang' }));
    const worker = scene.spawn({ DA2A_NOTIFY_URL: receiver.url, DA2A_NOTIFY_SECRET: SECRET });
    await worker.ready;
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a table', idempotencyKey: 'killed' });
    const question = await questionOf(producer, id);
    const eventId = notificationEventId({ kind: 'question.opened', workflowId: id, delegationId: 'main.1', occasion: question.questionKey! });
    // The event is journaled enqueued and its delivery is under way in the worker when it dies.
    await eventually(async () => (await producer.journal.notification(id, eventId))?.stage === 'enqueued' && receiver.hanging() > 0, 'delivery under way');
    await worker.kill('SIGKILL');
    expect(receiver.acceptedIds().has(eventId)).toBe(false);
    receiver.answerWith(() => ({ kind: 'accept' }));
    await scene.startFleet({ notify: { secret: SECRET, url: receiver.url, retry: RETRY } });
    await eventually(async () => receiver.acceptedIds().has(eventId), 'delivered by the new worker', 30_000);
    // Journaled once the receiver's answer reached the worker: after the receiver counted it.
    await eventually(async () => (await producer.journal.notification(id, eventId))?.stage === 'delivered', 'journaled delivered');
  });
});
