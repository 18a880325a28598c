/**
 * A finished row's suspects (finished-suspects.ts), two kinds:
 * - "a note written, its event lost": the lost suspects a person is told of are noted once (noteSuspectsUnchecked-1.lua,
 *   `suspectsLostTold`), and since a row noted as told is not read again (`lostUntold`), a worker killed, or an enqueue
 *   that failed, between the note and the `duplicate.unchecked` emit left the event unsent for good. The reconcile of
 *   a finished row now emits it when it was never journaled (`emitUncheckedIfMissing`; the same event id, receivers
 *   dedupe by id), and does not settle the row until it is enqueued.
 * - "reads without a schedule": a finished row's suspect reads took no claim and kept no backoff, so every reconcile
 *   of it (a push naming it, a sweep) read the agent again at once. They now keep the unfinished row's schedule
 *   (`suspectReadTurn`, claimSuspectRound-1.lua).
 * Real redis-server, a real fleet's context and notify queue, a scripted agent, a real webhook receiver; the reconciles
 * are run one by one (`reconcileDelegation`, no reconcile worker), each as a job of its own id.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { DEFAULT_JOB_OPTIONS, SUSPECT_TASK_ID_MAX, notificationEventId, suspectReadJob, type DelegationRef } from '@durable-a2a/shared';
import { suspectRetryAt } from '../../packages/workers/src/delegation/core/policy.ts';
import { reconcileDelegation } from '../../packages/workers/src/delegation/runs/reconcile.ts';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { intentRow } from '../harness/journal-rows.ts';
import { getTaskCalls } from '../harness/push-scene.ts';
import { startScriptedAgent } from '../harness/scripted-agent.ts';
import { startWebhookReceiver } from '../harness/webhook-receiver.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
let counter = 0;

/**
 * A two-step workflow whose `main.1` FAILED at its deadline (finished by hand, never sent; `later` keeps the workflow
 * running), at an agent whose GetTask of T2 answers 503 (any other: TaskNotFound), a receiver that accepts, and a fleet
 * running only the notify queue, its clock `Date.now() + skew.ms`. `failUnchecked`: how many `duplicate.unchecked`
 * enqueues fail (the notify queue's add rejects, as with Redis or the queue down).
 */
async function finishedScene(failUnchecked = 0) {
  const prefix = `told${++counter}-${Date.now()}`;
  const receiver = await startWebhookReceiver(SECRET);
  receiver.answerWith(() => ({ kind: 'accept' }));
  const agent = await startScriptedAgent({
    GetTask: (params) => (String(params.id) === 'T2' ? { http: { status: 503, body: '{"error":"busy"}' } } : { error: { code: -32001, message: 'Task not found' } }),
  });
  const skew = { ms: 0 };
  const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
  const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['notify'], reconcileIntervalMs: 600_000, now: () => Date.now() + skew.ms, notify: { secret: SECRET, url: receiver.url } });
  keep(fleet, producer, agent, receiver);
  const notify = fleet.context.queues.notify;
  const add = notify.add.bind(notify);
  const failures = { left: failUnchecked };
  notify.add = (async (...args: Parameters<typeof add>) => {
    if (failures.left > 0 && (args[1] as { event?: { type?: string } }).event?.type === 'duplicate.unchecked') {
      failures.left--;
      throw new Error('the notify queue is down');
    }
    return add(...args);
  }) as typeof notify.add;
  const ref: DelegationRef = { workflowId: `wf-${prefix}`, delegationId: 'main.1' };
  const definition = JSON.stringify({ workflowId: ref.workflowId, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'go' } }, { name: 'later', agent: agent.cardUrl, message: { text: 'then' } }] });
  await producer.journal.createWorkflow(ref.workflowId, { state: 'RUNNING', definition, createdAt: String(Date.now()) }, { ...intentRow(ref.workflowId), agentCardUrl: agent.cardUrl, createdAt: String(Date.now()) });
  await producer.journal.applyStatus(ref, { mode: 'outcome', state: 'FAILED', error: { code: 'DEADLINE_EXCEEDED', message: 'ended' } });
  let jobs = 0;
  /** One reconcile of main.1 as a job of its own id (a push's, a sweep's), or of `jobId`. */
  const reconcileOnce = (jobId = `push-${++jobs}`) => reconcileDelegation(fleet.context, ref, jobId);
  const eventId = (lost: number) => notificationEventId({ kind: 'duplicate.unchecked', workflowId: ref.workflowId, delegationId: ref.delegationId, occasion: lost });
  const delivered = (id: string) => receiver.received.filter((request) => request.verified && request.id === id).length;
  return { producer, fleet, agent, ref, skew, reconcileOnce, eventId, delivered, failures };
}

