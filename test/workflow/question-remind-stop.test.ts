/**
 * Reminders of a question follow `isStepStopped` (the twin of stepStopped.lua), as every listing of open questions
 * and `question.opened` do: a step of a stopping workflow (canceled, or another step failed for good) has its
 * question closed, so a due reminder sends no log line, no `durable_a2a_question_reminders_total` and no
 * notification; a live step's due reminder still does. Real redis-server and a real fleet's context (its journal,
 * queues and options); the reconciler's `checkQuestionLife` is called with a clock past the first reminder, while the
 * fleet's own clock never reaches it. Nor is a stopped step's question checked at a reminder's time (`nextQuestionCheckAt`:
 * its expiry or the parked poll only), where a live step's is.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isStepStopped, type DelegationRecord, type WorkflowStopFlags } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import type { WorkerContext } from '../../packages/workers/src/context.ts';
import { checkQuestionLife } from '../../packages/workers/src/delegation/question-life.ts';
import { nextQuestionCheckAt } from '../../packages/workers/src/delegation/question-schedule.ts';
import { useFieldCases } from '../harness/field-cases.ts';
import { intentRow } from '../harness/journal-rows.ts';
import { startWebhookReceiver } from '../harness/webhook-receiver.ts';

const h = useFieldCases();
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
/** A minute: the fleet's own reconciler never sees a reminder due while a test runs. */
const REMIND_EVERY_MS = 60_000;

const reminders = async (fleet: Fleet) => (await fleet.metrics.questionReminders.get()).values.reduce((sum, value) => sum + value.value, 0);
const notifyJobs = async (fleet: Fleet) => Object.values(await fleet.context.queues.notify.getJobCounts()).reduce((sum, count) => sum + count, 0);

/** A logger that records the messages of its warn lines (the reminder's line) and drops everything else. */
function recordingLogger(base: WorkerContext['logger']): { log: WorkerContext['logger']; lines: string[] } {
  const lines: string[] = [];
  const log = Object.create(base) as WorkerContext['logger'];
  log.warn = ((_fields: unknown, message?: string) => void lines.push(message ?? '')) as WorkerContext['logger']['warn'];
  return { log, lines };
}

/**
 * Workflow `workflowId` RUNNING, its step `main` asking a question under `{ remindEveryMs: REMIND_EVERY_MS }`, then
 * stopped by `flags` (none: live); returns the parked row as read back.
 */
async function parkedStep(
  fleet: Fleet,
  workflowId: string,
  flags: WorkflowStopFlags | undefined,
  state: 'INPUT_REQUIRED' | 'AUTH_REQUIRED' = 'INPUT_REQUIRED',
  question: { remindEveryMs: number; expiresAfterMs?: number; onExpiry?: 'fail' } = { remindEveryMs: REMIND_EVERY_MS },
): Promise<DelegationRecord> {
  const journal = fleet.context.journal;
  const ref = { workflowId, delegationId: 'main.1' };
  const definition = JSON.stringify({ workflowId, steps: [{ name: 'main', agent: 'https://agent.example/.well-known/agent-card.json', message: { text: 'x' }, question }] });
  await journal.createWorkflow(workflowId, { state: 'RUNNING', definition, createdAt: String(Date.now()) }, { ...intentRow(workflowId), createdAt: String(Date.now()) });
  await journal.applyStatus(ref, { mode: 'event', state, taskId: `T-${workflowId}`, statusTimestamp: new Date().toISOString() });
  if (flags?.cancelRequested === true) await journal.updateWorkflow(workflowId, { cancelRequested: true });
  if (Array.isArray(flags?.stopping)) await journal.updateWorkflow(workflowId, { stopping: [...flags.stopping] });
  const record = (await journal.getDelegation(ref))!;
  expect(record.questionKey).toBeTruthy();
  return record;
}

/** The reconciler's look at the row's question on a clock just past its first reminder; returns what it told a person. */
async function remindLate(fleet: Fleet, record: DelegationRecord): Promise<{ counted: number; lines: string[]; notified: number }> {
  const [countedBefore, notifiedBefore] = [await reminders(fleet), await notifyJobs(fleet)];
  const late: WorkerContext = { ...fleet.context, options: { ...fleet.context.options, now: () => record.questionAskedAt! + REMIND_EVERY_MS + 1 } };
  const { log, lines } = recordingLogger(fleet.context.logger);
  expect(await checkQuestionLife(late, record, log)).toBe(false);
  return { counted: (await reminders(fleet)) - countedBefore, lines, notified: (await notifyJobs(fleet)) - notifiedBefore };
}

async function fleetWithReceiver(run: (fleet: Fleet) => Promise<void>): Promise<void> {
  const receiver = await startWebhookReceiver(SECRET);
  try {
    await run(await h.fleetFor(h.newPrefix(), { notify: { url: receiver.url, secret: SECRET, retry: { attempts: 2, backoffMs: 100 } } }));
  } finally {
    await receiver.close();
  }
}

