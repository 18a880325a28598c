/**
 * Property (attack 23, a fact in a Message answer not read): for any direct Message answering our send, on the
 * SendMessage answer and on a send stream's first event (`answerObservation` → `messageAnswerProof` → the
 * `send-answered` row), whatever its role, context and taskId and whatever context and task the row holds:
 *   - COMPLETED is written only from a plain reply shown ours: the agent's role, our context (or none to compare),
 *     no taskId; its context journaled only then;
 *   - a Message naming a task of ours never settles: the row is bound to that task, unfinished, and routed (the
 *     follow reads it), so the named task is always read before anything completes;
 *   - anything else is not ours: delivery received (FOREIGN_TASK noted, the answer unreadable) and the reconciler
 *     searches: no outcome, no binding, no resend.
 * And for a Message naming a task (T9), whatever T9 is (ours by context, ours by history, another client's: attack 24)
 * and whatever the reads of T9 that follow show (a full read by GetTask or a stream's Task, a status update event, not
 * found, failing; any shape, SUBMITTED without a timestamp included), the row as journaled after each (a model of
 * applyStatus-5.lua's forward-only status and its `namedTaskUnread` flag): the Message is never dropped for LOST (T9
 * denied all through the window, never shown: COMPLETED with it), never the result once T9 was shown (then only T9's
 * reads and the not-found window decide), kept on the row while the reads fail; a T9 not shown ours is never applied
 * (FOREIGN_TASK, a person), so never COMPLETED with its result; a status update event settles nothing before a full read.
 * The end-to-end cases are in test/send/attacks-23.test.ts and test/send/message-answer.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message, Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import { isFinished, journalStateOf } from '@durable-a2a/shared/pure';
import type { Observation } from '../src/delegation/core/observation.ts';
import type { Policy } from '../src/delegation/core/policy.ts';
import { transition, unreadNamedTask, type Write } from '../src/delegation/core/transitions.ts';
import { answerObservation } from '../src/delegation/runs/send.ts';
import { stepRow } from './step-row.ts';

const policy = { now: () => 5_000_000, random: () => 0.5, sendAttempts: 3, sendSettleMs: 31_000, notFoundThreshold: 3, notFoundWindowMs: 0, reconcileIntervalMs: 1_000 } as unknown as Policy;

type Role = 'ROLE_AGENT' | 'ROLE_USER';
type Context = 'ours' | 'other' | 'empty' | 'absent';
type Named = 'absent' | 'empty' | 'new' | 'held' | 'other';

interface Case {
  role: Role;
  context: Context;
  named: Named;
  /** The row already holds task T-held (a resend after a task was bound): else none. */
  rowHoldsTask: boolean;
  /** We sent a context (C-ours), or left it to the agent; `refused`: the agent refused ours before (sent without). */
  asked: 'sent' | 'none' | 'refused';
  via: 'answer' | 'stream';
}

const caseArbitrary: fc.Arbitrary<Case> = fc.record({
  role: fc.constantFrom<Role>('ROLE_AGENT', 'ROLE_USER'),
  context: fc.constantFrom<Context>('ours', 'other', 'empty', 'absent'),
  named: fc.constantFrom<Named>('absent', 'empty', 'new', 'held', 'other'),
  rowHoldsTask: fc.boolean(),
  asked: fc.constantFrom<Case['asked']>('sent', 'none', 'refused'),
  via: fc.constantFrom<Case['via']>('answer', 'stream'),
});

const recordOf = (c: Case): DelegationRecord => {
  const { requestedContextId: _sent, ...row } = stepRow({ contextRefused: c.asked === 'refused', ...(c.rowHoldsTask ? { taskId: 'T-held' } : {}) });
  return (c.asked === 'none' ? row : { ...row, requestedContextId: 'C-ours' }) as DelegationRecord;
};

