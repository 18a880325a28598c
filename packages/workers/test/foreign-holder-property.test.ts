/**
 * Property (holders3): an answer about another task than the one we bound, read from the agent (GetTask of ours
 * answering another task, in a follow cycle or not, a parked re-read, a partial stream's full read; CancelTask's
 * answer; the reply's answer; GetTask of the task a refused push named), is the agent holding our message twice
 * exactly when that task's history holds a message of ours (our messageId, or the reply's: written by us, not an
 * agent's echo of it). Then: AMBIGUOUS for a person naming both tasks (`severalHolders`), on any unfinished row
 * (`anyRow`), nothing adopted, applied or resent, the message bounded whatever the agent's ids. Otherwise the path
 * keeps its rule: a protocol error (nothing of it applied), the ListTasks read in a follow cycle, nothing at all for
 * a push-named task. Pure: the table alone (`core/transitions.ts`). The end-to-end cases are in
 * test/send/foreign-holder.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message, StreamResponse, Task, TaskState } from '@durable-a2a/a2a';
import type { DelegationRecord, JournalState } from '@durable-a2a/shared';
import type { Observation } from '../src/delegation/core/observation.ts';
import { Journal, SUSPECTS_PENDING_MAX } from '@durable-a2a/shared';
import { readUntilDecided, suspectReadAt, suspectsToRead, type Policy } from '../src/delegation/core/policy.ts';
import { useRedisClient, useRedisServer } from '../../../test/harness/redis.ts';
import { intentRow } from '../../../test/harness/journal-rows.ts';
import { transition, type Step, type Write } from '../src/delegation/core/transitions.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);

const OURS = 'M-ours';
const REPLY = 'R-ours';
const policy = { now: () => 5_000_000, random: () => 0.5, sendAttempts: 3, unacceptableAnswerLimit: 3, reconcileIntervalMs: 30_000 } as unknown as Policy;

/** What the other task's history holds. */
type Holds = 'ours' | 'reply' | 'agent-echo' | 'other' | 'none';
const holdsArbitrary = fc.constantFrom<Holds>('ours', 'reply', 'agent-echo', 'other', 'none');

/** The path that read the other task. */
type Path = 'get-task' | 'get-task-cycle' | 'parked-reread' | 'partial-stream' | 'cancel-read' | 'cancel-answered' | 'reply' | 'push';
const pathArbitrary = fc.constantFrom<Path>('get-task', 'get-task-cycle', 'parked-reread', 'partial-stream', 'cancel-read', 'cancel-answered', 'reply', 'push');

const user = (messageId: string): Message => ({ messageId, role: 'ROLE_USER', parts: [{ text: 'book it' }] }) as Message;
const history = (holds: Holds): Message[] | undefined =>
  holds === 'none'
    ? undefined
    : [
        ...(holds === 'ours' ? [user(OURS)] : holds === 'reply' ? [user('M-first-elsewhere'), user(REPLY)] : holds === 'other' ? [user('M-someone-else')] : []),
        // An agent's own message that quotes our messageId proves nothing (`historyHolds`).
        { messageId: holds === 'agent-echo' ? OURS : 'agent-1', role: 'ROLE_AGENT', parts: [{ text: 'on it' }] } as Message,
      ];

const otherTask = (id: string, state: TaskState, holds: Holds): Task => ({ id, contextId: 'C-other', status: { state }, ...(history(holds) ? { history: history(holds)! } : {}) }) as Task;

const recordOf = (taskId: string, state: JournalState, replied: boolean): DelegationRecord =>
  ({
    workflowId: 'wf',
    delegationId: 'main.1',
    messageId: OURS,
    requestedContextId: 'C-ours',
    contextId: 'C-ours',
    taskId,
    state,
    version: 7,
    fence: 2,
    resendCount: 0,
    createdAt: 1_000_000,
    updatedAt: 4_000_000,
    notFoundCount: 0,
    noProgressCount: 0,
    protocolErrorCount: 0,
    ...(replied ? { questionKey: 'q1', replyForQuestion: 'q1', replyMessageId: REPLY, replyState: 'sending' } : {}),
  }) as unknown as DelegationRecord;

