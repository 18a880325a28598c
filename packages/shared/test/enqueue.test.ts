/** Enqueue helpers own the job-id rule of each logical act: same act, same occasion → one job id. No Redis. */
import { describe, expect, it } from 'vitest';
import {
  enqueueCancel,
  enqueueCompensate,
  enqueueDecide,
  enqueueFollow,
  enqueueReconcile,
  enqueueReply,
  enqueueSend,
  enqueueStartupSweep,
  enqueueVerify,
  FollowJobSchema,
  ReconcileJobSchema,
  SendJobSchema,
  type TypedQueues,
} from '../src/index.ts';

interface Added {
  queue: string;
  name: string;
  data: unknown;
  options?: { jobId?: string; delay?: number; removeOnComplete?: boolean; priority?: number; attempts?: number };
}

function recordingQueues(): { queues: TypedQueues; added: Added[] } {
  const added: Added[] = [];
  const queue = (name: string) => ({
    add: async (jobName: string, data: unknown, options?: Added['options']) => {
      added.push({ queue: name, name: jobName, data, options });
    },
    // No job is kept here: every id is unknown (`enqueueReconcile` removes only a failed or completed one).
    getJobState: async () => 'unknown',
    remove: async () => 0,
  });
  return { queues: { send: queue('send'), follow: queue('follow'), reconcile: queue('reconcile'), verify: queue('verify'), compensate: queue('compensate'), notify: queue('notify') }, added };
}

const ref = { workflowId: 'trip', delegationId: 'main.1' };

describe('enqueue helpers', () => {
  it('the same act in the same occasion gets the same job id; another occasion another one', async () => {
    const { queues, added } = recordingQueues();
    await enqueueSend(queues, ref, 0);
    await enqueueSend(queues, ref, 0);
    await enqueueSend(queues, ref, 1);
    await enqueueSend(queues, ref, 1, 1234);
    const ids = added.map((job) => job.options?.jobId);
    expect(ids[0]).toBe(ids[1]);
    expect(new Set(ids).size).toBe(3);
  });

  it('job data matches each queue schema (no extra fields from a wider ref)', async () => {
    const { queues, added } = recordingQueues();
    const wide = { ...ref, state: 'WORKING', version: 3 };
    await enqueueSend(queues, wide, 0);
    await enqueueReply(queues, wide, 'reply-1');
    await enqueueCancel(queues, wide, { by: 'user', request: 2 });
    await enqueueFollow(queues, wide, { resubscription: 2, again: true, delayMs: 50, at: 99 });
    await enqueueReconcile(queues, wide, { dueAt: 2_000, now: 500 });
    await enqueueReconcile(queues, wide, { leaseEndsAt: 3_000, now: 500 });
    await enqueueDecide(queues, 'trip', { by: 'start' });
    await enqueueStartupSweep(queues, 'worker-1', 5);
    for (const job of added) {
      const schema = job.queue === 'send' ? SendJobSchema : job.queue === 'follow' ? FollowJobSchema : ReconcileJobSchema;
      expect(schema.strict().safeParse(job.data).success, JSON.stringify(job)).toBe(true);
    }
    expect(added.find((job) => job.queue === 'follow')?.options).toMatchObject({ delay: 50 });
    expect(added.find((job) => job.queue === 'reconcile' && job.options?.delay !== undefined)?.options?.delay).toBe(1_500);
    const afterLease = added.find((job) => job.queue === 'reconcile' && (job.data as { afterLease?: boolean }).afterLease === true);
    expect(afterLease?.options?.delay).toBe(2_500);
  });

  it('job ids never contain ":" (refused by BullMQ) and keep the act name first', async () => {
    const { queues, added } = recordingQueues();
    await enqueueVerify(queues, ref, { bucket: 1 });
    await enqueueCompensate(queues, 'trip', { workflowVersion: 4 });
    await enqueueCompensate(queues, 'trip', { settled: 'undo.main.1', version: 2 });
    await enqueueCompensate(queues, 'trip', { recoverAt: 7 });
    await enqueueReconcile(queues, ref, { sweep: 12 });
    await enqueueReconcile(queues, ref, { push: 13 });
    await enqueueReconcile(queues, ref, { leaseEndsAt: 14, now: 0 });
    await enqueueReconcile(queues, { workflowId: 'trip', delegationId: '*' }, { sweep: 15, later: true });
    await enqueueCancel(queues, ref, { by: 'stop', bucket: 3 });
    await enqueueCancel(queues, ref, { by: 'late', at: 4 });
    for (const job of added) expect(job.options?.jobId).not.toContain(':');
    // A workflow entry found by the sweep runs after the delegations' jobs (BullMQ priority 1); others keep priority 0.
    expect(added.filter((job) => job.options?.priority !== undefined).map((job) => [(job.data as { delegationId: string }).delegationId, job.options?.priority])).toEqual([['*', 1]]);
    expect(added.map((job) => job.options!.jobId!.split('|')[0])).toEqual(['verify', 'compensate', 'compensate', 'compensate', 'reconcile', 'reconcile', 'reconcile', 'reconcile', 'cancel', 'cancel']);
    expect(new Set(added.map((job) => job.options?.jobId)).size).toBe(added.length);
    expect(added.find((job) => job.options?.jobId?.includes('sweep'))?.options?.removeOnComplete).toBe(true);
  });
});