describe('a finished row: lost suspects told by their event, suspects read on their schedule', () => {
  it('the case: the duplicate.unchecked enqueue fails after the note; the next reconcile emits it (before: never)', async () => {
    const { producer, ref, reconcileOnce, eventId, delivered } = await finishedScene(1);
    expect(await producer.journal.noteSuspect(ref, '9'.repeat(SUSPECT_TASK_ID_MAX + 1))).toBe('too-long');
    expect(await reconcileOnce()).toBe('notify-pending');
    expect((await producer.journal.getDelegation(ref))).toMatchObject({ suspectsLost: 1, suspectsLostTold: 1 });
    // Not settled: its index entry stays for the next look.
    expect(await producer.journal.nextCheckAt(ref)).toBeDefined();
    await reconcileOnce();
    expect((await producer.journal.notification(ref.workflowId, eventId(1)))?.stage).toBeDefined();
    await eventually(async () => delivered(eventId(1)) > 0 || undefined, 'duplicate.unchecked delivered', 30_000);
    const view = await producer.get(ref.workflowId);
    expect(view.history.filter((entry) => entry.kind === 'duplicate-unchecked')).toEqual([expect.objectContaining({ delegationId: 'main.1', lost: 1 })]);
  }, 60_000);

  it('the case: a worker killed right after the note (noted, no event): the next reconcile emits it (before: never)', async () => {
    const { producer, ref, reconcileOnce, eventId, delivered } = await finishedScene();
    expect(await producer.journal.noteSuspect(ref, '9'.repeat(SUSPECT_TASK_ID_MAX + 1))).toBe('too-long');
    // What the killed worker left: the note written (history entry, `suspectsLostTold`), nothing enqueued.
    const row = (await producer.journal.getDelegation(ref))!;
    expect(await producer.journal.noteSuspectsUnchecked(row, 1)).toBe('noted');
    expect(await producer.journal.notification(ref.workflowId, eventId(1))).toBeUndefined();
    expect(await reconcileOnce()).toBe('settled');
    await eventually(async () => delivered(eventId(1)) > 0 || undefined, 'duplicate.unchecked delivered', 30_000);
  }, 60_000);

  it('property: whatever failed between the note and the emit (nothing, a kill, 1 or 2 failed enqueues), any later reconciles: one event delivered, one note, settled once it was enqueued', async () => {
    const faults = fc.oneof(fc.constant({ kind: 'none' as const, fails: 0 }), fc.constant({ kind: 'killed' as const, fails: 0 }), fc.integer({ min: 1, max: 2 }).map((fails) => ({ kind: 'enqueue' as const, fails })));
    await fc.assert(
      fc.asyncProperty(faults, fc.integer({ min: 0, max: 2 }), async (fault, extra) => {
        const { producer, ref, reconcileOnce, eventId, delivered, failures } = await finishedScene(fault.fails);
        expect(await producer.journal.noteSuspect(ref, '9'.repeat(SUSPECT_TASK_ID_MAX + 1))).toBe('too-long');
        if (fault.kind === 'killed') await producer.journal.noteSuspectsUnchecked((await producer.journal.getDelegation(ref))!, 1);
        const outcomes: string[] = [];
        for (let round = 0; round < fault.fails + 1 + extra; round++) {
          const settledBefore = outcomes.includes('settled');
          const outcome = await reconcileOnce();
          outcomes.push(outcome);
          // While the event is not enqueued the row is not settled (and not expired: it stays).
          if (!settledBefore) expect(outcome).toBe((await producer.journal.notification(ref.workflowId, eventId(1))) ? 'settled' : 'notify-pending');
        }
        expect(failures.left).toBe(0);
        expect(outcomes.filter((outcome) => outcome === 'notify-pending')).toHaveLength(fault.fails);
        await eventually(async () => delivered(eventId(1)) > 0 || undefined, 'duplicate.unchecked delivered', 30_000);
        expect(delivered(eventId(1))).toBe(1);
        const view = await producer.get(ref.workflowId);
        expect(view.history.filter((entry) => entry.kind === 'duplicate-unchecked')).toHaveLength(1);
      }),
      { numRuns: 6, examples: [[{ kind: 'enqueue', fails: 2 }, 1], [{ kind: 'killed', fails: 0 }, 2]] },
    );
  }, 240_000);

  it('the case: T2 unread (503) on a finished row; four more reconciles right after: no read before the backoff (before: each read it, lost in three)', async () => {
    const { producer, agent, ref, skew, reconcileOnce } = await finishedScene();
    expect(await producer.journal.noteSuspect(ref, 'T2')).toBe('kept');
    expect(await reconcileOnce()).toBe('suspects-pending');
    expect(getTaskCalls(agent, 'T2')).toBe(1);
    for (let n = 0; n < 4; n++) expect(await reconcileOnce()).toBe('suspects-pending');
    expect(getTaskCalls(agent, 'T2')).toBe(1);
    const row = (await producer.journal.getDelegation(ref))!;
    expect(row).toMatchObject({ suspectReadRounds: 1, suspectsLost: 0 });
    // At the backoff's end the job the round's ender asked for reads it; any other still waits for that one.
    const retryAt = suspectRetryAt(row, DEFAULT_JOB_OPTIONS.reconcile.backoff.delay)!;
    skew.ms = retryAt + 1_000 - Date.now();
    expect(await reconcileOnce()).toBe('suspects-pending');
    expect(getTaskCalls(agent, 'T2')).toBe(1);
    await reconcileOnce(suspectReadJob(ref, retryAt).id);
    expect(getTaskCalls(agent, 'T2')).toBe(2);
  }, 60_000);

  it('property: any interleaving of reconciles by other jobs, the scheduled job and time passing: each read at or after the backoff of the round before, by its scheduled job, at most `attempts` reads', async () => {
    const { backoff, attempts } = DEFAULT_JOB_OPTIONS.reconcile;
    let mostReads = 0;
    const steps = fc.array(fc.oneof(fc.constant({ kind: 'other' as const }), fc.constant({ kind: 'scheduled' as const }), fc.integer({ min: 1, max: 3_000 }).map((ms) => ({ kind: 'time' as const, ms }))), { minLength: 4, maxLength: 14 });
    await fc.assert(
      fc.asyncProperty(steps, async (plan) => {
        const { producer, agent, ref, skew, reconcileOnce } = await finishedScene();
        expect(await producer.journal.noteSuspect(ref, 'T2')).toBe('kept');
        let reads = 0;
        await reconcileOnce();
        reads++;
        for (const step of plan) {
          if (step.kind === 'time') {
            skew.ms += step.ms;
            continue;
          }
          const row = await producer.journal.getDelegation(ref);
          if (!row?.suspects) break;
          const retryAt = suspectRetryAt(row, backoff.delay);
          const now = Date.now() + skew.ms;
          // The scheduled job runs no sooner than it is due (BullMQ's delay): before that, another job asks.
          const due = retryAt === undefined ? undefined : suspectReadJob(ref, retryAt);
          const jobId = step.kind === 'scheduled' && due !== undefined && now >= due.dueAt ? due.id : `other-${now}`;
          await reconcileOnce(jobId);
          const readNow = getTaskCalls(agent, 'T2') > reads;
          if (readNow) {
            reads++;
            // Only the scheduled job, only once its round's backoff passed.
            expect(jobId).toBe(due?.id);
            expect(now).toBeGreaterThanOrEqual(retryAt!);
          }
        }
        expect(getTaskCalls(agent, 'T2')).toBe(reads);
        expect(reads).toBeLessThanOrEqual(attempts);
        mostReads = Math.max(mostReads, reads);
      }),
      { numRuns: 8, examples: [[[{ kind: 'other' }, { kind: 'time', ms: 1_500 }, { kind: 'other' }, { kind: 'scheduled' }, { kind: 'scheduled' }, { kind: 'time', ms: 2_500 }, { kind: 'scheduled' }]]] },
    );
    // Rounds after the first were read (the scheduled jobs ran).
    expect(mostReads).toBeGreaterThanOrEqual(2);
  }, 240_000);
});
