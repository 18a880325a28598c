/**
 * BullMQ job ids name their occasion: a later legitimate request is a job of its own, never swallowed by a
 * kept (failed) job of an earlier one; the same occasion added twice stays one job. Producer → fleet →
 * a scripted raw JSON-RPC agent → journal, and the HTTP API for the user's cancel.
 */
import { describe, expect, it } from 'vitest';
import { Queue, Worker, type Job } from 'bullmq';
import { DEFAULT_JOB_OPTIONS, JOB_RETENTION, createRedisClient, enqueueCancel, enqueueVerify } from '@durable-a2a/shared';
import { eventually } from '../harness/fleet.ts';
import { recordOf, useFieldCases } from '../harness/field-cases.ts';
import { task, taskEvent } from '../harness/scripted-agent.ts';
import { authorized, startTestServer } from '../harness/api-server.ts';

const h = useFieldCases();

/** The send queue's jobs of kind `kind` in `states`. */
async function jobsOf(queue: Queue, kind: string, states: ('failed' | 'delayed' | 'waiting' | 'active' | 'completed')[]): Promise<Job[]> {
  return (await queue.getJobs(states)).filter((job) => (job.data as { kind?: string }).kind === kind);
}

describe('P39: a fixed job id swallows a later request', () => {
  it('a second cancel after the first one\'s job failed for good reaches the agent (never a 202 followed by nothing)', async () => {
    let agentDown = true;
    const { producer, agent, fleet, prefix, seen } = await h.setUp(
      (seen) => ({
        SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(1) }))], endAfter: 'hang' }),
        GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(1) }) }),
        CancelTask: () => (agentDown ? { http: { status: 503, body: '{"error":"overloaded"}' } } : { result: task('T1', 'CANCELED', { contextId: seen.contextId, timestamp: h.at(2) }) }),
      }),
      // No sweep and no stream idle timeout in the test's window: only the user's requests drive CancelTask here
      // (a resubscription or a reconcile would find the cancel wanted and send one of its own).
      { reconcileIntervalMs: 120_000, streamIdleTimeoutMs: 120_000 },
    );
    const app = startTestServer({ redisUrl: h.redisServer().url, prefix });
    try {
      await app.ready();
      const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'p39', idempotencyKey: 'p39' });
      await eventually(async () => (await recordOf(producer, id))?.state === 'WORKING', 'WORKING at the agent');
      expect(seen.messageId).toBeDefined();

      const first = await authorized(app, { method: 'POST', url: `/v1/workflows/${id}/cancel` });
      expect(first.statusCode).toBe(202);
      // Every attempt answered 503: the retries' backoff is skipped (promoted) until the job is in the failed set.
      const sendQueue = fleet.context.queues.send;
      await eventually(
        async () => {
          for (const job of await jobsOf(sendQueue, 'cancel', ['delayed'])) await job.promote().catch(() => undefined);
          return (await jobsOf(sendQueue, 'cancel', ['failed'])).length === 1;
        },
        'the cancel job failed for good',
        60_000,
        100,
      );
      expect(agent.count('CancelTask')).toBe(DEFAULT_JOB_OPTIONS.send.attempts);
      expect((await recordOf(producer, id))?.state).toBe('WORKING');

      agentDown = false;
      const second = await authorized(app, { method: 'POST', url: `/v1/workflows/${id}/cancel` });
      expect(second.statusCode).toBe(202);
      await eventually(async () => agent.count('CancelTask') > DEFAULT_JOB_OPTIONS.send.attempts, 'the second cancel reached the agent', 30_000);
      await eventually(async () => (await producer.get(id)).state === 'CANCELED', 'the workflow CANCELED', 30_000);
      expect((await recordOf(producer, id))?.state).toBe('CANCELED');
    } finally {
      await app.close();
    }
  });

  /**
   * On a real BullMQ queue (one attempt, failed jobs kept as in production): `add(occasion)` twice for occasion 1
   * is one job; once that job failed and is kept, occasion 1 again is still that one job (the same request), and
   * occasion 2 is a new job that waits to run.
   */
  async function occasionsOnARealQueue(name: 'send' | 'verify', add: (queues: Record<typeof name, Queue>, occasion: number) => Promise<void>): Promise<void> {
    const connection = createRedisClient(h.redisServer().url);
    const prefix = `{occasions-${name}-${Date.now()}}`;
    const queue = new Queue(name, { connection, prefix, defaultJobOptions: { attempts: 1, ...JOB_RETENTION } });
    const worker = new Worker(name, async () => {
      throw new Error('the agent answered 503');
    }, { connection, prefix, autorun: true });
    try {
      const queues = { [name]: queue } as Record<typeof name, Queue>;
      await add(queues, 1);
      await add(queues, 1);
      await eventually(async () => (await queue.getJobCounts('failed')).failed === 1, 'the first job failed for good');
      await add(queues, 1);
      await worker.close();
      await add(queues, 2);
      expect(await queue.getJobCounts('failed', 'waiting', 'active', 'delayed')).toEqual({ failed: 1, waiting: 1, active: 0, delayed: 0 });
    } finally {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      await connection.quit();
    }
  }

  const ref = { workflowId: 'trip', delegationId: 'main.1' };

  it('cancel: a second user request is a job of its own after the first one failed; the same request twice is one job', async () => {
    await occasionsOnARealQueue('send', (queues, request) => enqueueCancel(queues, ref, { by: 'user', request }));
  });

  it('verify: a later settle (another reconcile interval) is a job of its own after a failed one; one interval is one job', async () => {
    await occasionsOnARealQueue('verify', (queues, bucket) => enqueueVerify(queues, ref, { bucket }));
  });
});
