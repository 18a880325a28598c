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
import { Journal, SUSPECTS_PENDING_MAX, SUSPECT_READS_PER_JOB, SUSPECT_TASK_ID_MAX, DEFAULT_JOB_OPTIONS } from '@durable-a2a/shared';
import { afterSuspectReads, suspectReadAt, suspectRound, suspectsToRead, type SuspectRead } from '../src/delegation/core/policy.ts';
import { readUntilDecided } from '../src/delegation/runs/suspect-reads.ts';
import { useRedisClient, useRedisServer } from '../../../test/harness/redis.ts';
import { intentRow } from '../../../test/harness/journal-rows.ts';
import { transition, type Step, type Write } from '../src/delegation/core/transitions.ts';
import { OURS, REPLY, holderPolicy } from './step-row.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);


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
        const step = transition(record, observationOf(path, task, boundTaskId), holderPolicy);
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
        const step = transition(record, observationOf(path, task, 'T1'), holderPolicy);
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
        const step = transition(record, proven, holderPolicy);
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

  it('any push sequence against the real scripts (decoys, holders, ids too long to keep, more than the journal keeps, reads that fail): a holder the agent really has is never dropped (the row ends AMBIGUOUS for a person); without a holder and with no evidence lost it never does; each job reads at most SUSPECT_READS_PER_JOB (attack22: a 9th suspect over the cap, a 1,025-character id and a failed read were dropped unread)', async () => {
    let run = 0;
    const long = ['L'.repeat(SUSPECT_TASK_ID_MAX + 1), 'M'.repeat(2 * SUSPECT_TASK_ID_MAX)];
    // `T1` is ours (pushed before our task was bound: never read, cleared); more ids than the journal keeps.
    const pool = ['T1', ...Array.from({ length: SUSPECTS_PENDING_MAX + 8 }, (_, n) => `S${n}`), ...long];
    type Event = { push: string } | { job: true };
    type ReadFault = 'ok' | 'retryable' | 'permanent';
    const events = fc.array(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...pool).map((id): Event => ({ push: id })) }, { weight: 1, arbitrary: fc.constant<Event>({ job: true }) }), { minLength: 1, maxLength: 60 });
    const faults = fc.array(fc.constantFrom<ReadFault>('ok', 'ok', 'retryable', 'permanent'), { maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(events, fc.subarray(pool), faults, async (script, holders, readFaults) => {
        const journal = new Journal(redis(), { prefix: `fhq${++run}`, retentionMs: 60_000 });
        const ref = { workflowId: `wf${run}`, delegationId: 'main.1' };
        await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId));
        const record = recordOf('T1', 'WORKING', false);
        const pendingFaults = [...readFaults];
        let person: Step | undefined;
        // One reconcile job (runs/reconcile.ts `reconcileSuspects`): read up to SUSPECT_READS_PER_JOB pending suspects
        // through the task-read row, end the round in the journal, then what is left decides.
        const job = async (): Promise<'again' | 'done'> => {
          const { read: toRead, ours } = suspectsToRead(await journal.pendingSuspects(ref), undefined, 'T1', SUSPECT_READS_PER_JOB);
          let left = { pending: 0, lost: (await journal.getDelegation(ref))!.suspectsLost, rounds: 0 };
          if (toRead.length > 0) {
            const reads = new Map<string, SuspectRead>();
            const done = await readUntilDecided(
              toRead,
              async (taskId) => {
                const fault = pendingFaults.shift() ?? 'ok';
                if (fault === 'retryable') return 'suspect-unread';
                if (fault === 'permanent') return 'suspect-unreadable';
                const step = transition(record, observationOf('push', otherTask(taskId, 'TASK_STATE_WORKING', holders.includes(taskId) ? 'ours' : 'other'), 'T1'), holderPolicy);
                if (step.next.kind !== 'needs-person') return 'suspect-not-holding';
                person = step;
                return 'several-holders';
              },
              reads,
            );
            expect(reads.size).toBeLessThanOrEqual(SUSPECT_READS_PER_JOB);
            left = await journal.clearSuspects(ref, suspectRound(reads, ours), DEFAULT_JOB_OPTIONS.reconcile.attempts);
            if (done.decided) return 'done';
          } else if (ours.length > 0) left = await journal.clearSuspects(ref, { read: ours });
          const after = afterSuspectReads(left, 1_000, 1_000);
          if (after.kind === 'person') {
            person = transition(record, { kind: 'suspects-unread', lost: after.lost, pending: await journal.pendingSuspects(ref) }, holderPolicy);
            return 'done';
          }
          return after.kind === 'read-again' ? 'again' : 'done';
        };
        for (const event of script) {
          if (person) break;
          if ('push' in event) await journal.noteSuspect(ref, event.push);
          else await job();
          expect((await journal.pendingSuspects(ref)).length).toBeLessThanOrEqual(SUSPECTS_PENDING_MAX);
        }
        // The jobs the last pushes woke, and their successors, until nothing is left (bounded: every job reads or counts).
        for (let jobs = 0; !person && jobs < 200; jobs++) if ((await job()) === 'done' && (await journal.pendingSuspects(ref)).length === 0) break;
        const row = (await journal.getDelegation(ref))!;
        const holderPushed = script.some((event) => 'push' in event && event.push !== 'T1' && holders.includes(event.push));
        if (person) {
          expect(person.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS', anyRow: true });
          expect((person.next as { message: string }).message.length).toBeLessThan(2_000);
        } else expect(await journal.pendingSuspects(ref)).toEqual([]);
        // Never dropped: a holder pushed ends with a person, read and named or counted lost.
        if (holderPushed) expect(person).toBeDefined();
        // Evidence lost is a person; without a holder and nothing lost, never one.
        if (row.suspectsLost > 0) expect(person).toBeDefined();
        if (!holderPushed && row.suspectsLost === 0) expect(person).toBeUndefined();
      }),
      {
        numRuns: 120,
        examples: [
          // attack22: 8 decoys fill one job's reads, the holder 9th: read by the next job.
          [[...Array.from({ length: 8 }, (_, n) => ({ push: `S${n}` })), { push: 'S8' }], ['S8'], []],
          // More than the journal keeps, the holder last: counted lost, a person.
          [[...Array.from({ length: SUSPECTS_PENDING_MAX }, (_, n) => ({ push: `S${n}` })), { push: `S${SUSPECTS_PENDING_MAX}` }], [`S${SUSPECTS_PENDING_MAX}`], []],
          // An id too long to keep, holding our message: counted lost, a person.
          [[{ push: long[0]! }], [long[0]!], []],
          // The holder's read fails twice, then succeeds: read again, named.
          [[{ push: 'S0' }], ['S0'], ['retryable', 'retryable']],
          // It fails every round of the budget: counted lost, a person.
          [[{ push: 'S0' }], ['S0'], ['retryable', 'retryable', 'retryable', 'retryable']],
          // A decoy whose answer we cannot accept: counted lost, a person though none holds.
          [[{ push: 'S0' }], [], ['permanent']],
          // Ordinary traffic: decoys (more than one job reads) and our own task, none holding, reads that recover.
          [[{ push: 'T1' }, ...Array.from({ length: 12 }, (_, n) => ({ push: `S${n}` }))], [], ['retryable']],
          // A job between the pushes: the holder arrives after a round found nothing.
          [[{ push: 'S0' }, { job: true }, { push: 'S1' }], ['S1'], []],
          [[{ push: 'T1' }, { job: true }], ['T1'], []],
        ],
      },
    );
  }, 240_000);
});
