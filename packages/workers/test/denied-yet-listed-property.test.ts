/**
 * Property (attack 30, a loop between two rows with no bound): the check before LOST finds our bound task again in a
 * ListTasks summary of a finished task, reads it in full (GetTask), and the agent denies it again. Before, the denial
 * went back to the check before LOST, which found the summary again, and so on: GetTask and ListTasks about 300 times
 * a second, for ever, the row WORKING. The table is driven here as the executor drives it, against an agent whose
 * GetTask answers `reads` (denials, then maybe the full task: a store that lags) and whose listing shows the summary:
 * whatever the row's state, the summary's finished state, the counts and how long GetTask lags, the walk ends within a
 * few steps, never LOST (the listing shows the work), never finished without the result the full read carried; and
 * when the full read comes back, the task is settled from it. The end-to-end case is in test/saga/attacks-30.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import type { Observation } from '../src/delegation/core/observation.ts';
import type { Policy } from '../src/delegation/core/policy.ts';
import { transition, type Write } from '../src/delegation/core/transitions.ts';
import { stepRow } from './step-row.ts';

const NOW = 5_000_000;
const policyOf = (threshold: number): Policy => ({ now: () => NOW, random: () => 0.5, sendAttempts: 3, sendSettleMs: 31_000, notFoundThreshold: threshold, notFoundWindowMs: 30_000, reconcileIntervalMs: 1_000, unacceptableAnswerLimit: 3 }) as unknown as Policy;

const FINISHED = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'] as const;

/** T1 as the listing shows it (no artifacts) or as a full read does (artifact a1). */
const t1 = (state: (typeof FINISHED)[number], full: boolean): Task =>
  ({ id: 'T1', contextId: 'C-ours', status: { state }, history: [{ messageId: 'M-ours', role: 'ROLE_USER', parts: [{ text: 'book' }] }], ...(full ? { artifacts: [{ artifactId: 'a1', parts: [{ text: 'booked' }] }] } : {}) }) as Task;

describe('a task the agent lists finished but denies on GetTask', () => {
  it('property: the walk ends within a few steps: a person, or the full read settles it; never LOST, never a result-less finish', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('SUBMITTED', 'WORKING', 'INPUT_REQUIRED'),
        fc.constantFrom(...FINISHED),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 0, max: 40 }),
        fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
        (rowState, listedState, threshold, extraDenials, fullReadAfter) => {
          const policy = policyOf(threshold);
          // Past the not-found window: the next denial is the one that asks for the check before LOST.
          let record: DelegationRecord = stepRow({ state: rowState, taskId: 'T1', contextId: 'C-ours', notFoundCount: threshold + extraDenials, firstNotFoundAt: NOW - 60_000 });
          let reads = 0;
          let observation: Observation = { kind: 'task-not-found', call: 'get-task' };
          const steps: string[] = [];
          for (let step = 0; step < 12; step++) {
            const result = transition(record, observation, policy);
            const writes = ([] as Write[]).concat(result.write ?? []);
            for (const write of writes) {
              if (write.kind === 'note-not-found') record = { ...record, notFoundCount: record.notFoundCount + 1 };
              // Never LOST, and no outcome without the result.
              expect(write.kind === 'outcome' ? write.state : undefined).not.toBe('LOST');
              if (write.kind === 'snapshot') expect(write.task.artifacts?.length ?? 0).toBeGreaterThan(0);
            }
            const next = result.next;
            steps.push(next.kind);
            if (next.kind === 'needs-person') return;
            if (next.kind === 'route' && writes.some((write) => write.kind === 'snapshot')) return; // settled from the full read
            if (next.kind === 'search') {
              expect(next.purpose).toBe('lost-check');
              observation = { kind: 'search-result', purpose: 'lost-check', deduplicates: false, finding: { kind: 'found', task: t1(listedState, false), complete: false, ownership: { kind: 'proven', by: 'message-id' } } };
            } else if (next.kind === 'read-once') {
              reads += 1;
              observation =
                fullReadAfter !== undefined && reads > fullReadAfter
                  ? { kind: 'task-read', task: t1(listedState, true), call: 'get-task', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why: next.why, cycle: false }
                  : { kind: 'task-not-found', call: 'get-task', ...(next.foundAgain ? { afterFoundAgain: true } : {}) };
            } else {
              throw new Error(`unexpected next ${next.kind} after ${steps.join(' → ')}`);
            }
          }
          throw new Error(`no end within 12 steps: ${steps.join(' → ')}`);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('a store that lags: found again, and the full read then shows the task with its result: settled from it (not a person)', () => {
    const policy = policyOf(3);
    const record = stepRow({ state: 'WORKING', taskId: 'T1', contextId: 'C-ours', notFoundCount: 3, firstNotFoundAt: NOW - 60_000 });
    const found = transition(record, { kind: 'search-result', purpose: 'lost-check', deduplicates: false, finding: { kind: 'found', task: t1('TASK_STATE_COMPLETED', false), complete: false, ownership: { kind: 'proven', by: 'message-id' } } }, policy);
    expect(found.next).toMatchObject({ kind: 'read-once', foundAgain: true });
    const read = transition(record, { kind: 'task-read', task: t1('TASK_STATE_COMPLETED', true), call: 'get-task', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why: 'found again by ListTasks', cycle: false }, policy);
    expect(read.write).toMatchObject({ kind: 'snapshot', task: { artifacts: [{ artifactId: 'a1' }] } });
    const denied = transition(record, { kind: 'task-not-found', call: 'get-task', afterFoundAgain: true }, policy);
    expect(denied).toEqual({ next: { kind: 'needs-person', code: 'AMBIGUOUS', delivery: 'received', message: expect.stringContaining('still shows it finished') } });
  });
});
