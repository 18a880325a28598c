/**
 * A finished row whose lost suspects a person was told of (noteSuspectsUnchecked-1.lua) is not read again: before,
 * every later reconcile of it (a push naming it, the start-up sweep) ran its read round again (the pending read,
 * clearSuspects, the unchecked note's no-op and a notify enqueue of the same event). The kind: work done once per
 * finding. Real redis-server, real fleet and notify queue, scripted agents, a real webhook receiver.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { SUSPECT_TASK_ID_MAX, enqueueReconcile, queuePrefix } from '@durable-a2a/shared';
import { useRedisServer, useRedisClient } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { getTaskCalls } from '../harness/push-scene.ts';
import { startHoldingAgent } from '../harness/holders.ts';
import { startWebhookReceiver } from '../harness/webhook-receiver.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
let counter = 0;

describe('a finished row whose lost suspects were told is not read again', () => {
  const redisServer = useRedisServer();
  const redis = useRedisClient(redisServer);
  const keep = closeKeptAfterEach();

  /**
   * A two-step workflow: `main` COMPLETED on T1 at once (its agent answers GetTask of a suspect with TaskNotFound), `later` at an
   * agent whose task never ends, so main.1's row stays (a finished workflow is compacted). Then `lost` suspects lost
   * and `pending` kept on the finished row (as the push route notes them), one reconcile of it, then `rounds` more.
   * Returns the GetTask calls and notify jobs of the first round and of all of them, and the view.
   */
  async function finishedScene(lost: number, pending: readonly string[], rounds: number) {
    const prefix = `lost-once${++counter}-${Date.now()}`;
    const receiver = await startWebhookReceiver(SECRET);
    receiver.answerWith(() => ({ kind: 'accept' }));
    const main = await startHoldingAgent('T1', 'COMPLETED');
    const later = await startHoldingAgent('L1', 'WORKING');
    const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, notify: { secret: SECRET, url: receiver.url } });
    const reconcile = new Queue('reconcile', { connection: redis(), prefix: queuePrefix(prefix) });
    keep(fleet, producer, main, later, receiver, reconcile);
    const workflowId = `wf-${prefix}`;
    await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: main.cardUrl, message: { text: 'go' } }, { name: 'later', agent: later.cardUrl, message: { text: 'then' } }] });
    const ref = { workflowId, delegationId: 'main.1' };
    await eventually(async () => (await producer.journal.getDelegation({ workflowId, delegationId: 'later.1' }))?.taskId === 'L1' || undefined, 'later.1 sent', 30_000);
    expect((await producer.journal.getDelegation(ref))?.state).toBe('COMPLETED');
    // As the push route notes them on the finished row: ids too long to keep are evidence lost, the others wait.
    for (let n = 0; n < lost; n++) expect(await producer.journal.noteSuspect(ref, `${n}`.repeat(SUSPECT_TASK_ID_MAX + 1))).toBe('too-long');
    for (const id of pending) expect(await producer.journal.noteSuspect(ref, id)).toBe('kept');

    /** One reconcile of main.1 (a push's job), waited for until it finished. */
    const reconcileOnce = async (round: number): Promise<void> => {
      await enqueueReconcile({ reconcile }, ref, { push: round });
      await eventually(async () => {
        const found = (await reconcile.getJobs(['completed', 'failed'])).find((job) => job.name === 'delegation' && job.id?.endsWith(`|push|${round}`));
        return found?.finishedOn !== undefined || undefined;
      }, `reconcile round ${round}`, 30_000);
    };
    const unchecked = () => receiver.received.map((event) => JSON.parse(event.body) as { type: string }).filter((event) => event.type === 'duplicate.unchecked');
    /** Notify jobs added so far (`added` on the notify queue's event stream: a done job is removed, so an emit of the same event adds it again). */
    const notifyJobsAdded = async () => (await redis().xrange(`${queuePrefix(prefix)}:notify:events`, '-', '+')).filter(([, fields]) => fields[1] === 'added').length;
    const reads = () => pending.reduce((sum, id) => sum + getTaskCalls(main, id), 0) + getTaskCalls(main, 'T1');

    await reconcileOnce(1);
    if (lost > 0) await eventually(async () => unchecked().length > 0 || undefined, 'duplicate.unchecked', 30_000);
    const first = { reads: reads(), notifyJobs: await notifyJobsAdded() };
    for (let round = 2; round <= rounds + 1; round++) await reconcileOnce(round);
    const all = { reads: reads(), notifyJobs: await notifyJobsAdded() };
    const row = (await producer.journal.getDelegation(ref))!;
    return { first, all, row, view: await producer.get(workflowId), unchecked: unchecked().length };
  }

  it('the case: main.1 COMPLETED with a suspect lost, told once; five more reconciles of it: no read, no notify job added, one duplicate-unchecked entry', async () => {
    const { first, all, view, unchecked } = await finishedScene(1, [], 5);
    expect(first.notifyJobs).toBe(1);
    expect(all).toEqual(first);
    expect(view.history.filter((entry) => entry.kind === 'duplicate-unchecked')).toEqual([expect.objectContaining({ delegationId: 'main.1', lost: 1 })]);
    expect(unchecked).toBe(1);
  }, 90_000);

  it('property: any lost count beside any pending suspects, any number of later reconciles: each suspect read once, one notify job when some were lost, then nothing', async () => {
    const scenes = fc.record({ lost: fc.integer({ min: 0, max: 2 }), pending: fc.subarray(['T2', 'T3']), rounds: fc.integer({ min: 1, max: 4 }) }).filter((scene) => scene.lost > 0 || scene.pending.length > 0);
    await fc.assert(
      fc.asyncProperty(scenes, async ({ lost, pending, rounds }) => {
        const { first, all, row } = await finishedScene(lost, pending, rounds);
        expect(first).toEqual({ reads: pending.length, notifyJobs: lost > 0 ? 1 : 0 });
        expect(all).toEqual(first);
        expect(row).toMatchObject({ state: 'COMPLETED', suspectsLost: lost, suspectsLostTold: lost });
        expect(row.suspects).toBeUndefined();
      }),
      { numRuns: 6, seed: Number(process.env.FUZZ_SEED ?? 11) },
    );
  }, 240_000);
});