const taskIdOf = (named: Named): string | undefined => ({ absent: undefined, empty: '', new: 'T9', held: 'T-held', other: 'T-other' })[named];
const contextOf = (context: Context): string | undefined => ({ ours: 'C-ours', other: 'C-someone-else', empty: '', absent: undefined })[context];

const messageOf = (c: Case): Message => {
  const taskId = taskIdOf(c.named);
  const contextId = contextOf(c.context);
  return { messageId: 'agent-1', role: c.role, parts: [{ text: 'working on it' }], ...(taskId !== undefined ? { taskId } : {}), ...(contextId !== undefined ? { contextId } : {}) } as Message;
};

const writesOf = (write: Write | readonly [Write, Write] | undefined): Write[] => (write === undefined ? [] : Array.isArray(write) ? [...write] : [write as Write]);

describe('a direct Message answer: completed only from a plain reply shown ours; a named task read first', () => {
  it('holds for every role, context, taskId and row, on the SendMessage answer and the send stream', () => {
    fc.assert(
      fc.property(caseArbitrary, (c) => {
        const record = recordOf(c);
        const message = messageOf(c);
        const step = transition(record, answerObservation(record, { message }, c.via), policy);
        const writes = writesOf(step.write);
        const askedContext = c.asked === 'sent' ? 'C-ours' : undefined;
        const contextId = contextOf(c.context) || undefined;
        const taskId = taskIdOf(c.named) || undefined;
        const foreignContext = contextId !== undefined && askedContext !== undefined && contextId !== askedContext;
        const foreignTask = taskId !== undefined && c.rowHoldsTask && taskId !== 'T-held';
        const shownOurs = c.role === 'ROLE_AGENT' && !foreignContext && !foreignTask;

        const completed = writes.some((write) => write.kind === 'outcome' && write.state === 'COMPLETED');
        expect(completed).toBe(shownOurs && taskId === undefined);
        for (const write of writes) {
          // No outcome of any kind from a Message but the plain reply's COMPLETED; never a foreign context journaled.
          if (write.kind === 'outcome') expect(write.state).toBe('COMPLETED');
          if (write.kind === 'outcome' && write.contextId !== undefined) expect(foreignContext).toBe(false);
          expect(write.kind).not.toBe('release-for-resend');
        }
        if (!shownOurs) {
          expect(step).toEqual({ write: { kind: 'note-send-error', error: expect.objectContaining({ code: 'FOREIGN_TASK', delivery: 'received', answer: 'unreadable' }) }, next: { kind: 'ask-reconciler' } });
        } else if (taskId !== undefined) {
          // The named task: bound (unless the row already holds it) as not yet read, and routed for the follow to read.
          expect(step.next).toEqual({ kind: 'route', plan: { again: false } });
          if (taskId === record.taskId) expect(writes).toEqual([]);
          else expect(writes).toEqual([{ kind: 'snapshot', task: expect.objectContaining({ id: taskId, status: { state: 'TASK_STATE_SUBMITTED', message } }), guard: 'none', bindAgent: true, namedTaskUnread: true }]);
        }
      }),
      {
        numRuns: 400,
        examples: [
          // The two findings: a Message naming T9 in our context; one in another context naming another task.
          [{ role: 'ROLE_AGENT', context: 'ours', named: 'new', rowHoldsTask: false, asked: 'sent', via: 'answer' }],
          [{ role: 'ROLE_AGENT', context: 'other', named: 'other', rowHoldsTask: false, asked: 'sent', via: 'answer' }],
          // The plain reply, kept: our context, or none sent, no taskId.
          [{ role: 'ROLE_AGENT', context: 'ours', named: 'absent', rowHoldsTask: false, asked: 'sent', via: 'answer' }],
          [{ role: 'ROLE_AGENT', context: 'other', named: 'absent', rowHoldsTask: false, asked: 'none', via: 'answer' }],
          // An echo of ours (role user), on the stream; a Message about another task than the one we hold.
          [{ role: 'ROLE_USER', context: 'ours', named: 'absent', rowHoldsTask: false, asked: 'sent', via: 'stream' }],
          [{ role: 'ROLE_AGENT', context: 'ours', named: 'other', rowHoldsTask: true, asked: 'sent', via: 'stream' }],
          [{ role: 'ROLE_AGENT', context: 'empty', named: 'held', rowHoldsTask: true, asked: 'refused', via: 'answer' }],
        ],
      },
    );
  });
});

