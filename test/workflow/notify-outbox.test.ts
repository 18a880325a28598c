/**
 * The kind "an effect after the finishing write is lost": `workflow.finished` is emitted after the write that
 * finished the workflow, so a worker killed in between, a lost reply to that write (ioredis resends it, and the
 * resend is refused), or an enqueue that failed (Redis or the queue down) left the workflow finished with no event,
 * and nothing looked at it again. A workflow with a receiver now keeps its index entry `*` until the event is
 * enqueued (an outbox), and the reconcile of a finished workflow's `*` emits the event when it was never journaled.
 * `attention.needed` likewise: a workflow in NEEDS_ATTENTION keeps its `*` (looked at hourly), and its row now names
 * the version the attention was decided from (the event's occasion), so that reconcile emits a missing one.
 * The crash itself is in notify-webhooks.test.ts (crash point `advance.after-finish`); here, the reconcile's rule over
 * every finished state and every journaled stage. Real Redis, real BullMQ, a real receiver.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { notificationEventId, type WorkflowState } from '@durable-a2a/shared';
import { reconcileDelegation } from '../../packages/workers/src/delegation/runs/reconcile.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { useRedisServer } from '../harness/redis.ts';
import { startWebhookReceiver } from '../harness/webhook-receiver.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
let counter = 0;

/** A receiver that accepts, a producer and a fleet with only the notify queue (the workflows below are finished by hand, their steps never sent). */
async function setUp() {
  const receiver = await startWebhookReceiver(SECRET);
  receiver.answerWith(() => ({ kind: 'accept' }));
  const prefix = `outbox-${++counter}`;
  const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
  const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['notify'], reconcileIntervalMs: 600_000, notify: { secret: SECRET, url: receiver.url } });
  keep(receiver, producer, fleet);
  return { receiver, producer, fleet };
}

