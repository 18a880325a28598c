/**
 * Evidence that another task may hold our message must never vanish unread (the push route's suspects,
 * noteSuspect-1.lua / clearSuspects-1.lua, read by the reconciler): a suspect whose GetTask fails is read again, and a
 * person decides once its reads are exhausted; a flood past what the journal keeps is a person; a suspect kept while
 * the route crashed before its job is read by any reconcile of the row (the start-up sweep). Ordinary traffic (decoys
 * the agent's read does not confirm, more than one job reads) is drained and never a person. Real fleet, raw JSON-RPC
 * agent, real Redis.
 */
import { describe, expect, it } from 'vitest';
import { SUSPECTS_PENDING_MAX, SUSPECT_READS_PER_JOB } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { getTaskCalls, pushScene } from '../harness/push-scene.ts';
import { holder, personNaming, type Received } from '../harness/holders.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
const host = () => ({ redisUrl: redisServer().url, keep });

/** The agent's GetTask: T1 and T2 hold our message, any other task holds someone else's. */
const t2Holds = (taskId: string, received: Received) =>
  taskId === 'T1' || taskId === 'T2' ? holder(taskId, 'WORKING', received) : holder(taskId, 'WORKING', { ...received, messageId: 'M-other' });

const unavailable = { http: { status: 503, body: '{"error":"busy"}' } } as const;

describe('a suspect whose GetTask fails is not cleared as "not holding"', () => {
  it('GetTask of T2 answers 503 once, then T2 holding our message: read again after a backoff, AMBIGUOUS naming T1 and T2 (before: cleared after the failure, never read again, row WORKING)', async () => {
    let failures = 0;
    const { env, workflowId, agent, push, holding } = await pushScene(host(), t2Holds, (taskId) => (taskId === 'T2' && failures++ < 1 ? unavailable : undefined));
    expect(await push(holding('T2'))).toBe(403);
    const row = await personNaming(env.producer, workflowId, ['T1', 'T2'], 30_000);
    expect(row.taskId).toBe('T1');
    expect(getTaskCalls(agent, 'T2')).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('GetTask of T2 never answers (503 every time): read the reconcile job\'s attempts in a row, then AMBIGUOUS for a person, "could not read" (before: cleared after the first failure, row WORKING)', async () => {
    const { env, workflowId, agent, push, holding, record } = await pushScene(host(), t2Holds, (taskId) => (taskId === 'T2' ? unavailable : undefined));
    expect(await push(holding('T2'))).toBe(403);
    const row = await eventually(async () => ((await record()).state === 'AMBIGUOUS' ? record() : undefined), 'a person decides', 40_000);
    expect(row.taskId).toBe('T1');
    expect(row.error?.message).toContain('1 other task we could not read');
    expect(getTaskCalls(agent, 'T2')).toBeGreaterThanOrEqual(3);
    expect((await env.producer.get(workflowId)).state).not.toBe('COMPLETED');
  }, 60_000);
});

describe('more suspects than the journal keeps', () => {
  it(`${SUSPECTS_PENDING_MAX} decoys then T2: T2 is not kept, counted lost; once a job found no holder, AMBIGUOUS for a person (before: T2 counted over-cap, never read, row WORKING)`, async () => {
    const { env, workflowId, push, holding, record, agent } = await pushScene(host(), t2Holds);
    // No reconcile job runs while the pushes arrive: one run between them (the job of a second the pushes straddle, or
    // one a renewal tick enqueued) would read and clear decoys, and T2 would be kept (flaky: 3 runs in 5 before).
    const reconcile = env.fleet!.context.queues.reconcile;
    await reconcile.pause();
    for (let n = 0; n < SUSPECTS_PENDING_MAX; n++) expect(await push(holding(`D${n}`))).toBe(403);
    expect(await push(holding('T2'))).toBe(403);
    await reconcile.resume();
    const row = await eventually(async () => ((await record()).state === 'AMBIGUOUS' ? record() : undefined), `${workflowId}: a person decides`, 30_000);
    expect(row.error?.message).toContain('we could not read');
    expect(row.taskId).toBe('T1');
    // T2 itself was never read (not kept): the person is told, never a silent drop.
    expect(getTaskCalls(agent, 'T2')).toBe(0);
  }, 90_000);
});

describe('a suspect kept while the push route crashed before enqueuing its job', () => {
  it('the fleet restarts: its start-up sweep reads the pending suspect T2, AMBIGUOUS naming T1 and T2 (before: it waited for another such push)', async () => {
    const scene = await pushScene(host(), t2Holds);
    await scene.env.fleet!.close();
    // What the route did before it crashed: the suspect kept in the journal, no reconcile job. The new fleet's follow
    // worker may take the handed-over follow job before its start-up sweep claims the row (its check moved): the sweep
    // reads the suspect all the same (test/reconcile/startup-sweep-suspects.test.ts).
    expect(await scene.env.producer.journal.noteSuspect(scene.ref, 'T2')).toBe('kept');
    keep(await startTestFleet({ redisUrl: redisServer().url, prefix: scene.prefix, webhookUrl: scene.env.webhookUrl }));
    const row = await personNaming(scene.env.producer, scene.workflowId, ['T1', 'T2'], 30_000);
    expect(row.taskId).toBe('T1');
    expect(getTaskCalls(scene.agent, 'T2')).toBeGreaterThanOrEqual(1);
  }, 60_000);
});

describe('ordinary traffic is never a person', () => {
  it(`${SUSPECT_READS_PER_JOB + 4} decoys (more than one job reads) the agent's GetTask does not confirm, and pushes about our own task: all read, none pending, the row still WORKING on T1`, async () => {
    const { push, holding, record, agent, contextId } = await pushScene(host(), t2Holds);
    const decoys = Array.from({ length: SUSPECT_READS_PER_JOB + 4 }, (_, n) => `D${n}`);
    for (const id of decoys) expect(await push(holding(id))).toBe(403);
    // A push about our own task (applied, or a duplicate) and one about another task not showing our message (refused,
    // not a suspect).
    expect(await push({ statusUpdate: { taskId: 'T1', contextId: contextId(), status: { state: 'TASK_STATE_WORKING' } } })).toBe(204);
    expect(await push({ task: { id: 'T7', contextId: contextId(), status: { state: 'TASK_STATE_WORKING' } } })).toBe(403);
    await eventually(async () => decoys.every((id) => getTaskCalls(agent, id) >= 1), 'every decoy read', 30_000);
    await eventually(async () => (await record()).suspects === undefined, 'no suspect pending', 30_000);
    const row = await record();
    expect(row.state).toBe('WORKING');
    expect(row.taskId).toBe('T1');
    expect(row.suspectsLost).toBe(0);
    expect(getTaskCalls(agent, 'T7')).toBe(0);
  }, 90_000);
});
