/**
 * Only the suspect read job of a second reads a row's suspects (suspect-reads.ts `reconcileSuspects`,
 * `isSuspectReadJob`): every other reconcile of the row (a check, a lease end, a sweep, a push that moved the row, a
 * pushed completion) asks for the job of its second instead. So however pushes, renewal ticks and checks of a row
 * interleave, the jobs that read are at most one per second they were asked in (before: a check read a suspect at
 * once, then the job of the push's second read it again: two GetTasks in one second of pushes;
 * test/send/foreign-holder.test.ts has the case against a real fleet).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { enqueueReconcile, isSuspectReadJob, suspectReadJob } from '@durable-a2a/shared';

/** The occasions a reconcile job is asked for with. */
type ReconcileOccasion = Parameters<typeof enqueueReconcile>[2];

const idPart = fc.stringMatching(/^[A-Za-z0-9._:-]{1,24}$/);
const at = fc.integer({ min: 1_700_000_000_000, max: 1_800_000_000_000 });

/** The id each occasion's job gets (the queue's add, captured: no Redis needed to read an id). */
async function jobIdOf(ref: { workflowId: string; delegationId: string }, occasion: ReconcileOccasion): Promise<string> {
  let id = '';
  // No earlier job of any id (a due suspect job first asks for the state of one of its id: `clearSpentSuspectJob`).
  const reconcile = {
    add: async (_name: string, _data: unknown, options: { jobId: string }) => void (id = options.jobId),
    getJobState: async () => 'unknown',
    remove: async () => 0,
  };
  await enqueueReconcile({ reconcile } as unknown as Parameters<typeof enqueueReconcile>[0], ref, occasion);
  return id;
}

describe('only the suspect read job of a second reads suspects', () => {
  it('property: a suspect read job of the row is one; every other reconcile job of it, and any job of another row, is not', async () => {
    await fc.assert(
      fc.asyncProperty(idPart, idPart, idPart, at, at, async (workflowId, delegationId, other, t, now) => {
        const ref = { workflowId, delegationId };
        expect(isSuspectReadJob(ref, await jobIdOf(ref, { suspect: 'T3', at: t, now }))).toBe(true);
        expect(isSuspectReadJob(ref, await jobIdOf(ref, { suspect: undefined, at: t, now }))).toBe(true);
        for (const occasion of [{ dueAt: t, now }, { leaseEndsAt: t, now }, { sweep: t }, { sweep: other, later: true }, { push: t }, { pushedCompletion: t }] satisfies ReconcileOccasion[]) {
          expect(isSuspectReadJob(ref, await jobIdOf(ref, occasion))).toBe(false);
        }
        expect(isSuspectReadJob(ref, undefined)).toBe(false);
        if (other !== workflowId) expect(isSuspectReadJob({ workflowId: other, delegationId }, suspectReadJob(ref, t).id)).toBe(false);
      }),
    );
  });

  it('property: whatever asks for reads at whatever times (pushes, ticks, checks), the reading jobs are at most one per second asked in', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 10_000 }), { minLength: 1, maxLength: 200 }), at, (offsets, start) => {
        const ref = { workflowId: 'wf', delegationId: 'main.1' };
        const times = offsets.map((offset) => start + offset);
        const readers = new Set(times.map((time) => suspectReadJob(ref, time).id));
        expect(readers.size).toBeLessThanOrEqual(new Set(times.map((time) => Math.floor(time / 1000))).size);
      }),
    );
  });
});