function observationOf(path: Path, task: Task, boundTaskId: string): Observation {
  const disproven = { kind: 'disproven' as const, reason: `answered ${task.id}, not ${boundTaskId}` };
  switch (path) {
    case 'get-task':
      return { kind: 'task-read', task, call: 'get-task', complete: true, ownership: disproven, why: 'slow poll', cycle: false };
    case 'get-task-cycle':
      return { kind: 'task-read', task, call: 'get-task', complete: true, ownership: disproven, why: 'stream ended', cycle: true };
    case 'parked-reread':
      return { kind: 'task-read', task, call: 'get-task', complete: true, ownership: disproven, why: 'reconcile re-read of a parked task', cycle: false };
    case 'partial-stream': {
      const heldBack = { responses: [{ statusUpdate: { taskId: boundTaskId, contextId: 'C-ours', status: { state: 'TASK_STATE_COMPLETED' } } }] as [StreamResponse], partialArtifacts: 'appended' as const };
      return { kind: 'task-read', task, call: 'get-task', complete: true, ownership: disproven, why: 'stream finished', cycle: true, heldBack };
    }
    case 'cancel-read':
      return { kind: 'task-read', task, call: 'cancel', complete: true, ownership: disproven, why: 'cancel', cycle: false };
    case 'cancel-answered':
      return { kind: 'cancel-answered', task, ownership: disproven };
    case 'reply':
      return { kind: 'reply-delivered', replyMessageId: REPLY, task, ownership: disproven };
    case 'push':
      // GetTask of the task a refused push named: it answers about the id we asked (ownership by task id), not ours.
      return { kind: 'task-read', task, call: 'push', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why: 'a refused push', cycle: false };
  }
}

const writesOf = (step: Step): Write[] => (step.write === undefined ? [] : Array.isArray(step.write) ? [...(step.write as readonly Write[])] : [step.write as Write]);