describe('a reminder of a stopped step’s question', () => {
  it('a canceled workflow’s step gets no reminder (no counter, no line, no notification); a live step’s gets one (fails before the fix)', async () => {
    await fleetWithReceiver(async (fleet) => {
      const stopped = await remindLate(fleet, await parkedStep(fleet, 'wf-stopped', { cancelRequested: true }));
      expect(stopped).toEqual({ counted: 0, lines: [], notified: 0 });
      const live = await remindLate(fleet, await parkedStep(fleet, 'wf-live', undefined));
      expect(live).toEqual({ counted: 1, lines: ['a question is waiting for an answer'], notified: 0 });
    });
  });

  it('property over stop flags and question states: a reminder is sent, and checked for at its time, exactly when the step is not stopped (isStepStopped)', async () => {
    await fleetWithReceiver(async (fleet) => {
      let counter = 0;
      const flags = fc.record({ cancelRequested: fc.boolean(), stopping: fc.array(fc.constantFrom('step car failed for good', 'step hotel failed for good'), { maxLength: 2 }) });
      // Every branch of the predicate reached whatever the seed: live, canceled, a step failed for good, both.
      const examples: [WorkflowStopFlags & { cancelRequested: boolean; stopping: string[] }, 'INPUT_REQUIRED' | 'AUTH_REQUIRED'][] = [
        [{ cancelRequested: false, stopping: [] }, 'INPUT_REQUIRED'],
        [{ cancelRequested: true, stopping: [] }, 'AUTH_REQUIRED'],
        [{ cancelRequested: false, stopping: ['step car failed for good'] }, 'INPUT_REQUIRED'],
        [{ cancelRequested: true, stopping: ['step hotel failed for good'] }, 'AUTH_REQUIRED'],
      ];
      await fc.assert(
        fc.asyncProperty(flags, fc.constantFrom('INPUT_REQUIRED' as const, 'AUTH_REQUIRED' as const), async (stop, state) => {
          const workflowId = `wf-${++counter}`;
          const record = await parkedStep(fleet, workflowId, { ...(stop.cancelRequested ? { cancelRequested: true } : {}), stopping: stop.stopping }, state);
          const stopped = isStepStopped(record.kind, await fleet.context.journal.getWorkflow(workflowId));
          expect(stopped).toBe(stop.cancelRequested || stop.stopping.length > 0);
          // Its next check: the first reminder's time when live, the parked poll when stopped (no reminder, no expiry).
          const pollAt = fleet.context.options.now() + 3_600_000;
          expect(await nextQuestionCheckAt(fleet.context, record, pollAt)).toBe(stopped ? pollAt : record.questionAskedAt! + REMIND_EVERY_MS);
          const told = await remindLate(fleet, record);
          expect(told).toEqual(stopped ? { counted: 0, lines: [], notified: 0 } : { counted: 1, lines: ['a question is waiting for an answer'], notified: 0 });
        }),
        { numRuns: 12, examples },
      );
    });
  }, 60_000);

  it('the next check of a stopped step’s question is its expiry or the parked poll, never a reminder’s time (no delayed reconcile job for it); a live step’s is its next reminder (fails before the fix)', async () => {
    await fleetWithReceiver(async (fleet) => {
      const delayedChecks = async () => (await fleet.context.queues.reconcile.getJobCounts('delayed')).delayed ?? 0;
      /** The row's next check with the parked poll an hour away, and the delayed reconcile jobs it enqueued. */
      const scheduled = async (record: DelegationRecord) => {
        const before = await delayedChecks();
        const pollAt = fleet.context.options.now() + 3_600_000;
        const at = await nextQuestionCheckAt(fleet.context, record, pollAt);
        return { at: at === pollAt ? 'poll' : at - record.questionAskedAt!, enqueued: (await delayedChecks()) - before };
      };
      const remindEvery = { remindEveryMs: REMIND_EVERY_MS };
      const withExpiry = { remindEveryMs: REMIND_EVERY_MS, expiresAfterMs: 10 * REMIND_EVERY_MS, onExpiry: 'fail' as const };
      expect(await scheduled(await parkedStep(fleet, 'wf-next-live', undefined, 'INPUT_REQUIRED', remindEvery))).toEqual({ at: REMIND_EVERY_MS, enqueued: 1 });
      expect(await scheduled(await parkedStep(fleet, 'wf-next-canceled', { cancelRequested: true }, 'INPUT_REQUIRED', remindEvery))).toEqual({ at: 'poll', enqueued: 0 });
      expect(await scheduled(await parkedStep(fleet, 'wf-next-failed', { stopping: ['step car failed for good'] }, 'AUTH_REQUIRED', withExpiry))).toEqual({ at: 10 * REMIND_EVERY_MS, enqueued: 1 });
      expect(await scheduled(await parkedStep(fleet, 'wf-next-live-expiry', undefined, 'AUTH_REQUIRED', withExpiry))).toEqual({ at: REMIND_EVERY_MS, enqueued: 1 });
    });
  }, 60_000);
});