/** One later read of the named task T9 (whichever call: the follow's SubscribeToTask, a GetTask, the reconciler's). */
type Read =
  | { kind: 'found'; state: 'SUBMITTED' | 'WORKING' | 'INPUT_REQUIRED' | 'COMPLETED'; timestamp: boolean; statusMessage: 'none' | 'own' | 'the-answer'; via: 'get-task' | 'stream-task' | 'list-tasks' }
  | { kind: 'status-event'; state: 'WORKING' | 'COMPLETED' }
  | { kind: 'not-found'; call: 'get-task' | 'subscribe' }
  | { kind: 'failing'; call: 'get-task' | 'subscribe'; cycle: boolean };

const readArbitrary: fc.Arbitrary<Read> = fc.oneof(
  fc.record({
    kind: fc.constant('found' as const),
    state: fc.constantFrom('SUBMITTED' as const, 'WORKING' as const, 'INPUT_REQUIRED' as const, 'COMPLETED' as const),
    timestamp: fc.boolean(),
    statusMessage: fc.constantFrom('none' as const, 'own' as const, 'the-answer' as const),
    via: fc.constantFrom('get-task' as const, 'stream-task' as const, 'list-tasks' as const),
  }),
  fc.record({ kind: fc.constant('status-event' as const), state: fc.constantFrom('WORKING' as const, 'COMPLETED' as const) }),
  fc.record({ kind: fc.constant('not-found' as const), call: fc.constantFrom('get-task' as const, 'subscribe' as const) }),
  fc.record({ kind: fc.constant('failing' as const), call: fc.constantFrom('get-task' as const, 'subscribe' as const), cycle: fc.boolean() }),
);

/** Whose task T9 is: ours by the context we sent, ours by our message in its history, or another client's. */
type Owner = 'context' | 'history' | 'foreign';

/** applyStatus-5.lua's forward-only order (shared journal/states.ts JOURNAL_STATE_RANK). */
const rankOf = (state: DelegationRecord['state']): number => (isFinished(state) ? 9 : state === 'INTENT' ? 0 : state === 'SUBMITTED' ? 1 : 2);

/**
 * The row as applyStatus-5.lua leaves it after a status (`snapshot`, a stream's Task or status update) or our outcome
 * (forward only, finished kept); `namedTaskUnread` set by the named task's placeholder, cleared by any agent status.
 */
function journaled(row: DelegationRecord, write: Write): DelegationRecord {
  if (isFinished(row.state)) return row;
  if (write.kind === 'outcome') return { ...row, state: write.state, ...(write.result !== undefined ? { result: write.result } : {}), version: row.version + 1 };
  if (write.kind === 'note-not-found') return { ...row, notFoundCount: row.notFoundCount + 1 };
  if (write.kind === 'note-protocol-error') return row;
  if (write.kind === 'events') {
    const [event] = write.responses;
    if ('task' in event) return journaled(row, { kind: 'snapshot', task: event.task, guard: 'fence' });
    if (!('statusUpdate' in event)) throw new Error('unexpected event');
    return journaled(row, { kind: 'snapshot', task: { id: event.statusUpdate.taskId, contextId: event.statusUpdate.contextId, status: event.statusUpdate.status }, guard: 'fence' });
  }
  if (write.kind !== 'snapshot') throw new Error(`unexpected write ${write.kind}`);
  const { status, id } = write.task;
  const state = journalStateOf(status.state);
  if (rankOf(state) < rankOf(row.state)) return row;
  const { statusTimestamp: _t, statusMessage: _m, ...rest } = row;
  const timestamp = status.timestamp ?? (rankOf(state) === rankOf(row.state) ? row.statusTimestamp : undefined);
  const namedTaskUnread = write.namedTaskUnread === true;
  return { ...rest, state, taskId: row.taskId ?? id, notFoundCount: 0, version: row.version + 1, namedTaskUnread, ...(timestamp ? { statusTimestamp: timestamp } : {}), ...(status.message ? { statusMessage: status.message } : {}) } as DelegationRecord;
}