describe('property: another task holding our message, whichever path read it', () => {
  it('AMBIGUOUS naming both tasks iff its history holds a message of ours; never adopted, applied or resent; the message bounded', () => {
    const idArbitrary = fc.oneof(fc.constantFrom('T2', 'T9'), fc.string({ minLength: 1, maxLength: 3_000 }).map((text) => `T-${text}`));
    const unfinished = fc.constantFrom<JournalState>('SUBMITTED', 'WORKING', 'INPUT_REQUIRED', 'AUTH_REQUIRED');
    const taskStates = fc.constantFrom<TaskState>('TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_FAILED');
    const long = `T-${'x'.repeat(3_000)}`;
    fc.assert(
      fc.property(pathArbitrary, holdsArbitrary, idArbitrary, unfinished, taskStates, fc.boolean(), (path, holds, otherId, state, taskState, replied) => {
        const boundTaskId = 'T1';
        fc.pre(otherId !== boundTaskId);
        const record = recordOf(boundTaskId, state, replied || path === 'reply');
        const task = otherTask(otherId, taskState, holds);
        const step = transition(record, observationOf(path, task, boundTaskId), policy);
        const writes = writesOf(step);
        // A message of ours: our first message, or the reply journaled for the question (only we could have sent it).
        const ours = holds === 'ours' || (holds === 'reply' && record.replyMessageId === REPLY);
        // Never adopted, never applied: nothing of the other task is written, nothing bound, nothing resent.
        expect(writes.filter((write) => write.kind === 'snapshot' || write.kind === 'events' || write.kind === 'outcome' || write.kind === 'release-for-resend')).toEqual([]);
        expect(['resend', 'retry', 'settle']).not.toContain(step.next.kind);
        if (ours) {
          expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS', anyRow: true });
          const message = (step.next as { message: string }).message;
          expect(message).toContain(boundTaskId);
          expect(message).toContain(otherId.slice(0, 100));
          expect(message.length).toBeLessThan(1_500);
          // The reply keeps its journaled fate (sent: the agent has it); nothing else is written.
          expect(writes).toEqual(path === 'reply' ? [{ kind: 'mark-reply', replyMessageId: REPLY, replyState: 'sent', reason: '' }] : []);
          return;
        }
        expect(step.next.kind).not.toBe('needs-person');
        // The path's own rule for a task that is not ours and holds nothing of ours.
        if (path === 'push') expect(step).toEqual({ next: { kind: 'nothing' } });
        else if (path === 'get-task-cycle' || path === 'partial-stream') expect(step.next.kind).toBe('search');
        else expect(writes.map((write) => write.kind)).toContain('note-protocol-error');
      }),
      {
        numRuns: 500,
        examples: [
          // Each path with our message in the other task, and without it.
          ['get-task', 'ours', 'T2', 'WORKING', 'TASK_STATE_WORKING', false],
          ['get-task', 'other', 'T2', 'WORKING', 'TASK_STATE_WORKING', false],
          ['get-task-cycle', 'ours', 'T2', 'WORKING', 'TASK_STATE_COMPLETED', false],
          ['get-task-cycle', 'none', 'T2', 'WORKING', 'TASK_STATE_COMPLETED', false],
          ['parked-reread', 'ours', 'T2', 'INPUT_REQUIRED', 'TASK_STATE_WORKING', false],
          ['partial-stream', 'ours', 'T2', 'WORKING', 'TASK_STATE_COMPLETED', false],
          ['partial-stream', 'agent-echo', 'T2', 'WORKING', 'TASK_STATE_COMPLETED', false],
          ['cancel-read', 'ours', 'T2', 'WORKING', 'TASK_STATE_WORKING', false],
          ['cancel-answered', 'ours', 'T2', 'WORKING', 'TASK_STATE_CANCELED' as TaskState, false],
          ['cancel-answered', 'other', 'T2', 'WORKING', 'TASK_STATE_CANCELED' as TaskState, false],
          ['reply', 'ours', 'T2', 'INPUT_REQUIRED', 'TASK_STATE_WORKING', true],
          ['reply', 'reply', 'T2', 'INPUT_REQUIRED', 'TASK_STATE_WORKING', true],
          ['reply', 'agent-echo', 'T2', 'INPUT_REQUIRED', 'TASK_STATE_WORKING', true],
          ['push', 'ours', 'T2', 'WORKING', 'TASK_STATE_WORKING', false],
          ['push', 'reply', 'T2', 'WORKING', 'TASK_STATE_WORKING', false],
          ['push', 'reply', 'T2', 'WORKING', 'TASK_STATE_WORKING', true],
          ['push', 'other', 'T2', 'WORKING', 'TASK_STATE_WORKING', false],
          // A hostile id: the message names it clipped.
          ['get-task', 'ours', long, 'WORKING', 'TASK_STATE_WORKING', false],
          ['push', 'ours', long, 'WORKING', 'TASK_STATE_WORKING', false],
        ],
      },
    );
  });

  it('our message only in the other task\'s status message counts as its history does (attack22: the push route counted it, the reader did not)', () => {
    const statusOf = (holds: Holds): Message | undefined =>
      holds === 'ours' ? user(OURS) : holds === 'reply' ? user(REPLY) : holds === 'other' ? user('M-someone-else') : holds === 'agent-echo' ? ({ messageId: OURS, role: 'ROLE_AGENT', parts: [{ text: 'on it' }] } as Message) : undefined;
    fc.assert(
      fc.property(pathArbitrary, holdsArbitrary, fc.boolean(), (path, holds, replied) => {
        const record = recordOf('T1', 'WORKING', replied || path === 'reply');
        const message = statusOf(holds);
        const task = { id: 'T2', contextId: 'C-other', status: { state: 'TASK_STATE_INPUT_REQUIRED', ...(message ? { message } : {}) } } as Task;
        const step = transition(record, observationOf(path, task, 'T1'), policy);
        const ours = holds === 'ours' || (holds === 'reply' && record.replyMessageId === REPLY);
        if (ours) expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS', anyRow: true });
        else expect(step.next.kind).not.toBe('needs-person');
      }),
      { numRuns: 200, examples: [['get-task', 'ours', false], ['push', 'ours', false], ['reply', 'reply', true], ['cancel-answered', 'agent-echo', false], ['get-task', 'none', false]] },
    );
  });

  it('a read of our own task (or, unbound, of a found one) is not this kind: the other-task rule never fires on the task we bound', () => {
    fc.assert(
      fc.property(holdsArbitrary, fc.constantFrom<Path>('get-task', 'get-task-cycle', 'parked-reread', 'cancel-read', 'reply'), (holds, path) => {
        const record = recordOf('T1', 'WORKING', path === 'reply');
        const own = { ...otherTask('T1', 'TASK_STATE_WORKING', holds), contextId: 'C-ours' };
        const observation = observationOf(path, own, 'T1');
        const proven = observation.kind === 'task-read' || observation.kind === 'reply-delivered' ? { ...observation, ownership: { kind: 'proven' as const, by: 'task-id' as const } } : observation;
        const step = transition(record, proven, policy);
        expect(step.next.kind === 'needs-person' && step.next.code === 'AMBIGUOUS').toBe(false);
      }),
    );
  });
  it('the read of a pushed suspect on a row not yet bound waits until it may be bound: while the send may be in flight, then on a grid after the run decides (review21: a held send, or a resend after a search that listed nothing, dropped it)', () => {
    fc.assert(
      fc.property(fc.option(fc.integer({ min: 0, max: 10_000_000 }), { nil: undefined }), fc.nat(3), fc.integer({ min: 0, max: 10_000_000 }), fc.integer({ min: -5, max: 600_000 }), fc.integer({ min: 0, max: 120_000 }), (sendStartedAt, resendCount, now, heldMs, sendSettleMs) => {
        const at = suspectReadAt({ sendStartedAt, resendCount }, heldMs, { now: () => now, sendSettleMs });
        if (sendStartedAt === undefined && resendCount === 0) {
          // Never sent: the agent cannot hold our message; nothing to read.
          expect(at).toBeUndefined();
          return;
        }
        expect(at).toBeDefined();
        expect(at!).toBeGreaterThan(now);
        if (sendStartedAt !== undefined) expect(at!).toBeGreaterThanOrEqual(sendStartedAt + sendSettleMs);
        expect(at!).toBeGreaterThanOrEqual(now + heldMs);
        const inFlight = (sendStartedAt !== undefined && now < sendStartedAt + sendSettleMs) || heldMs > 0;
        if (!inFlight) {
          // After the run's decision: on the grid (every suspect of the row meets in one job), within one grid step.
          const grid = Math.max(1_000, sendSettleMs);
          expect(at! % grid).toBe(0);
          expect(at!).toBeLessThanOrEqual(now + grid);
        }
      }),
      {
        numRuns: 500,
        examples: [
          [undefined, 0, 5_000, 1_000, 3_000],
          // Released for a resend (no mark yet): read after the run decides.
          [undefined, 1, 5_000, 0, 3_000],
          // Before the settle time, no lease: at the settle time.
          [4_000, 0, 5_000, 0, 3_000],
          // Past the settle time, the agent holding our send (the lease held): after the lease.
          [1_000, 0, 5_000, 2_000, 3_000],
          // Past the settle time, no lease: after this run's decision, on the grid.
          [1_000, 0, 5_000, 0, 3_000],
          [1_000, 0, 5_000, 0, 0],
        ],
      },
    );
  });

  it('every suspect pushed within one second is read by that second\'s one job: AMBIGUOUS iff at least one truly holds our message (a decoy first hides none), at most SUSPECTS_PENDING_MAX GetTask calls (review: only the first suspect of the second was read)', async () => {
    let run = 0;
    // A push names one of these tasks; `T1` is ours (pushed before our task was bound: never read, cleared).
    const pool = ['T1', ...Array.from({ length: SUSPECTS_PENDING_MAX + 3 }, (_, n) => `S${n}`)];
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...pool), { minLength: 1, maxLength: 16 }), fc.subarray(pool), async (pushes, holders) => {
        // A fresh row: the job of this second is the first to read its suspects.
        const journal = new Journal(redis(), { prefix: `fhp${++run}`, retentionMs: 60_000 });
        const ref = { workflowId: `wf${run}`, delegationId: 'main.1' };
        await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId));
        // The push route: each suspect kept in the journal (the real script); the second's one job names the first.
        for (const taskId of pushes) await journal.noteSuspect(ref, taskId);
        // The job: what it reads, the agent's answer to each GetTask through the task-read row (call `push`).
        const record = recordOf('T1', 'WORKING', false);
        const { read: suspects, ours } = suspectsToRead(await journal.pendingSuspects(ref), pushes[0], 'T1', SUSPECTS_PENDING_MAX);
        let getTasks = 0;
        const { outcome, read } = await readUntilDecided(suspects, async (taskId) => {
          getTasks += 1;
          const step = transition(record, observationOf('push', otherTask(taskId, 'TASK_STATE_WORKING', holders.includes(taskId) ? 'ours' : 'other'), 'T1'), policy);
          if (step.next.kind === 'needs-person') {
            expect(step.next).toMatchObject({ code: 'AMBIGUOUS' });
            return 'several-holders';
          }
          expect(step).toEqual({ next: { kind: 'nothing' } });
          return 'suspect-not-holding';
        });
        await journal.clearSuspects(ref, [...ours, ...read]);
        const distinct = [...new Set(pushes)].filter((taskId) => taskId !== 'T1');
        // Kept: the oldest SUSPECTS_PENDING_MAX distinct ids (T1 among them when pushed before the cap was reached).
        const kept = [...new Set(pushes)].slice(0, SUSPECTS_PENDING_MAX).filter((taskId) => taskId !== 'T1');
        expect(getTasks).toBeLessThanOrEqual(SUSPECTS_PENDING_MAX);
        expect(read).not.toContain('T1');
        expect(outcome === 'several-holders').toBe(kept.some((taskId) => holders.includes(taskId)));
        // Within the cap nothing is dropped: AMBIGUOUS iff any pushed suspect truly holds our message.
        if (new Set(pushes).size <= SUSPECTS_PENDING_MAX) {
          expect(outcome === 'several-holders').toBe(distinct.some((taskId) => holders.includes(taskId)));
          if (outcome !== 'several-holders') expect(await journal.pendingSuspects(ref)).toEqual([]);
        }
      }),
      {
        numRuns: 150,
        examples: [
          // The review's case: a decoy first, then the task that holds our message, in one second.
          [['S0', 'S1'], ['S1']],
          // The honest agent: two tasks pushed in one second before ours was bound, ours among them.
          [['T1', 'S1'], ['S1']],
          [['S0', 'S0', 'S1', 'S0'], ['S1']],
          // None holds; every id of a second within the cap read once.
          [['S0', 'S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7'], []],
          // Past the cap: the oldest kept and read, at most the cap of GetTask calls.
          [['S0', 'S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8', 'S9'], ['S9']],
          [['S0', 'S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8', 'S9'], ['S7']],
        ],
      },
    );
  }, 120_000);
});