describe('workflow.finished and attention.needed are emitted at least once', () => {
  it('property: the reconcile of a finished workflow emits it exactly when it was never journaled, and drops the entry', async () => {
    const { receiver, producer, fleet } = await setUp();
    const states: WorkflowState[] = ['COMPLETED', 'FAILED', 'CANCELED', 'COMPENSATED'];
    const seen = { emitted: 0, skipped: 0 };
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...states), fc.constantFrom(undefined, 'enqueued', 'failed', 'delivered'), async (state, journaled) => {
        const workflowId = `w-${++counter}`;
        await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: 'http://127.0.0.1:9/never', message: { text: 'go' } }] });
        const row = (await producer.journal.getWorkflow(workflowId))!;
        // Finished as a finisher that died (or lost its reply) before the emit leaves it: the `*` still there.
        await producer.journal.updateWorkflow(workflowId, { state, ...(state === 'COMPLETED' ? {} : { failure: ['by hand'] }) }, row.version);
        await producer.journal.removeFromIndex({ workflowId, delegationId: 'main.1' });
        const eventId = notificationEventId({ kind: 'workflow.finished', workflowId, occasion: state });
        if (journaled) await producer.journal.recordNotification(workflowId, eventId, journaled, { kind: 'workflow.finished' });
        const entry = { workflowId, delegationId: '*' };
        expect(await producer.journal.nextCheckAt(entry)).toBeDefined();

        await reconcileDelegation(fleet.context, entry, undefined);
        expect(await producer.journal.nextCheckAt(entry)).toBeUndefined();
        const job = await fleet.context.queues.notify.getJob(eventId);
        if (journaled === undefined) {
          seen.emitted++;
          // Enqueued (and journaled so) before the entry went, then delivered (the job may be gone by now).
          expect(['enqueued', 'delivered']).toContain((await producer.journal.notification(workflowId, eventId))?.stage);
          await eventually(async () => receiver.acceptedIds().has(eventId), 'workflow.finished delivered', 30_000);
          const body = JSON.parse(receiver.received.find((request) => request.id === eventId)!.body);
          expect(body).toMatchObject({ type: 'workflow.finished', workflowId, data: { state } });
        } else {
          seen.skipped++;
          expect(job).toBeUndefined();
          expect((await producer.journal.notification(workflowId, eventId))?.stage).toBe(journaled);
        }
      }),
      { numRuns: 24 },
    );
    // Both branches were reached.
    expect(seen.emitted).toBeGreaterThan(0);
    expect(seen.skipped).toBeGreaterThan(0);
    // Each event was delivered once: no emit of a journaled event, no second emit of one the reconcile emitted.
    const ids = receiver.received.filter((request) => request.verified).map((request) => request.id);
    expect(new Set(ids).size).toBe(ids.length);
  }, 120_000);

  it("a workflow that FAILED with an agent's megabyte of reasons: its workflow.finished is sent (the reasons cut), and its entry goes", async () => {
    const { receiver, producer, fleet } = await setUp();
    const workflowId = `huge-${++counter}`;
    await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: 'http://127.0.0.1:9/never', message: { text: 'go' } }] });
    const row = (await producer.journal.getWorkflow(workflowId))!;
    const reason = `main: ${'at frame (file.ts:1:1)\n'.repeat(50_000)}`;
    await producer.journal.updateWorkflow(workflowId, { state: 'FAILED', failure: [reason] }, row.version);
    await producer.journal.removeFromIndex({ workflowId, delegationId: 'main.1' });
    const entry = { workflowId, delegationId: '*' };
    await reconcileDelegation(fleet.context, entry, undefined);
    // Before, the event was refused as too large when built: the entry stayed and the event was never sent.
    expect(await producer.journal.nextCheckAt(entry)).toBeUndefined();
    const eventId = notificationEventId({ kind: 'workflow.finished', workflowId, occasion: 'FAILED' });
    await eventually(async () => receiver.acceptedIds().has(eventId), 'workflow.finished delivered', 30_000);
    const body = JSON.parse(receiver.received.find((request) => request.id === eventId)!.body) as { data: { failure: string[] } };
    expect(body.data.failure).toHaveLength(1);
    expect(body.data.failure[0]!.endsWith('…')).toBe(true);
    expect(reason.startsWith(body.data.failure[0]!.slice(0, -1))).toBe(true);
  });

  it('property: the reconcile of a workflow waiting for a person emits attention.needed exactly when it was never journaled, and keeps the entry', async () => {
    const { receiver, producer, fleet } = await setUp();
    const seen = { emitted: 0, skipped: 0 };
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<'AMBIGUOUS_SEND' | 'COMPENSATION_FAILED'>('AMBIGUOUS_SEND', 'COMPENSATION_FAILED'), fc.constantFrom(undefined, 'enqueued', 'failed', 'delivered'), async (code, journaled) => {
        const workflowId = `a-${++counter}`;
        await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: 'http://127.0.0.1:9/never', message: { text: 'go' } }] });
        const row = (await producer.journal.getWorkflow(workflowId))!;
        // As the deciding worker writes it, then dies before its emit.
        const attention = { code, message: 'a person decides', delegationId: 'main.1', fromVersion: row.version };
        await producer.journal.updateWorkflow(workflowId, { state: 'NEEDS_ATTENTION', attention }, row.version);
        await producer.journal.removeFromIndex({ workflowId, delegationId: 'main.1' });
        const eventId = notificationEventId({ kind: 'attention.needed', workflowId, occasion: row.version });
        if (journaled) await producer.journal.recordNotification(workflowId, eventId, journaled, { kind: 'attention.needed' });
        const entry = { workflowId, delegationId: '*' };

        expect(await reconcileDelegation(fleet.context, entry, undefined)).toBe('workflow-needs-attention');
        // Still waiting for a person: looked at again, later.
        expect(await producer.journal.nextCheckAt(entry)).toBeGreaterThan(Date.now() + 60_000);
        const job = await fleet.context.queues.notify.getJob(eventId);
        if (journaled === undefined) {
          seen.emitted++;
          expect(['enqueued', 'delivered']).toContain((await producer.journal.notification(workflowId, eventId))?.stage);
          await eventually(async () => receiver.acceptedIds().has(eventId), 'attention.needed delivered', 30_000);
          const body = JSON.parse(receiver.received.find((request) => request.id === eventId)!.body);
          expect(body).toMatchObject({ type: 'attention.needed', workflowId, data: { code, delegationId: 'main.1' } });
        } else {
          seen.skipped++;
          expect(job).toBeUndefined();
        }
        // A second look emits nothing more.
        await reconcileDelegation(fleet.context, entry, undefined);
        expect(receiver.received.filter((request) => request.id === eventId).length).toBeLessThanOrEqual(1);
      }),
      { numRuns: 16 },
    );
    expect(seen.emitted).toBeGreaterThan(0);
    expect(seen.skipped).toBeGreaterThan(0);
  }, 120_000);
});