describe('a Message naming a task, whatever the reads of that task show', () => {
  it('never LOST with the Message dropped, never COMPLETED from it once the task was shown, never with a foreign task\'s result, kept while reads fail', () => {
    const owners = fc.constantFrom<Owner>('context', 'history', 'foreign');
    fc.assert(
      fc.property(fc.constantFrom<Case['via']>('answer', 'stream'), fc.constantFrom<Case['asked']>('sent', 'none'), owners, fc.array(readArbitrary, { minLength: 1, maxLength: 6 }), (via, asked, owner, reads) => {
        const c: Case = { role: 'ROLE_AGENT', context: asked === 'sent' ? 'ours' : 'absent', named: 'new', rowHoldsTask: false, asked, via };
        // Shown ours only in the context we sent or by our message in its history (as a Task answer in another context, R16).
        const ours = owner === 'history' || (owner === 'context' && asked === 'sent');
        const message = messageOf(c);
        let row = { ...recordOf(c), notFoundCount: 0 } as DelegationRecord;
        const sent = transition(row, answerObservation(row, { message }, via), policy);
        for (const write of writesOf(sent.write)) row = journaled(row, write);
        // The row holds the Message with the task it named (another process reads it from the journal alone).
        expect(row).toMatchObject({ state: 'SUBMITTED', taskId: 'T9' });
        expect(row.namedTaskUnread).toBe(true);
        expect(unreadNamedTask(row)).toEqual(message);

        let found = false;
        let lostCheck = false;
        let disproven = false;
        for (const read of reads) {
          if (isFinished(row.state) || lostCheck || disproven) break;
          const result = owner === 'foreign' ? 'their booking' : 'booked';
          const t9: Task = {
            id: 'T9',
            contextId: owner === 'foreign' ? 'C-someone-else' : 'C-ours',
            status: {
              state: `TASK_STATE_${read.kind === 'found' ? read.state : 'WORKING'}`,
              ...(read.kind === 'found' && read.timestamp ? { timestamp: '2026-12-06T14:00:00Z' } : {}),
              ...(read.kind === 'found' && read.statusMessage === 'own' ? { message: { messageId: 'status-1', role: 'ROLE_AGENT', parts: [{ text: 'queued' }], taskId: 'T9' } as Message } : {}),
              ...(read.kind === 'found' && read.statusMessage === 'the-answer' ? { message } : {}),
            },
            history: [{ messageId: owner === 'history' ? 'M-ours' : 'someone-else', role: 'ROLE_USER', parts: [{ text: 'book' }] } as Message],
            ...(read.kind === 'found' && read.state === 'COMPLETED' ? { artifacts: [{ artifactId: 'a1', parts: [{ text: result }] }] } : {}),
          } as Task;
          const observation: Observation =
            read.kind === 'found' && read.via === 'get-task'
              ? { kind: 'task-read', task: t9, call: 'get-task', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why: 'follow', cycle: true }
              : read.kind === 'found' && read.via === 'list-tasks'
                ? { kind: 'search-result', purpose: 'read', finding: { kind: 'found', task: t9, complete: true, ownership: { kind: 'proven', by: 'task-id' } }, deduplicates: false, why: 'GetTask unusable' }
              : read.kind === 'found'
                ? { kind: 'stream-event', responses: [{ task: t9 }] }
              : read.kind === 'status-event'
                ? { kind: 'stream-event', responses: [{ statusUpdate: { taskId: 'T9', contextId: t9.contextId!, status: { state: `TASK_STATE_${read.state}`, timestamp: '2026-12-06T14:00:00Z' } } }] }
              : read.kind === 'not-found'
                ? { kind: 'task-not-found', call: read.call }
                : { kind: 'read-failed', call: read.call, code: 'UPSTREAM_ERROR', retryable: true, why: 'follow', cycle: read.cycle };
          const step = transition(row, observation, policy);
          const writes = writesOf(step.write);
          const fromMessage = writes.some((write) => write.kind === 'outcome' && JSON.stringify(write.result ?? null).includes('working on it'));
          // Never a foreign task's result written, whatever the read.
          expect(JSON.stringify(writes)).not.toContain('their booking');
          if (read.kind === 'found' && !found && !ours) {
            // The first full read of T9 shows it another client's: nothing of it applied; FOREIGN_TASK noted, a person.
            expect(writes).toEqual([{ kind: 'note-protocol-error', error: expect.objectContaining({ code: 'FOREIGN_TASK', delivery: 'received' }) }]);
            expect(step.next).toMatchObject({ kind: 'needs-person', delivery: 'received' });
            disproven = true;
          }
          if (read.kind === 'status-event' && !found) {
            // An event proves no ownership: nothing applied before a full read, which it asks for.
            expect(writes).toEqual([]);
            expect(step.next.kind).toBe('read-once');
          }
          if (found) expect(writes.some((write) => write.kind === 'outcome' && write.state === 'COMPLETED')).toBe(false);
          if (read.kind === 'not-found' && !found && row.notFoundCount + 1 < policy.notFoundThreshold) {
            // Within the not-found window (a task store may lag behind the agent's answer): counted, asked again later.
            expect(writes).toEqual([{ kind: 'note-not-found' }]);
            expect(step.next.kind).toBe('check-later');
          } else if (read.kind === 'not-found' && !found) {
            // T9 denied all through the window, never read: the Message was the whole answer, compare-and-set.
            expect(writes).toEqual([{ kind: 'outcome', state: 'COMPLETED', guard: 'version', result: { message }, ...(message.contextId ? { contextId: message.contextId } : {}) }]);
          } else {
            // T9 read to exist (or not answered yet): never COMPLETED from the Message.
            expect(fromMessage).toBe(false);
          }
          if (read.kind === 'failing') {
            // A failing read keeps following: no outcome, the Message kept on the row as it was.
            expect(writes.some((write) => write.kind === 'outcome')).toBe(false);
            if (!found) expect(unreadNamedTask(row)).toEqual(message);
          }
          if (step.next.kind === 'search' && step.next.purpose === 'lost-check') {
            // The road to LOST opens only for a task read to exist, never over the Message.
            expect(found).toBe(true);
            lostCheck = true;
          }
          if (read.kind === 'found' && ours) found = true;
          for (const write of writes) row = journaled(row, write);
          if (found || read.kind === 'status-event') expect(row.namedTaskUnread).toBe(!found);
          if (found) expect(unreadNamedTask(row)).toBeUndefined();
          if (!found) expect(row.namedTaskUnread).toBe(true);
        }
        if (row.state === 'COMPLETED' && !found) expect(row.result).toEqual({ message });
        if (found) expect(JSON.stringify(row.result ?? null)).not.toContain('working on it');
        if (disproven) expect(row.state).toBe('SUBMITTED');
      }),
      {
        numRuns: 400,
        examples: [
          // The SDK executor: SubscribeToTask (or GetTask) answers TaskNotFound all through the window.
          ['answer', 'sent', 'context', [{ kind: 'not-found', call: 'subscribe' }, { kind: 'not-found', call: 'get-task' }, { kind: 'not-found', call: 'get-task' }]],
          ['answer', 'none', 'history', [{ kind: 'not-found', call: 'get-task' }, { kind: 'not-found', call: 'get-task' }, { kind: 'not-found', call: 'subscribe' }]],
          // A task store that lags: denied once, then T9 read WORKING and COMPLETED: never completed from the Message.
          ['answer', 'sent', 'context', [{ kind: 'not-found', call: 'subscribe' }, { kind: 'found', state: 'WORKING', timestamp: true, statusMessage: 'none', via: 'get-task' }, { kind: 'found', state: 'COMPLETED', timestamp: true, statusMessage: 'none', via: 'stream-task' }]],
          ['stream', 'sent', 'history', [{ kind: 'failing', call: 'subscribe', cycle: true }, { kind: 'failing', call: 'get-task', cycle: false }, { kind: 'not-found', call: 'get-task' }]],
          // T9 WORKING, then COMPLETED with a1; and T9 read, then denied (the window decides).
          ['answer', 'sent', 'context', [{ kind: 'found', state: 'WORKING', timestamp: true, statusMessage: 'the-answer', via: 'get-task' }, { kind: 'found', state: 'COMPLETED', timestamp: true, statusMessage: 'none', via: 'get-task' }]],
          ['answer', 'sent', 'history', [{ kind: 'found', state: 'SUBMITTED', timestamp: true, statusMessage: 'own', via: 'get-task' }, { kind: 'not-found', call: 'get-task' }, { kind: 'not-found', call: 'subscribe' }, { kind: 'not-found', call: 'get-task' }]],
          // Attack 24: T9 shown SUBMITTED, no timestamp, its own status message naming it (once the shape the Message
          // left), then denied all through the window: shown, so never COMPLETED from a message (by GetTask and by a stream's Task).
          ['answer', 'sent', 'context', [{ kind: 'found', state: 'SUBMITTED', timestamp: false, statusMessage: 'own', via: 'stream-task' }, { kind: 'not-found', call: 'get-task' }, { kind: 'not-found', call: 'get-task' }, { kind: 'not-found', call: 'get-task' }]],
          ['answer', 'sent', 'history', [{ kind: 'found', state: 'SUBMITTED', timestamp: false, statusMessage: 'the-answer', via: 'get-task' }, { kind: 'not-found', call: 'subscribe' }, { kind: 'not-found', call: 'get-task' }, { kind: 'not-found', call: 'get-task' }]],
          // Attack 24: T9 another client's, COMPLETED with their booking (GetTask; a stream's Task); ours only by a context we never sent.
          ['answer', 'sent', 'foreign', [{ kind: 'found', state: 'COMPLETED', timestamp: true, statusMessage: 'none', via: 'get-task' }]],
          ['stream', 'sent', 'foreign', [{ kind: 'found', state: 'COMPLETED', timestamp: true, statusMessage: 'none', via: 'stream-task' }]],
          ['answer', 'sent', 'foreign', [{ kind: 'found', state: 'COMPLETED', timestamp: true, statusMessage: 'none', via: 'list-tasks' }]],
          ['answer', 'none', 'context', [{ kind: 'found', state: 'COMPLETED', timestamp: true, statusMessage: 'none', via: 'get-task' }]],
          // A status update event before any full read (it proves no ownership): nothing applied, one read instead.
          ['stream', 'sent', 'foreign', [{ kind: 'status-event', state: 'COMPLETED' }, { kind: 'found', state: 'COMPLETED', timestamp: true, statusMessage: 'none', via: 'get-task' }]],
          ['answer', 'sent', 'context', [{ kind: 'status-event', state: 'WORKING' }, { kind: 'found', state: 'WORKING', timestamp: true, statusMessage: 'none', via: 'get-task' }, { kind: 'status-event', state: 'COMPLETED' }]],
          // Reads that only fail: the Message stays on the row.
          ['stream', 'none', 'history', [{ kind: 'failing', call: 'get-task', cycle: false }, { kind: 'failing', call: 'subscribe', cycle: true }]],
        ],
      },
    );
  });
});
